"""CSV text made safe for the reader: compressed files, every line end, NUL bytes, and lines too
long to be a round.

A gzip- or zstd-compressed log (`night.csv.gz`, `night.csv.zst`) is read through a decompressed copy,
made in blocks by pyarrow's decompressing stream, and that copy is then treated as any CSV file.

Polars splits CSV records on LF only (a CRLF's CR is dropped), so a file whose lines end in CR alone
would be one line, and a NUL byte stops its reader. A file is read once, in blocks, before it is
opened: a file with a bare CR or a NUL is read through a copy where each line end is LF (as Python's
csv module splits lines) and each NUL is U+FFFD (a row holding it is quarantined as bytes that are
not UTF-8). A line longer than MAX_LINE stops the run naming its row: nothing in a round log is that
long, and the reader would hold it whole.
"""

from __future__ import annotations

import atexit
import csv
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from .. import stops
from ..errors import InputError, first_line

MAX_LINE = 1 << 20  # bytes: the longest line a log may hold (documented in the README)
#: How a compressed file begins, and its codec as pyarrow names it.
COMPRESSED = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd"}
COMPRESSED_SUFFIXES = (".gz", ".zst")
BLOCK = 1 << 23
REPLACED = "\ufffd".encode()


@dataclass(frozen=True)
class Text:
    """What one read of a CSV file found."""

    bare_cr: bool  # a CR not followed by LF: a line end polars does not see
    nul: bool


def survey(path: Path, header: bool = True) -> Text:
    """Read `path` once in blocks; an InputError naming the row of a line over MAX_LINE bytes (under a
    `header`, or else its line). A CR is a line end there too, as in the copy `readable` makes. Line
    ends are counted only to name the row of a line too long: a file without one is searched, not counted."""
    surveyed = _Survey(path, path, header)
    with path.open("rb") as handle:
        while block := handle.read(BLOCK):
            surveyed.see(block)
    return surveyed.end()


class _Survey:
    """What one pass over a file's blocks finds (`Text`), and a line over MAX_LINE as soon as it passes
    it: named in `named`, its row counted in `counted` (the file, or the copy being decompressed,
    written up to the block seen), as a row under a `header` (CSV) or a line (JSON Lines)."""

    def __init__(self, counted: Path, named: Path, header: bool = True) -> None:
        self.counted, self.named, self.header = counted, named, header
        self.bare_cr = self.nul = False
        self.line = 0  # bytes of the line under way at the start of the block
        self.offset = 0  # bytes before the block
        self.carried_cr = False  # the previous block ended in CR

    def see(self, block: bytes) -> None:
        has_cr = b"\r" in block
        if self.carried_cr and not block.startswith(b"\n"):
            self.bare_cr = True
        if has_cr and not self.bare_cr:
            self.bare_cr = block.count(b"\r") - block.count(b"\r\n") - block.endswith(b"\r") > 0
        self.nul = self.nul or b"\0" in block
        self.line = _longest(block.replace(b"\r", b"\n") if has_cr else block, self.line, self.offset, self)
        self.offset += len(block)
        self.carried_cr = block.endswith(b"\r")

    def end(self) -> Text:
        if self.line > MAX_LINE:
            raise self.too_long(self.offset - self.line)
        return Text(self.bare_cr, self.nul)

    def too_long(self, line_start: int) -> InputError:
        row = _line_ends_before(self.counted, line_start)
        where = ("the header" if row == 0 else f"row {row}") if self.header else f"line {row + 1}"
        return InputError(f"{self.named}: {where} is longer than {MAX_LINE:,} bytes; no line of a round log is, "
                          "and it would be held whole (a file that is not a log, or lines joined?)")


def _longest(block: bytes, line: int, offset: int, surveyed: _Survey) -> int:
    """The bytes of the line under way at the end of `block` (at `offset` in the file), given `line` at
    its start; an InputError when a line passes MAX_LINE. Looked at closely only where a stretch of
    MAX_LINE/2 bytes holds no LF: a normal file costs a search that stops at its first LF, once per
    stretch."""
    step = MAX_LINE // 2
    first = block.find(b"\n")
    if first == -1:
        if line + len(block) > MAX_LINE:
            raise surveyed.too_long(offset - line)
        return line + len(block)
    if line + first > MAX_LINE:
        raise surveyed.too_long(offset - line)
    start = first + 1
    if any(block.find(b"\n", at, at + step) == -1 for at in range(start, len(block) - step, step)):
        _check_between(block, start, offset, surveyed)
    return len(block) - 1 - block.rfind(b"\n")


def _check_between(block: bytes, start: int, offset: int, surveyed: _Survey) -> None:
    """Every line of `block` from `start`, measured (a stretch without a line end was found in it)."""
    at = start
    while (end := block.find(b"\n", at)) != -1:
        if end - at > MAX_LINE:
            raise surveyed.too_long(offset + at)
        at = end + 1


def _line_ends_before(path: Path, stop: int) -> int:
    """The line ends (LF, CRLF or CR, each one) in the first `stop` bytes of `path`: the row of the line
    that starts there."""
    ends, carried_cr = 0, False
    with path.open("rb") as handle:
        while stop > 0 and (block := handle.read(min(BLOCK, stop))):
            stop -= len(block)
            # A CR that ends the previous block and an LF that begins this one are one line end.
            ends += block.count(b"\n") + block.count(b"\r") - block.count(b"\r\n") - (carried_cr and block[:1] == b"\n")
            carried_cr = block.endswith(b"\r")
    return ends


def compression_of(path: Path) -> str | None:
    """The codec a file is compressed with (by its first bytes), or None. A zstd file may begin with a
    skippable frame (what `pzstd` writes)."""
    with path.open("rb") as handle:
        head = handle.read(4)
    if len(head) == 4 and head[0] & 0xF0 == 0x50 and head[1:] == b"\x2a\x4d\x18":
        return "zstd"
    return next((codec for start, codec in COMPRESSED.items() if head.startswith(start)), None)


def _decompressed(path: Path, codec: str, header: bool = True) -> tuple[Path, Text]:
    """A decompressed copy of `path`, and what its text holds (`survey`), surveyed as it is written: a
    line over MAX_LINE stops it there, naming `path` and its row. An InputError naming the file when
    it cannot be decompressed (cut short, or not what its first bytes say)."""
    copy = new_copy()
    surveyed = _Survey(copy, path, header)
    try:
        with pa.input_stream(str(path), compression=codec) as source, copy.open("wb") as target:
            while block := source.read(BLOCK):
                target.write(block)
                target.flush()  # so that a line too long is counted in what is written
                surveyed.see(block)
    except (OSError, pa.ArrowException) as error:
        raise InputError(f"{path}: {codec}-compressed, but it cannot be decompressed ({first_line(error)})") from None
    return copy, surveyed.end()


def decompressed(path: Path) -> Path:
    """`path`, or a decompressed copy of it when it is compressed; either held to MAX_LINE (`survey`):
    a JSON Lines reader holds a line whole too."""
    codec = compression_of(path)
    if codec is None:
        survey(path, header=False)
        return path
    return _decompressed(path, codec, header=False)[0]


def readable(path: Path) -> Path:
    """`path`, or a copy of it decompressed, or with LF line ends and no NUL, when it needs one (see
    the module)."""
    codec = compression_of(path)
    if codec is None:
        source, text = path, survey(path)
    else:
        source, text = _decompressed(path, codec)
    if not (text.bare_cr or text.nul):
        return source
    copy = new_copy()
    with source.open("rb") as read, copy.open("wb") as target:
        carried = b""
        while block := read.read(BLOCK):
            block = carried + block
            carried = b"\r" if block.endswith(b"\r") else b""
            block = block[:-1] if carried else block
            target.write(block.replace(b"\r\n", b"\n").replace(b"\r", b"\n").replace(b"\0", REPLACED))
        target.write(b"\n" if carried else b"")
    return copy


def with_header(path: Path, names: tuple[str, ...]) -> Path:
    """A copy of a CSV file written without a header row, `names` its header (a mapping's `header`):
    read so, its rows are numbered, counted and cut into spans as any CSV file's."""
    copy = new_copy()
    with copy.open("w", encoding="utf-8", newline="") as target:
        csv.writer(target, lineterminator="\n").writerow(names)
    with path.open("rb") as source, copy.open("ab") as target:
        shutil.copyfileobj(source, target, BLOCK)
    return copy


def new_copy(suffix: str = ".csv") -> Path:
    """A path for one more copy in the scratch folder, removed at exit or by a stop."""
    return _scratch() / f"{len(list(_scratch().iterdir())):06d}{suffix}"


_folder: list[Path] = []
_copies: dict[Path, Path] = {}  # a CSV file -> the copy it is read through (`read_through`)


def read_through(path: Path, copy: Path) -> Path:
    """Say that CSV file `path` is read through `copy` (`readable`, `with_header`): where a row the
    reader fails on is looked for (`copy_of`), numbered as the reader numbers it. Returns `copy`."""
    _copies[Path(path)] = copy
    return copy


def copy_of(path: Path) -> Path:
    """The copy CSV file `path` is read through, or `path` when it is read as it is."""
    return _copies.get(Path(path), Path(path))


def _scratch() -> Path:
    """A folder of this process for the copies, removed at exit or by a stop (`stops`)."""
    if not _folder:
        made = Path(tempfile.mkdtemp(prefix="baccarat-audit-lines-"))
        stops.remove_on_stop(made)
        atexit.register(shutil.rmtree, made, ignore_errors=True)
        _folder.append(made)
    return _folder[0]
