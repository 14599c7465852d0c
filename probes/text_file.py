"""Reading a Horizon text artifact safely: the one home of what every probe does first.

`read_bytes` / `read_head` (missing, folder, pipe or device, unreadable, too large),
`decode_text` (NUL bytes, UTF-8, BOM) and `load_text` (both, plus empty); `split_lines`
cuts the text at '\\n' and drops a '\\r' before it; `observing_reads` hands each file read
whole to an observer (discovery hashes a file from the bytes its probe read). Tables in
the text are text_tables.py's job.

Every failure is an InputError naming the file (its display name), the line where known
and what was expected.
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from j6doctor.probes.input_error import InputError

# Guards memory and time only; real fx graphs, model checks and logs of large models stay far
# below this (a 64 MiB fx graph is about 450,000 nodes and parses in under 1 GiB).
MAX_TEXT_BYTES = 64 * 1024 * 1024


# Called with (path, bytes) for every file read whole by read_bytes (artifacts.hashing_reads:
# a file a probe reads is hashed from those bytes, not read a second time).
_READ_OBSERVERS: list[Callable[[Path, bytes], None]] = []


@contextmanager
def observing_reads(observer: Callable[[Path, bytes], None]) -> Iterator[None]:
    _READ_OBSERVERS.append(observer)
    try:
        yield
    finally:
        _READ_OBSERVERS.remove(observer)


@contextmanager
def _os_errors(display: str, what: str) -> Iterator[None]:
    """Turns the OS errors of opening or reading a file into InputError naming it."""
    try:
        yield
    except FileNotFoundError:
        raise InputError(display, f"no such file; expected {what}") from None
    except IsADirectoryError:
        raise InputError(display, f"is a folder; expected {what}") from None
    except OSError as exc:
        raise InputError(display, f"cannot read: {exc.strerror or exc}; expected {what}") from None


def read_bytes(path: Path, display: str, what: str, max_bytes: int = MAX_TEXT_BYTES) -> bytes:
    """The whole file, or InputError for a missing, folder, unreadable or too large file.

    `what` names the expected artifact in messages (e.g. "model_check_result.txt").
    """
    with _os_errors(display, what):
        _require_regular(path, display, what)
        size = path.stat().st_size
        # Checked before reading, so that an oversized file is never loaded into memory.
        if size > max_bytes:
            raise InputError(display, f"too large ({size} bytes; limit {max_bytes}); expected {what}")
        raw = path.read_bytes()
    for observe in _READ_OBSERVERS:
        observe(path, raw)
    return raw


# Reading in blocks of this size keeps a line over the limit from ever being held whole.
_BLOCK = 1 << 20


def read_bytes_without_long_lines(path: Path, display: str, what: str, max_bytes: int,
                                  max_line_bytes: int) -> tuple[bytes, list[tuple[int, int]]]:
    """The file's bytes with every line longer than `max_line_bytes` left empty (its line
    break kept, so that line numbers stay the file's), and (line, length in bytes) of each
    such line. An over-long line (a 200 MB dump, a garbled field) is never held in memory,
    and later parsing never sees it. The errors of read_bytes otherwise; the bytes go to the
    read observers only when nothing was left out (they are then the file's).

    The file is first looked through in blocks, keeping nothing; the usual file, with no
    such line, is then read whole, once (keeping its blocks and joining them would hold the
    file twice and copy it twice: a tenth of reading a 300 MB table)."""
    with _os_errors(display, what):
        _require_regular(path, display, what)
        size = path.stat().st_size
        if size > max_bytes:
            raise InputError(display, f"too large ({size} bytes; limit {max_bytes}); expected {what}")
        if _lines_within(path, max_line_bytes):
            raw = path.read_bytes()
            if len(raw) == size:  # (else the file changed meanwhile: read again, line by line)
                for observe in _READ_OBSERVERS:
                    observe(path, raw)
                return raw, []
        raw, long_lines = _without_long_lines(path, max_line_bytes)
    if not long_lines:
        for observe in _READ_OBSERVERS:
            observe(path, raw)
    return raw, long_lines


def _block_size(limit: int) -> int:
    # (a block no longer than the limit holds no whole line over it: only the line it
    # continues can be, which spares splitting the usual block into its lines)
    return max(1, min(_BLOCK, limit))


def _lines_within(path: Path, limit: int) -> bool:
    """Whether no line of the file is longer than `limit` bytes, read in blocks into one
    buffer: nothing is kept."""
    buffer = bytearray(_block_size(limit))
    length = 0   # of the current line so far
    with path.open("rb", buffering=0) as file:
        while size := file.readinto(buffer):
            after = _length_after(buffer, size, length, limit)
            if after is None:
                return False
            length = after
    return True


def _length_after(block: bytes | bytearray, size: int, length: int, limit: int) -> int | None:
    """The length of the line the first `size` bytes of `block` end in, the line before them
    being `length` long; None where the block's first line runs past `limit` (a block no longer
    than the limit holds no other line over it)."""
    first = block.find(b"\n", 0, size)
    if length + (first if first >= 0 else size) > limit:
        return None
    return length + size if first < 0 else size - block.rfind(b"\n", 0, size) - 1


def _without_long_lines(path: Path, limit: int) -> tuple[bytes, list[tuple[int, int]]]:
    """The file's bytes with its lines over `limit` left empty, and (line, length) of each."""
    kept = bytearray()
    long_lines: list[tuple[int, int]] = []
    length = 0   # of the current line so far
    # the line number is needed only where a line is too long: the line breaks kept are
    # counted into `line` up to `counted` then, not in every block
    line, counted = 1, 0
    with path.open("rb") as file:
        while block := file.read(_block_size(limit)):
            after = _length_after(block, len(block), length, limit)
            if after is not None:
                kept += block   # a block with no long line is kept as it is
                length = after
                continue
            line += kept.count(b"\n", counted)
            line, length = _keep_short_lines(block, kept, long_lines, line, length, limit)
            counted = len(kept)
    if length > limit:
        long_lines.append((line + kept.count(b"\n", counted), length))
    return bytes(kept), long_lines


def _keep_short_lines(block: bytes, kept: bytearray, long_lines: list[tuple[int, int]], line: int,
                      length: int, limit: int) -> tuple[int, int]:
    """Appends a block that holds or continues an over-long line to `kept` without the parts
    of such lines; returns the line the block ends in and its length so far (`line`, `length`:
    the same when the block starts)."""
    pieces = block.split(b"\n")
    for k, piece in enumerate(pieces):
        if k:   # a line break ends the line before this piece
            if length > limit:
                long_lines.append((line, length))
            kept += b"\n"
            line, length = line + 1, 0
        if length <= limit and length + len(piece) > limit:
            del kept[len(kept) - length:]   # the start of this line, kept from earlier blocks
        length += len(piece)
        if length <= limit:
            kept += piece
    return line, length


def read_head(path: Path, display: str, what: str, count: int) -> bytes:
    """The first `count` bytes (fewer for a short file), for binary readers that stream the
    rest themselves; the same InputErrors as read_bytes except for the size limit."""
    with _os_errors(display, what):
        _require_regular(path, display, what)
        with path.open("rb") as file:
            return file.read(count)


def _require_regular(path: Path, display: str, what: str) -> None:
    """A pipe or a device (e.g. a link to /dev/zero) would block or never end; a folder is
    left to the IsADirectoryError of the read."""
    mode = path.stat().st_mode
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        raise InputError(display, f"not a regular file (a pipe or a device); expected {what}")


def decode_text(raw: bytes, display: str, what: str) -> str:
    """UTF-8 text without a leading BOM, or InputError (with its line) for NUL bytes or bytes
    that are not UTF-8. Empty input is returned as "": some formats allow an empty file."""
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise InputError(display, f"binary data (NUL byte); expected {what}", _line_at(raw, nul))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(display, f"not UTF-8 text (invalid byte 0x{raw[exc.start]:02x} at "
                                  f"offset {exc.start}); expected {what}",
                         _line_at(raw, exc.start)) from None
    return text.removeprefix("\ufeff")


# Byte-order marks, longest first (a UTF-32 LE mark starts like a UTF-16 LE one).
_BOMS = ((b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be"), (b"\xef\xbb\xbf", "utf-8"),
         (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def decode_written_text(raw: bytes, display: str, what: str) -> tuple[str, str]:
    """Text a person wrote (a case file, an evaluation table) and the encoding it was read in:
    UTF-8, UTF-16 / UTF-32 with a byte-order mark or UTF-16 without one (Windows editors
    write these), or GBK / GB18030 (Chinese Windows editors) when that reads as Chinese text.
    Anything else is refused like decode_text refuses it."""
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            try:
                return _checked(raw[len(bom):].decode(encoding), raw, display, what), encoding
            except UnicodeDecodeError as exc:
                raise InputError(display, f"not {encoding.upper()} text after its byte-order mark (invalid "
                                          f"bytes at offset {exc.start + len(bom)}); expected {what}") from None
    if b"\x00" in raw and len(raw) % 2 == 0:
        odd, even = raw[1::2].count(0), raw[0::2].count(0)
        encoding = "utf-16-le" if odd > even else "utf-16-be"
        if max(odd, even) * 2 >= len(raw) // 2:  # mostly ASCII in UTF-16: every other byte NUL
            try:
                return _checked(raw.decode(encoding), raw, display, what), encoding
            except UnicodeDecodeError:
                pass
    try:
        return decode_text(raw, display, what), "utf-8"
    except InputError as utf8_error:
        try:
            text = raw.decode("gb18030")
        except UnicodeDecodeError:
            raise utf8_error from None
        if not any("\u4e00" <= ch <= "\u9fff" for ch in text):
            raise utf8_error from None
        return _checked(text, raw, display, what), "gb18030"


def _checked(text: str, raw: bytes, display: str, what: str) -> str:
    nul = text.find("\x00")
    if nul >= 0:
        raise InputError(display, f"binary data (NUL character); expected {what}", text.count("\n", 0, nul) + 1)
    return text.removeprefix("\ufeff")


def load_text(path: Path, display: str, what: str, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """The file as text, or InputError for missing, too large, empty, binary or non-UTF-8 input."""
    text = decode_text(read_bytes(path, display, what, max_bytes), display, what)
    if not text.strip():
        raise InputError(display, f"empty file; expected {what}")
    return text


def _line_at(raw: bytes, offset: int) -> int:
    return raw.count(b"\n", 0, offset) + 1


def split_lines(text: str, drop_trailing_blank: bool = False) -> list[str]:
    """Lines without terminators; only '\\n' (and a '\\r' before it) ends a line, because
    str.splitlines would also break on form feeds or U+2028 that may sit inside a cell.
    `drop_trailing_blank`: also without the blank lines at the end (so that "the table ends
    at line N" names its last line, however many newlines the file ends with)."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if drop_trailing_blank:
        while lines and not lines[-1].strip():
            lines.pop()
    elif lines and lines[-1] == "":
        lines.pop()
    return lines
