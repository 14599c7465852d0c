"""probes/text_file.py: a file read in blocks with its over-long lines left empty gives what a
whole-file reading would give, wherever the lines fall against the blocks."""

import random

import pytest

from j6doctor.probes.input_error import InputError
from j6doctor.probes.text_file import read_bytes_without_long_lines


def _whole_file_reading(data: bytes, limit: int) -> tuple[bytes, list[tuple[int, int]]]:
    """The same result from the whole file in memory: each line over the limit emptied."""
    kept, long_lines = [], []
    for number, line in enumerate(data.split(b"\n"), 1):
        if len(line) > limit:
            long_lines.append((number, len(line)))
            line = b""
        kept.append(line)
    return b"\n".join(kept), long_lines


@pytest.mark.parametrize("seed", range(4))
def test_lines_at_over_and_across_the_limit_read_as_from_the_whole_file(tmp_path, seed):
    rnd = random.Random(seed)
    path = tmp_path / "table.txt"
    for _ in range(300):
        limit = rnd.choice([1, 2, 3, 5, 8, 64])
        lengths = [0, 1, limit - 1, limit, limit + 1, 2 * limit + 3, rnd.randint(0, 4 * limit)]
        data = b"\n".join(bytes(rnd.choice(b"ab|") for _ in range(rnd.choice(lengths)))
                          for _ in range(rnd.randint(0, 12)))
        path.write_bytes(data)
        assert read_bytes_without_long_lines(path, "table.txt", "a table", 1 << 20, limit) == \
            _whole_file_reading(data, limit), (limit, data)


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "table.txt"
    path.write_bytes(b"a|b\n" * 10)
    with pytest.raises(InputError, match=r"too large \(40 bytes; limit 39\)"):
        read_bytes_without_long_lines(path, "table.txt", "a table", 39, 64)
