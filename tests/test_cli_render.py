"""Rendering for the CLI, on hand-made data (no files needed)."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
from typing import Any

from fermion.cli.render import MAX_CELL_WIDTH, jsonable, render_inspect, write_rows


def describe_dict() -> dict[str, Any]:
    def chunk(stripe: int, lo: Any, hi: Any, nulls: int) -> dict[str, Any]:
        return {
            "stripe": stripe,
            "offset": 100 * stripe,
            "length": 1000,
            "num_values": 10,
            "null_count": nulls,
            "min": lo,
            "max": hi,
            "num_pages": 2,
            "encodings": ["plain"],
            "compressions": ["zstd"],
        }

    return {
        "path": "f.fermion",
        "file_size": 123456,
        "format_version": "1.0",
        "num_rows": 20,
        "num_columns": 3,
        "num_stripes": 2,
        "features": ["page_crc32"],
        "footer": {"cit_offset": 9000, "flags": 1},
        "stripes": [{"index": 0, "rows": 10}, {"index": 1, "rows": 10}],
        "columns": [
            {
                "index": 0,
                "name": "x",
                "type": "int64",
                "field_id": 1,
                "has_cmb": True,
                "cmb_offset": 5000,
                "cmb_size": 312,
                "streams": [
                    {
                        "node": 0,
                        "path": "x",
                        "stream_type": "DATA",
                        "desc_type": "FULL",
                        "chunks": [chunk(0, -5, 7, 1), chunk(1, 3, 11, 0)],
                    }
                ],
            },
            {
                "index": 2,
                "name": "gone",
                "type": "float",
                "field_id": 3,
                "has_cmb": False,
                "cmb_offset": 5312,
                "cmb_size": 0,
                "streams": [],
            },
        ],
    }


def test_render_inspect_summarises_streams_over_stripes() -> None:
    text = render_inspect(describe_dict())
    assert "size      123,456 bytes" in text
    assert "features  page_crc32" in text
    assert "columns   3 (showing 2)" in text
    assert "stripes   2 (rows: 10, 10)" in text
    assert "cit_offset  9000" in text
    assert "CMB at offset 5,000: 312 bytes" in text
    stream_line = next(line for line in text.splitlines() if line.strip().startswith("x "))
    # path, type, desc, chunks, pages, bytes, nulls, min, max, encodings, compressions
    assert stream_line.split() == [
        "x",
        "DATA",
        "FULL",
        "2",
        "4",
        "2,000",
        "1",
        "-5",
        "11",
        "plain",
        "zstd",
    ]
    assert "column gone (#2, float)" in text
    assert "no CMB: every value is null" in text


def test_render_inspect_without_cmb_offset() -> None:
    info = describe_dict()
    del info["columns"][0]["cmb_offset"]
    assert "\n  CMB: 312 bytes\n" in render_inspect(info)


def test_render_inspect_unknown_nulls_and_string_stats() -> None:
    info = describe_dict()
    stream = info["columns"][0]["streams"][0]
    stream["chunks"][0].update(null_count=None, min="abc", max="abd")
    stream["chunks"][1].update(min=None, max=None)
    line = next(x for x in render_inspect(info).splitlines() if x.strip().startswith("x "))
    assert line.split()[6:9] == ["-", '"abc"', '"abd"']


def test_jsonable_values() -> None:
    value = {
        "t": dt.datetime(2020, 1, 2, 3, 4, 5),
        "d": dt.date(2020, 1, 2),
        "dec": decimal.Decimal("-1.50"),
        "dur": dt.timedelta(seconds=90),
        "raw": b"\x00\xff",
        "inf": [float("inf"), float("-inf"), 1.5],
        "map": [("k", 1)],
    }
    got = jsonable(value)
    assert got == {
        "t": "2020-01-02T03:04:05",
        "d": "2020-01-02",
        "dec": "-1.50",
        "dur": "0:01:30",
        "raw": "00ff",
        "inf": ["Infinity", "-Infinity", 1.5],
        "map": [["k", 1]],
    }
    json.dumps(got, allow_nan=False)


def test_write_rows_table_clips_and_keeps_widths() -> None:
    out = io.StringIO()
    rows: list[dict[str, Any]] = [{"a": "x" * 100, "b": None}, {"a": "y", "b": [1, None]}]
    widths = write_rows(rows, ["a", "b"], out, fmt="table", header=True)
    assert widths == [MAX_CELL_WIDTH, len("[1,null]")]
    lines = out.getvalue().splitlines()
    assert lines[2].startswith("x" * (MAX_CELL_WIDTH - 1) + "…")
    assert lines[3].split() == ["y", "[1,null]"]
    out2 = io.StringIO()
    write_rows([{"a": "z", "b": 1}], ["a", "b"], out2, fmt="table", header=False, widths=widths)
    assert out2.getvalue() == "z".ljust(MAX_CELL_WIDTH) + "  1\n"


def test_write_rows_csv_and_jsonl() -> None:
    out = io.StringIO()
    write_rows([{"a": 'q"uote', "b": {"x": 1}}], ["a", "b"], out, fmt="csv", header=True)
    assert out.getvalue() == 'a,b\n"q""uote","{""x"":1}"\n'
    out = io.StringIO()
    write_rows([{"a": float("nan"), "b": None}], ["a", "b"], out, fmt="jsonl", header=True)
    assert json.loads(out.getvalue()) == {"a": "NaN", "b": None}
