"""Every error typed and one line (issue 14, item 3): the Python API and the CLI.

Bad inputs tried, and what each now does:

- ``write_dataset`` of dictionary columns (a pandas Categorical; dictionaries inside a list
  and a struct): stored, and read back equal.
- ``fermion.dataset(FILE)`` (also with ``version=2`` and ``tag=``), ``write_dataset`` into a
  plain file or below one, ``fermion log FILE``, ``fermion show FILE``: ``DatasetError``
  "... is a file or inside one, not a table directory; try `fermion inspect` ...", exit 1.
- ``write_table`` to a directory, below a plain file, into a missing folder:
  ``InvalidArgumentError``, ``InvalidArgumentError``, ``SourceNotFoundError``.
- ``cleanup_old_versions(older_than=-1)``, ``older_than=timedelta(days=-1)``,
  ``orphan_older_than=timedelta(seconds=-1)``, a ``datetime`` cutoff in the future (aware or
  naive, for either age): ``InvalidArgumentError``, nothing removed.
- a file cut right after its header (and at 100 bytes, half way, one byte short of the
  end): ``TruncatedFileError`` (was "bad footer magic"); junk bytes stay
  ``InvalidFileError`` "not a Fermion file".
- ``fermion.read_table`` of a Parquet file: ``InvalidFileError`` naming
  ``fermion.parquet_to_fermion`` (was "bad footer magic").
- ``Dataset.delete("x IN (1, 3)")``: works; ``delete("nope = 1")``: ``ColumnNotFoundError``;
  ``delete("x >")``: ``InvalidArgumentError``.
- an unknown column in a table filter (``to_table``, ``count_rows``, ``delete``; as an
  expression and as SQL text): ``ColumnNotFoundError`` naming the column, one line (was a
  multi-line ``InvalidArgumentError`` with the schema pasted in); an unknown nested field
  and a type mismatch (``x > "a"``), in a table and in a file: ``InvalidArgumentError``, one
  line without the schema.
- CLI: ``fermion cat`` / ``inspect`` of a table directory: one line suggesting
  ``fermion show``; of a Parquet file: one line suggesting ``fermion convert``; ``fermion
  convert`` onto an existing destination: refused (exit 1, the file untouched) unless
  ``--force``; ``cat``, ``log``, ``show`` and ``convert`` with a 300-character file name
  (an ``OSError``, ENAMETOOLONG): one line, exit 1, no traceback.

Found while searching for more of the same kind (about 40 more bad inputs tried; the rest
were already typed and one line):

- ``write_dataset`` of duration and month-day-nano interval columns: a raw
  ``ArrowNotImplementedError`` from the statistics (no min/max kernel) -> stored, no
  min/max kept.
- ``Dataset.take("a")``: a raw ``ValueError`` -> ``InvalidArgumentError``.
- ``Dataset.to_table(columns="xy")``: split into letters -> ``InvalidArgumentError`` as
  in ``FileReader.read``.
- ``write_dataset([])``: "expected ... or list of batches, got list" -> says an empty
  list has no schema.
- ``write_table`` / ``write_dataset`` of a Python-defined extension type (struct storage):
  a raw ``TypeError: unhashable type`` in the writer -> stored and read back equal
  (``write_dataset`` also needed the node count fix above).
- a URL with an unknown protocol (``nosuch://x``) to ``dataset``, ``read_table``,
  ``write_table`` and ``fermion log`` / ``cat`` / ``convert``: a raw ``ValueError`` from
  fsspec -> ``InvalidArgumentError`` (exit 1).

Converter (item 4's two concrete cases):

- a Parquet file whose footer says 0 rows while its two row groups hold 3 + 3 (made by
  patching the footer's ``num_rows`` varint): was "footer promises 0 rows" ->
  converts all 6 rows, as ``pyarrow.parquet.read_table`` reads them.
- ``list<dictionary<int8, string>>`` (also a map and a struct with dictionary values), over
  several row groups and batches: ``parquet_to_fermion`` keeps the type, the arrays pass
  ``validate(full=True)`` and convert back to an equal Parquet table; ``write_dataset``
  stores it too.
"""

from __future__ import annotations

import io
import struct
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import fermion
from fermion.cli import main


def assert_one_line(exc: BaseException) -> None:
    message = str(exc)
    assert message and "\n" not in message, repr(message)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_cli_error(err: str, *needles: str) -> None:
    """One ``fermion: error:`` line on stderr that contains every needle."""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("fermion: error: "), err
    for needle in needles:
        assert needle in lines[0], err


@pytest.fixture()
def plain_file(tmp_path: Path) -> Path:
    path = tmp_path / "one.fermion"
    fermion.write_table(pa.table({"x": [1, 2]}), path)
    return path


# --------------------------------------------------------------------------------------
# dictionary columns in tables


def test_write_dataset_keeps_a_pandas_categorical(tmp_path: Path) -> None:
    frame = pd.DataFrame({"c": pd.Categorical(["a", "b", "a", None]), "x": [1, 2, 3, 4]})
    data = pa.Table.from_pandas(frame, preserve_index=False)
    fermion.write_dataset(data, tmp_path / "t")
    back = fermion.dataset(tmp_path / "t").to_table()
    assert back.equals(data.replace_schema_metadata(None))
    assert pa.types.is_dictionary(back.schema.field("c").type)


def test_write_dataset_keeps_nested_dictionaries(tmp_path: Path) -> None:
    words = pa.array(["a", "b", None, "a"]).dictionary_encode()
    data = pa.table(
        {
            "c": words,
            "l": pa.array(
                [["x"], ["y", "x"], None, []], pa.list_(pa.dictionary(pa.int8(), pa.string()))
            ),
            "s": pa.StructArray.from_arrays([words], ["d"]),
            "i": [1, 2, 3, 4],
        }
    )
    fermion.write_dataset(data, tmp_path / "t")
    ds = fermion.dataset(tmp_path / "t")
    assert ds.to_table().equals(data)
    assert ds.to_table(filter=pc.field("c") == "a").column("i").to_pylist() == [1, 4]


# --------------------------------------------------------------------------------------
# a plain file where a table directory belongs


@pytest.mark.parametrize(
    "open_it",
    [
        lambda p: fermion.dataset(p),
        lambda p: fermion.dataset(p, version=2),
        lambda p: fermion.dataset(p, tag="v1"),
        lambda p: fermion.write_dataset(pa.table({"x": [1]}), p, mode="append"),
        lambda p: fermion.write_dataset(pa.table({"x": [1]}), p / "below"),
    ],
    ids=["dataset", "dataset-version", "dataset-tag", "append", "below-a-file"],
)
def test_a_file_is_not_a_table(plain_file: Path, open_it: Any) -> None:
    with pytest.raises(fermion.DatasetError, match="not a table directory") as info:
        open_it(plain_file)
    assert_one_line(info.value)
    assert fermion.read_table(plain_file).num_rows == 2  # left alone


@pytest.mark.parametrize("command", ["log", "show"])
def test_cli_table_commands_on_a_file(
    capsys: pytest.CaptureFixture[str], plain_file: Path, command: str
) -> None:
    code, out, err = run_cli(capsys, command, str(plain_file))
    assert code == 1 and out == ""
    assert_cli_error(err, "not a table directory", "fermion inspect")


# --------------------------------------------------------------------------------------
# where write_table writes


def test_write_table_to_a_directory(tmp_path: Path) -> None:
    with pytest.raises(fermion.InvalidArgumentError, match="is a directory") as info:
        fermion.write_table(pa.table({"x": [1]}), tmp_path)
    assert_one_line(info.value)


def test_write_table_below_a_file(plain_file: Path) -> None:
    with pytest.raises(fermion.InvalidArgumentError, match="parent of this path is a file") as info:
        fermion.write_table(pa.table({"x": [1]}), plain_file / "x.fermion")
    assert_one_line(info.value)


def test_write_table_into_a_missing_folder(tmp_path: Path) -> None:
    target = tmp_path / "nope" / "x.fermion"
    with pytest.raises(fermion.SourceNotFoundError, match="folder .*nope does not exist") as info:
        fermion.write_table(pa.table({"x": [1]}), target)
    assert_one_line(info.value)
    assert isinstance(info.value, FileNotFoundError)  # callers catching the builtin still do
    assert not target.parent.exists()


# --------------------------------------------------------------------------------------
# cleanup ages


@pytest.mark.parametrize(
    ("older_than", "orphans", "needle"),
    [
        (-1, None, "not int"),
        (timedelta(days=-1), None, "must not be negative"),
        (timedelta(0), timedelta(seconds=-1), "must not be negative"),
        (datetime.now(UTC) + timedelta(hours=1), None, "in the future"),
        (timedelta(0), datetime.now(UTC) + timedelta(days=3), "in the future"),
        (datetime.now() + timedelta(hours=1), None, "in the future"),  # naive: local time
    ],
)
def test_cleanup_refuses_bad_ages(
    tmp_path: Path, older_than: Any, orphans: timedelta | None, needle: str
) -> None:
    fermion.write_dataset(pa.table({"x": [1]}), tmp_path / "t")
    ds = fermion.write_dataset(pa.table({"x": [2]}), tmp_path / "t", mode="append")
    with pytest.raises(fermion.InvalidArgumentError, match=needle) as info:
        ds.cleanup_old_versions(older_than, orphan_older_than=orphans)
    assert_one_line(info.value)
    assert ds.storage.versions() == [1, 2]


# --------------------------------------------------------------------------------------
# truncated files


def test_a_file_cut_after_its_header_is_truncated(tmp_path: Path) -> None:
    source = tmp_path / "whole.fermion"
    fermion.write_table(pa.table({"x": list(range(20_000)), "s": ["v"] * 20_000}), source)
    data = source.read_bytes()
    header_and_footer = 8 + 64  # smaller files are "too small", also a TruncatedFileError
    for cut in (header_and_footer, 100, len(data) // 2, len(data) - 1):
        path = tmp_path / f"cut{cut}.fermion"
        path.write_bytes(data[:cut])
        with pytest.raises(fermion.TruncatedFileError, match="truncated") as info:
            fermion.read_table(path)
        assert_one_line(info.value)
    junk = tmp_path / "junk.fermion"
    junk.write_bytes(b"x" * 1000)
    with pytest.raises(fermion.InvalidFileError, match="not a Fermion file") as bad:
        fermion.read_table(junk)
    assert not isinstance(bad.value, fermion.TruncatedFileError)


def test_reading_a_parquet_file_names_the_converter(tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": [1]}), tmp_path / "a.parquet")
    with pytest.raises(fermion.InvalidFileError, match="parquet_to_fermion") as info:
        fermion.read_table(tmp_path / "a.parquet")
    assert_one_line(info.value)


# --------------------------------------------------------------------------------------
# predicates


@pytest.fixture()
def wide_table(tmp_path: Path) -> fermion.Dataset:
    data = pa.table({"x": [1, 2, 3], "s": ["a", "b", "c"], "st": [{"a": 1}, {"a": 2}, {"a": 3}]})
    return fermion.write_dataset(data, tmp_path / "t")


def test_delete_takes_sql_text(wide_table: fermion.Dataset) -> None:
    wide_table.delete("x IN (1, 3)")
    assert fermion.dataset(wide_table.uri).to_table().column("x").to_pylist() == [2]
    with pytest.raises(fermion.ColumnNotFoundError, match="nope") as missing:
        wide_table.delete("nope = 1")
    assert_one_line(missing.value)
    with pytest.raises(fermion.InvalidArgumentError, match="cannot parse") as bad:
        wide_table.delete("x >")
    assert_one_line(bad.value)
    assert wide_table.version == 2


@pytest.mark.parametrize("how", ["to_table", "count_rows", "delete"])
@pytest.mark.parametrize("predicate", [pc.field("nope") > 1, "nope > 1"], ids=["expr", "sql"])
def test_unknown_filter_column_in_a_table(
    wide_table: fermion.Dataset, how: str, predicate: Any
) -> None:
    with pytest.raises(fermion.ColumnNotFoundError, match="no column named 'nope'") as info:
        getattr(wide_table, how)(filter=predicate)
    assert_one_line(info.value)
    assert "int64" not in str(info.value)  # no schema pasted in


def test_sql_text_filters_a_table_scan(wide_table: fermion.Dataset) -> None:
    assert wide_table.to_table(["s"], filter="x >= 2").column("s").to_pylist() == ["b", "c"]
    assert wide_table.count_rows(filter="s = 'a'") == 1


@pytest.mark.parametrize(
    "predicate", [pc.field("x") > "a", pc.field("st", "zz") > 1], ids=["type", "nested"]
)
def test_filters_that_do_not_apply_are_one_line(
    wide_table: fermion.Dataset, tmp_path: Path, predicate: pc.Expression
) -> None:
    path = tmp_path / "f.fermion"
    fermion.write_table(wide_table.to_table(), path)
    for read in (
        lambda: wide_table.to_table(filter=predicate),
        lambda: fermion.read_table(path, filter=predicate),
    ):
        with pytest.raises(fermion.InvalidArgumentError) as info:
            read()
        assert_one_line(info.value)
        assert "child 0" not in str(info.value) and "st: struct" not in str(info.value)


# --------------------------------------------------------------------------------------
# the CLI: hints, --force, OS errors


@pytest.mark.parametrize("command", ["inspect"])  # `cat` reads tables (tests/test_cli.py)
def test_cli_file_commands_on_a_table_suggest_show(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    fermion.write_dataset(pa.table({"x": [1]}), tmp_path / "t")
    code, out, err = run_cli(capsys, command, str(tmp_path / "t"))
    assert code == 1 and out == ""
    assert_cli_error(err, "is a table directory", f"fermion show {tmp_path / 't'}")


@pytest.mark.parametrize("command", ["cat", "inspect"])
def test_cli_file_commands_on_parquet_suggest_convert(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    pq.write_table(pa.table({"x": [1]}), tmp_path / "a.parquet")
    code, out, err = run_cli(capsys, command, str(tmp_path / "a.parquet"))
    assert code == 1 and out == ""
    src, dst = tmp_path / "a.parquet", tmp_path / "a.fermion"
    assert_cli_error(err, "is a Parquet file", f"fermion convert {src} {dst}")


def test_cli_convert_needs_force_to_overwrite(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    src, dst = tmp_path / "a.parquet", tmp_path / "a.fermion"
    pq.write_table(pa.table({"x": [1, 2]}), src)
    dst.write_bytes(b"precious")
    code, out, err = run_cli(capsys, "convert", str(src), str(dst))
    assert code == 1 and out == ""
    assert_cli_error(err, "exists", "--force")
    assert dst.read_bytes() == b"precious"
    code, out, err = run_cli(capsys, "convert", str(src), str(dst), "--force")
    assert code == 0 and err == ""
    assert fermion.read_table(dst).column("x").to_pylist() == [1, 2]
    back = tmp_path / "back.parquet"
    assert run_cli(capsys, "convert", str(dst), str(back))[0] == 0  # a new name needs no flag
    assert run_cli(capsys, "convert", str(dst), str(back))[0] == 1


def test_cli_os_errors_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": [1]}), tmp_path / "a.parquet")
    long = str(tmp_path / ("x" * 300))
    for argv in (
        ["cat", f"{long}.fermion"],
        ["log", long],
        ["show", long],
        ["convert", str(tmp_path / "a.parquet"), f"{long}.fermion"],
    ):
        code, out, err = run_cli(capsys, *argv)
        assert code == 1 and out == "", argv
        assert_cli_error(err, "name too long")


# --------------------------------------------------------------------------------------
# more of the same kind


def test_write_dataset_of_durations_and_intervals(tmp_path: Path) -> None:
    data = pa.table(
        {
            "i": pa.array([pa.MonthDayNano([1, 2, 3]), None], pa.month_day_nano_interval()),
            "d": pa.array([5, 7], pa.duration("ms")),
        }
    )
    ds = fermion.write_dataset(data, tmp_path / "t")
    assert ds.to_table().equals(data)
    assert ds.count_rows(filter=pc.field("d") > pa.scalar(6, pa.duration("ms"))) == 1


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda ds: ds.take("a"), "indices must be integers"),
        (lambda ds: ds.to_table(columns="xy"), "list of column names"),
        (lambda ds: fermion.write_dataset([], ds.uri, mode="append"), "empty list"),
    ],
    ids=["take-str", "columns-str", "empty-list"],
)
def test_wrong_argument_types(wide_table: fermion.Dataset, call: Any, needle: str) -> None:
    with pytest.raises(fermion.InvalidArgumentError, match=needle) as info:
        call(wide_table)
    assert_one_line(info.value)


class _Point(pa.ExtensionType):
    """A Python extension type with struct storage (unhashable, as pyarrow makes them)."""

    def __init__(self) -> None:
        super().__init__(pa.struct([("x", pa.float64()), ("y", pa.float64())]), _POINT)

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> _Point:
        return _Point()


_POINT = "fermion.tests.point"


def test_python_extension_types_are_stored(tmp_path: Path) -> None:
    pa.register_extension_type(_Point())
    try:
        storage = pa.array([{"x": 1.0, "y": 2.0}, None], _Point().storage_type)
        data = pa.table({"p": pa.ExtensionArray.from_storage(_Point(), storage), "i": [1, 2]})
        fermion.write_table(data, tmp_path / "p.fermion")
        assert fermion.read_table(tmp_path / "p.fermion").equals(data)
        assert fermion.write_dataset(data, tmp_path / "t").to_table().equals(data)
    finally:
        pa.unregister_extension_type(_POINT)


@pytest.mark.parametrize(
    "call",
    [
        lambda: fermion.dataset("nosuch://t"),
        lambda: fermion.read_table("nosuch://x.fermion"),
        lambda: fermion.write_table(pa.table({"x": [1]}), "nosuch://x.fermion"),
    ],
    ids=["dataset", "read_table", "write_table"],
)
def test_unknown_url_protocol(call: Any) -> None:
    with pytest.raises(fermion.InvalidArgumentError, match="nosuch") as info:
        call()
    assert_one_line(info.value)


@pytest.mark.parametrize(
    "argv",
    [
        ["log", "nosuch://t"],
        ["cat", "nosuch://x.fermion"],
        ["convert", "nosuch://a.parquet", "b.fermion"],
    ],
    ids=["log", "cat", "convert"],
)
def test_cli_unknown_url_protocol(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, err = run_cli(capsys, *argv)
    assert code == 1 and out == ""
    assert_cli_error(err, "nosuch")


# --------------------------------------------------------------------------------------
# converter


def _parquet_with_zero_footer_rows(table: pa.Table, rows_per_group: int) -> bytes:
    """A Parquet file whose FileMetaData.num_rows is 0 while its row groups keep theirs.

    The footer is Thrift compact: ``num_rows`` (field 3, i64) follows the schema list as the
    byte 0x16 and a zigzag varint; each candidate is patched to 0 and kept when pyarrow
    reads back a total of 0 with unchanged row groups.
    """
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=rows_per_group)
    data = sink.getvalue()
    footer_start = len(data) - 8 - struct.unpack("<I", data[-8:-4])[0]
    pattern = b"\x16" + bytes([table.num_rows * 2])  # one-byte varint: table.num_rows < 64
    pos = data.find(pattern, footer_start)
    while pos >= 0:
        patched = data[: pos + 1] + b"\x00" + data[pos + 2 :]
        try:
            meta = pq.ParquetFile(io.BytesIO(patched)).metadata
        except (OSError, pa.ArrowException):
            meta = None
        if meta is not None and meta.num_rows == 0:
            groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
            if sum(groups) == table.num_rows:
                return patched
        pos = data.find(pattern, pos + 1)
    raise AssertionError("no num_rows field found in the footer")


def test_parquet_footer_with_zero_rows_converts_by_row_groups(tmp_path: Path) -> None:
    table = pa.table({"x": list(range(6)), "s": list("abcdef")})
    src = tmp_path / "zero.parquet"
    src.write_bytes(_parquet_with_zero_footer_rows(table, rows_per_group=3))
    assert pq.ParquetFile(src).metadata.num_rows == 0
    assert pq.read_table(src).equals(table)  # what pyarrow does
    summary = fermion.parquet_to_fermion(src, tmp_path / "zero.fermion")
    assert summary.num_rows == 6 and summary.source_units == 2
    assert fermion.read_table(tmp_path / "zero.fermion").equals(table)


def test_dictionaries_nested_in_lists_maps_and_structs_convert(tmp_path: Path) -> None:
    words = pa.dictionary(pa.int8(), pa.string())
    lists = [
        None if i % 11 == 0 else [f"w{(i * 7 + j) % 50}" for j in range(i % 4)] for i in range(900)
    ]
    table = pa.table(
        {
            "l": pa.array(lists, pa.list_(words)),
            "m": pa.array(
                [[("k", f"v{i % 5}")] if i % 3 else None for i in range(900)],
                pa.map_(pa.string(), words),
            ),
            "st": pa.array(
                [{"d": None if i % 4 == 0 else f"s{i % 9}"} for i in range(900)],
                pa.struct([("d", words)]),
            ),
        }
    )
    src = tmp_path / "in.parquet"
    pq.write_table(table, src, row_group_size=200)
    expected = pq.read_table(src)
    fermion.parquet_to_fermion(src, tmp_path / "out.fermion", batch_rows=70)
    back = fermion.read_table(tmp_path / "out.fermion")
    assert back.schema.field("l").type == pa.list_(pa.field("element", words))
    assert back.equals(expected)
    for column in back.columns:
        for chunk in column.chunks:
            chunk.validate(full=True)
    fermion.fermion_to_parquet(tmp_path / "out.fermion", tmp_path / "again.parquet")
    assert pq.read_table(tmp_path / "again.parquet").equals(expected)
    assert fermion.write_dataset(table, tmp_path / "t").to_table().equals(table)
