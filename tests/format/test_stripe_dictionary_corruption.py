"""Corrupt stripe dictionaries (format 1.4, FORMAT.md §5.4) raise typed errors.

Every bad input below is written into an otherwise valid file (pages uncompressed, the
page CRC32 recomputed after the change, so that the structural checks, not the checksum,
must catch it; the footer CRC likewise) and read through every path: a scan, a filtered
scan selecting some pages, ``take`` with point reads (only the wanted indices gathered)
and without, and ``read_dictionary``. Each must raise a FermionError subclass
(InvalidFileError unless said otherwise), never IndexError, ValueError, an Arrow error or
a crash.

Bad inputs tried:

- indices out of range: an index page's packed indices all ones (1,023 at 10 bits for a
  dictionary of 700 values);
- an index page naming another dictionary size (``aux`` 699, 1,024, 0);
- lying dictionary counts: ``aux`` one more, one less, 10**6 (the packed lengths then run
  past the page: a truncated dictionary), 2**40 (above 2**31 - 1);
- lying lengths: ``base`` one more (the lengths add up past the bytes), ``base``
  negative (offsets decreasing), ``base`` 2**62, a packed length made longer;
- dictionary header fields: ``flags`` without BITS, ``out_width`` 4, ``width`` 0, width
  57 (invalid bit width), ``count`` 1 on the dictionary page of no rows;
- wrong encodings: the dictionary page stored as PLAIN, an index page as PLAIN or as a
  page-level DICTIONARY, an OFFSETS page of the chunk as PLAIN instead of DERIVED, an
  unknown encoding id 12 (UnsupportedVersionError), DICTIONARY_INDICES on a page of a
  chunk without a stripe dictionary;
- the footer without the STRIPE_DICTIONARY required bit (CRC fixed), and a 1.3 reader's
  view of a good file (the bit unknown: UnsupportedVersionError at open);
- truncated dictionaries at the payload level: cut inside the header, inside the packed
  lengths, inside the bytes; and the file cut inside the dictionary page.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fermion
from fermion.format.encoding import stripe_dictionary as sd
from fermion.format.metadata import footer
from fermion.format.metadata.structs import Encoding, RequiredFeature
from tests.format.test_points import page_spans
from tests.format.test_stripe_dictionary import medium

N = 8_000
HEADER = 16  # PageHeader; the payload (uncompressed) follows
# EncodingHeader fields, relative to the payload
BASE, AUX, COUNT, WIDTH, OUT_WIDTH, FLAGS = 0, 8, 16, 20, 22, 23


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    table = pa.table({"v": medium(N, 700, seed=12, nulls=0.05), "i": pa.array(np.arange(N))})
    path = tmp_path_factory.mktemp("good") / "good.fermion"
    # checksum_block_size=0: pages stored NONE, so that their payloads can be rewritten here
    fermion.write_table(table, path, compression="none", page_size=2048, checksum_block_size=0)
    pages = page_spans(path, "v")
    assert pages[0]["encoding"] == Encoding.STRIPE_DICTIONARY
    assert all(p["encoding"] == Encoding.DICTIONARY_INDICES for p in pages[1:])
    assert len(pages) >= 4 and {p["compression"] for p in pages} == {0}
    assert fermion.read_table(path).equals(table)
    return path


def _reads(path: Path, rows: tuple[int, int] = (0, N)) -> list[Callable[[], object]]:
    """Reads that all touch rows ``[a, b)`` (the page a test damaged)."""
    a, b = rows
    picked = np.array(sorted({a, (a + b) // 2, b - 1}))
    return [
        lambda: fermion.read_table(path),
        lambda: fermion.read_table(path, filter=(pc.field("i") >= a) & (pc.field("i") < b)),
        lambda: fermion.FileReader(path).take(picked),
        lambda: fermion.FileReader(path, point_reads=False).take(picked),
        lambda: fermion.read_table(path, read_dictionary=["v"]),
    ]


def _assert_refused(
    path: Path, error: type[Exception] = fermion.InvalidFileError, rows: tuple[int, int] = (0, N)
) -> None:
    for read in _reads(path, rows):
        with pytest.raises(error):
            read()


def _patch(good: Path, out: Path, page: dict, at: int, new: bytes) -> Path:
    """``new`` written at byte ``at`` of ``page`` (header included), the CRC recomputed."""
    data = bytearray(good.read_bytes())
    start = page["offset"]
    data[start + at : start + at + len(new)] = new
    crc = zlib.crc32(bytes(data[start + 4 : start + page["size"]]))
    data[start : start + 4] = crc.to_bytes(4, "little")
    out.write_bytes(bytes(data))
    return out


def _i64(v: int) -> bytes:
    return v.to_bytes(8, "little", signed=True)


def _field(name: str, value: int) -> tuple[int, bytes]:
    at = {"base": BASE, "aux": AUX, "count": COUNT}
    if name in at:
        return HEADER + at[name], _i64(value)
    return HEADER + {"width": WIDTH, "out_width": OUT_WIDTH, "flags": FLAGS}[name], bytes([value])


DICTIONARY_LIES = {
    "count one more": ("aux", 701),
    "count one less": ("aux", 699),
    "count runs past the page": ("aux", 10**6),
    "count above 2**31 - 1": ("aux", 2**40),
    "base one more": ("base", None),  # the true base + 1
    "base negative (offsets decreasing)": ("base", -5),
    "base 2**62": ("base", 2**62),
    "flags without BITS": ("flags", 0),
    "out_width 4": ("out_width", 4),
    "width 0": ("width", 0),
    "width 57": ("width", 57),
    "rows on the dictionary page": ("count", 1),
}


@pytest.mark.parametrize("lie", sorted(DICTIONARY_LIES))
def test_a_lying_dictionary_page(good: Path, tmp_path: Path, lie: str) -> None:
    name, value = DICTIONARY_LIES[lie]
    page = page_spans(good, "v")[0]
    if value is None:
        raw = good.read_bytes()[page["offset"] + HEADER + BASE : page["offset"] + HEADER + 8]
        value = int.from_bytes(raw, "little", signed=True) + 1
    at, new = _field(name, value)
    _assert_refused(_patch(good, tmp_path / "bad.fermion", page, at, new))


def test_a_packed_length_made_longer(good: Path, tmp_path: Path) -> None:
    page = page_spans(good, "v")[0]
    first = good.read_bytes()[page["offset"] + HEADER + 24]
    bad = _patch(good, tmp_path / "bad.fermion", page, HEADER + 24, bytes([first ^ 0x80]))
    _assert_refused(bad)


@pytest.mark.parametrize("aux", [699, 1_024, 0])
def test_an_index_page_naming_another_dictionary_size(good: Path, tmp_path: Path, aux: int) -> None:
    page = page_spans(good, "v")[2]
    at, new = _field("aux", aux)
    _assert_refused(_patch(good, tmp_path / "bad.fermion", page, at, new), rows=page["rows"])


def test_indices_out_of_range(good: Path, tmp_path: Path) -> None:
    """Every index of page 1 set to 1,023 (10 bits), beyond the 700 values."""
    page = page_spans(good, "v")[1]
    raw = good.read_bytes()[page["offset"] : page["offset"] + page["size"]]
    assert raw[HEADER + WIDTH] == 10
    packed = len(raw) - HEADER - 24
    bad = _patch(good, tmp_path / "bad.fermion", page, HEADER + 24, b"\xff" * packed)
    _assert_refused(bad, rows=page["rows"])


@pytest.mark.parametrize(
    "which,encoding,error",
    [
        (0, Encoding.PLAIN, fermion.InvalidFileError),  # the dictionary page
        (1, Encoding.PLAIN, fermion.InvalidFileError),  # an index page
        (1, Encoding.DICTIONARY, fermion.InvalidFileError),
        (1, 12, fermion.UnsupportedVersionError),  # an id no reader knows
    ],
)
def test_wrong_encodings(good: Path, tmp_path: Path, which: int, encoding: int, error) -> None:
    page = page_spans(good, "v")[which]
    bad = _patch(good, tmp_path / "bad.fermion", page, 4, bytes([int(encoding)]))
    _assert_refused(bad, error, rows=page["rows"] if which else (0, N))


def test_an_offsets_page_that_is_not_derived(good: Path, tmp_path: Path) -> None:
    from fermion.format.metadata.structs import StreamType

    page = page_spans(good, "v", StreamType.OFFSETS)[1]
    assert page["encoding"] == Encoding.DERIVED and page["size"] == HEADER
    bad = _patch(good, tmp_path / "bad.fermion", page, 4, bytes([Encoding.PLAIN]))
    _assert_refused(bad, rows=page["rows"])


def test_indices_in_a_chunk_without_a_stripe_dictionary(tmp_path: Path) -> None:
    table = pa.table({"v": pa.array([f"unique {i}" for i in range(N)]), "i": np.arange(N)})
    path = tmp_path / "plain.fermion"
    fermion.write_table(table, path, compression="none")
    page = page_spans(path, "v")[0]
    assert page["encoding"] == Encoding.PLAIN
    bad = _patch(path, tmp_path / "bad.fermion", page, 4, bytes([Encoding.DICTIONARY_INDICES]))
    _assert_refused(bad)


def _footer_without_the_bit(good: Path, out: Path) -> Path:
    data = bytearray(good.read_bytes())
    footer = len(data) - 64
    required = int.from_bytes(data[footer + 44 : footer + 48], "little")
    assert required & RequiredFeature.STRIPE_DICTIONARY
    data[footer + 44 : footer + 48] = (required & ~RequiredFeature.STRIPE_DICTIONARY).to_bytes(
        4, "little"
    )
    data[footer + 52 : footer + 56] = zlib.crc32(bytes(data[footer : footer + 40])).to_bytes(
        4, "little"
    )
    out.write_bytes(bytes(data))
    return out


def test_the_required_bit_missing(good: Path, tmp_path: Path) -> None:
    bad = _footer_without_the_bit(good, tmp_path / "bad.fermion")
    _assert_refused(bad)
    assert fermion.read_table(bad, columns=["i"]).num_rows == N  # other columns still read


def test_a_1_3_readers_view(good: Path, monkeypatch) -> None:
    known_1_3 = footer.KNOWN_REQUIRED_FEATURES & ~RequiredFeature.STRIPE_DICTIONARY
    monkeypatch.setattr(footer, "KNOWN_REQUIRED_FEATURES", int(known_1_3))
    _assert_refused(good, fermion.UnsupportedVersionError)


def test_truncated_dictionary_payloads(good: Path) -> None:
    page = page_spans(good, "v")[0]
    payload = good.read_bytes()[page["offset"] + HEADER : page["offset"] + page["size"]]
    assert isinstance(sd.parse_dictionary(payload, "p"), sd.StripeDictionaryPage)
    for cut in (10, 24, 30, len(payload) // 2, len(payload) - 1):
        with pytest.raises(fermion.InvalidFileError):
            sd.parse_dictionary(payload[:cut], "p")


def test_the_file_cut_inside_the_dictionary_page(good: Path, tmp_path: Path) -> None:
    page = page_spans(good, "v")[0]
    bad = tmp_path / "cut.fermion"
    bad.write_bytes(good.read_bytes()[: page["offset"] + page["size"] // 2])
    with pytest.raises(fermion.FermionError):
        fermion.read_table(bad)
