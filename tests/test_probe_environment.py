"""Environment: installed Horizon packages and the board type, when present."""

from __future__ import annotations

from j6doctor.probes.environment import board_from_environment, installed_versions, read_board_file


def test_board_file(tmp_path):
    path = tmp_path / ".env.board"
    path.write_text("# board\nexport BOARD_TYPE=\"RDK S100P\"\nIP=192.168.1.10\n", encoding="utf-8")
    (setting,) = read_board_file(path, ".horizon/.env.board")
    assert (setting.value, setting.origin, setting.line) == ("RDK S100P", ".horizon/.env.board", 2)


def test_board_variables():
    settings = board_from_environment({"PATH": "/bin", "BOARD_TYPE": "nash-e", "MARCH": " "})
    assert [(s.value, s.origin) for s in settings] == [("nash-e", "env:BOARD_TYPE")]


def test_versions_only_of_installed_packages():
    assert installed_versions(("pytest", "horizon-plugin-pytorch"))[0].package == "pytest"
    assert [v.package for v in installed_versions(("horizon-plugin-pytorch",))] == []
