"""Arrow inputs and outputs of the file layer: what write_table / FileWriter.write take,
what FileReader exports (to_batches, to_reader, __arrow_c_stream__), file-like sources and
sinks."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fermion
from fermion.errors import InvalidArgumentError, SchemaMismatchError

TABLE = pa.table({"k": np.arange(20, dtype=np.int64), "v": [f"s{i}" for i in range(20)]})


class StreamOnly:
    """Another library's object: only the Arrow PyCapsule stream interface."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self.requested: list[Any] = []

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        self.requested.append(requested_schema)
        return self.table.__arrow_c_stream__(requested_schema)


def _inputs() -> dict[str, Any]:
    return {
        "table": TABLE,
        "record_batch": TABLE.combine_chunks().to_batches()[0],
        "reader": pa.RecordBatchReader.from_batches(TABLE.schema, TABLE.to_batches(7)),
        "pandas": TABLE.to_pandas(),
        "polars": pl.from_arrow(TABLE),
        "c_stream": StreamOnly(TABLE),
    }


@pytest.mark.parametrize("kind", list(_inputs()))
def test_write_table_takes_every_input(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"{kind}.fermion"
    fermion.write_table(_inputs()[kind], path)
    got = fermion.read_table(path)
    # polars writes large strings; pandas adds its metadata: compare values
    assert got.to_pydict() == TABLE.to_pydict()


@pytest.mark.parametrize("kind", list(_inputs()))
def test_file_writer_write_takes_every_input(tmp_path: Path, kind: str) -> None:
    data = _inputs()[kind]
    schema = pa.RecordBatchReader.from_stream(_inputs()[kind]).schema
    with fermion.FileWriter(tmp_path / "w.fermion", schema) as writer:
        writer.write(data)
        writer.write(pa.Table.from_pydict(TABLE.slice(0, 2).to_pydict(), schema=schema))
    assert fermion.read_table(tmp_path / "w.fermion").num_rows == 22


def test_bad_inputs_are_typed_errors(tmp_path: Path) -> None:
    for bad in (42, [1, 2], {"k": [1]}, "not data"):
        with pytest.raises(InvalidArgumentError, match="expected a pyarrow Table"):
            fermion.write_table(bad, tmp_path / "x.fermion")
    with fermion.FileWriter(tmp_path / "y.fermion", TABLE.schema) as writer:
        with pytest.raises(SchemaMismatchError):
            writer.write(pd.DataFrame({"other": [1.5]}))
        with pytest.raises(InvalidArgumentError):
            writer.write(object())

    class Broken:
        def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
            return "not a capsule"

    with pytest.raises(InvalidArgumentError, match="__arrow_c_stream__"):
        fermion.write_table(Broken(), tmp_path / "z.fermion")


def test_a_stream_failing_midway_raises_its_error(
    tmp_path: Path,
) -> None:
    def batches():
        yield TABLE.to_batches()[0]
        raise RuntimeError("the source went away")

    reader = pa.RecordBatchReader.from_batches(TABLE.schema, batches())
    with pytest.raises(RuntimeError, match="went away"):
        fermion.write_table(reader, tmp_path / "partial.fermion")


def test_reader_outputs_project_and_filter(tmp_path: Path) -> None:
    path = tmp_path / "r.fermion"
    fermion.write_table(TABLE, path, max_stripe_rows=8)
    with fermion.FileReader(path) as reader:
        batches = list(reader.to_batches(["v"], pc.field("k") >= 10))
        assert [b.num_rows for b in batches] == [6, 4]  # stripes 0 (rows 0-7) pruned
        assert pa.Table.from_batches(batches).column("v").to_pylist()[0] == "s10"
        stream = reader.to_reader(["k"], pc.field("k") < 3, batch_size=2)
        assert isinstance(stream, pa.RecordBatchReader)
        assert stream.schema == pa.schema([("k", pa.int64())])
        assert [b.num_rows for b in stream] == [2, 1]
        assert pa.table(reader).equals(TABLE)  # __arrow_c_stream__
        wanted = pa.schema([("v", pa.string())])
        projected = pa.RecordBatchReader.from_stream(reader, schema=wanted).read_all()
        assert projected.column_names == ["v"] and projected.num_rows == 20
        assert repr(reader) == f"FileReader({str(path)!r}, rows=20, columns=2, stripes=3)"
        with pytest.raises(InvalidArgumentError):
            reader.to_reader(batch_size=0)
        with pytest.raises(fermion.ColumnNotFoundError):
            reader.to_reader(["nope"])


def test_file_like_sources(tmp_path: Path) -> None:
    path = tmp_path / "f.fermion"
    fermion.write_table(TABLE, path)
    data = path.read_bytes()
    with open(path, "rb") as handle:
        sources: list[Any] = [
            io.BytesIO(data),
            pa.BufferReader(data),
            pa.py_buffer(data),
            data,
            handle,
            pa.OSFile(str(path)),
            pa.memory_map(str(path)),
        ]
        for source in sources:
            got = fermion.read_table(source, columns=["v"], filter=pc.field("k") == 3)
            assert got.to_pydict() == {"v": ["s3"]}, type(source)
        assert not handle.closed  # the caller's object stays open
    closed = io.BytesIO(data)
    closed.close()
    with pytest.raises(InvalidArgumentError, match="closed"):
        fermion.FileReader(closed)
    with pytest.raises(fermion.TruncatedFileError):
        fermion.FileReader(io.BytesIO(data[:10]))


def test_file_like_sinks(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    fermion.write_table(TABLE, buffer)
    assert not buffer.closed  # left open, as pyarrow.parquet leaves it
    assert fermion.read_table(buffer.getvalue()).equals(TABLE)
    stream = pa.BufferOutputStream()
    fermion.write_table(TABLE, stream)
    assert fermion.read_table(stream.getvalue()).equals(TABLE)
    with pa.OSFile(str(tmp_path / "os.fermion"), "wb") as sink:
        fermion.write_table(TABLE, sink)
    with open(tmp_path / "py.fermion", "wb") as handle:
        fermion.write_table(TABLE.to_batches()[0], handle)
    assert fermion.read_table(tmp_path / "os.fermion").equals(TABLE)
    assert fermion.read_table(tmp_path / "py.fermion").equals(TABLE)
    done = io.BytesIO()
    done.close()
    with pytest.raises(InvalidArgumentError, match="closed"):
        fermion.write_table(TABLE, done)
