"""Everything the product reads at run time is installed with the package (CI installs it
non-editable, from a fresh clone: a file missing from package data fails here first)."""

from __future__ import annotations

from importlib import resources

import pytest

from conftest import REPO

DATA = {
    "j6doctor.rules": "rules",
    "j6doctor.templates": "templates",
    "j6doctor.facts": "facts",
    "j6doctor.engine": "engine",
}


def _files(root):
    out = set()
    stack = [(root, "")]
    while stack:
        node, prefix = stack.pop()
        for child in node.iterdir():
            name = prefix + child.name
            if child.name == "__pycache__":
                continue
            if child.is_dir():
                stack.append((child, name + "/"))
            else:
                out.add(name)
    return out


@pytest.mark.parametrize("package,folder", sorted(DATA.items()))
def test_installed_package_has_every_file(package, folder):
    installed = _files(resources.files(package))
    in_repo = _files(REPO / folder)
    assert in_repo - installed == set()


def test_only_one_top_level_package_is_installed():
    import j6doctor
    from pathlib import Path
    package = Path(j6doctor.__file__).resolve().parent
    if package == (REPO / "app").resolve():
        pytest.skip("editable install: the package is the work tree")
    site = package.parent
    for generic in ("engine", "facts", "probes", "rules", "templates", "app"):
        assert not (site / generic).exists(), f"a top-level {generic!r} leaked into {site}"
