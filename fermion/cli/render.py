"""Text rendering for the ``fermion`` command line: inspect reports and rows for ``cat``.

Pure functions over plain data (the dict of ``FileReader.describe()``, Python rows), so they
are tested without files. Writing goes to a text stream the caller chooses.

Example:
    >>> import io
    >>> out = io.StringIO()
    >>> write_rows([{"a": 1, "b": None}], ["a", "b"], out, fmt="csv", header=True)
    >>> out.getvalue().splitlines()
    ['a,b', '1,']
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any, Literal, TextIO

__all__ = [
    "MAX_CELL_WIDTH",
    "RowFormat",
    "jsonable",
    "render_inspect",
    "write_rows",
]

RowFormat = Literal["table", "jsonl", "csv"]
MAX_CELL_WIDTH = 40
"""Widest cell ``cat --format table`` prints; longer values end with an ellipsis."""


# --------------------------------------------------------------------------------------
# values


def jsonable(value: Any) -> Any:
    """A JSON-safe version of a value from ``pyarrow`` ``to_pylist()``.

    Dates and times become ISO strings, decimals and durations strings, bytes hex,
    non-finite floats the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``; map entries
    (tuples) become two-element lists.

    Example:
        >>> import decimal
        >>> jsonable({"d": decimal.Decimal("1.50"), "b": b"\\x01", "f": float("nan")})
        {'d': '1.50', 'b': '01', 'f': 'NaN'}
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | dt.timedelta):
        return str(value)
    return str(value)


def _cell(value: Any, *, null: str) -> str:
    """One value as flat text: scalars as themselves, nested values as JSON."""
    if value is None:
        return null
    if isinstance(value, str):
        return value
    safe = jsonable(value)
    if isinstance(safe, str):
        return safe
    return json.dumps(safe, ensure_ascii=False, separators=(",", ":"))


def _clip(text: str, width: int) -> str:
    text = text.replace("\n", "\\n").replace("\t", "\\t")
    return text if len(text) <= width else text[: width - 1] + "…"


def write_rows(
    rows: Iterable[dict[str, Any]],
    names: Sequence[str],
    out: TextIO,
    *,
    fmt: RowFormat,
    header: bool,
    widths: list[int] | None = None,
) -> list[int] | None:
    """Write rows (dicts from ``RecordBatch.to_pylist()``) as table, JSON lines or CSV.

    Args:
        rows: the rows to write.
        names: column order (and the header).
        out: a text stream.
        fmt: ``"table"`` (aligned, cells clipped to :data:`MAX_CELL_WIDTH`), ``"jsonl"``
            (one JSON object per row) or ``"csv"`` (RFC 4180, empty cell for null).
        header: write the header line (table and CSV only).
        widths: table column widths from an earlier call, so later chunks stay aligned.

    Returns:
        The table column widths used (``None`` for the other formats).

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> _ = write_rows([{"x": [1, 2]}], ["x"], out, fmt="jsonl", header=False)
        >>> out.getvalue()
        '{"x": [1, 2]}\\n'
    """
    if fmt == "jsonl":
        for row in rows:
            obj = {name: jsonable(row.get(name)) for name in names}
            out.write(json.dumps(obj, ensure_ascii=False) + "\n")
        return None
    if fmt == "csv":
        w = csv.writer(out, lineterminator="\n")
        if header:
            w.writerow(names)
        for row in rows:
            w.writerow([_cell(row.get(name), null="") for name in names])
        return None
    cells = [
        [_clip(_cell(row.get(name), null="null"), MAX_CELL_WIDTH) for name in names] for row in rows
    ]
    if widths is None:
        widths = [min(len(n), MAX_CELL_WIDTH) for n in names]
        for line in cells:
            widths = [max(w, len(c)) for w, c in zip(widths, line, strict=True)]
    if header:
        out.write(_join([_clip(n, MAX_CELL_WIDTH) for n in names], widths) + "\n")
        out.write(_join(["-" * w for w in widths], widths) + "\n")
    for line in cells:
        out.write(_join(line, widths) + "\n")
    return widths


def _join(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()


# --------------------------------------------------------------------------------------
# inspect


def _num(n: Any) -> str:
    return f"{n:,}" if isinstance(n, int) and not isinstance(n, bool) else str(n)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], indent: str = "  ") -> list[str]:
    text = [[str(c) for c in header]] + [[_clip(str(c), 60) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in text) for i in range(len(header))]
    return [indent + _join(r, widths) for r in text]


def _minmax(values: Iterable[Any], pick: Any) -> Any:
    present = [v for v in values if v is not None]
    if not present:
        return None
    try:
        return pick(present)
    except TypeError:  # values of mixed kinds (should not happen within one stream)
        return None


def _stat(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bytes):
        return "0x" + value.hex()
    return str(value)


def _stream_row(stream: dict[str, Any]) -> list[Any]:
    chunks: list[dict[str, Any]] = list(stream.get("chunks") or [])
    encodings = sorted({e for c in chunks for e in (c.get("encodings") or [])})
    codecs = sorted({e for c in chunks for e in (c.get("compressions") or [])})
    nulls: list[Any] = [c.get("null_count") for c in chunks]
    known_nulls = all(n is not None for n in nulls)
    return [
        stream.get("path", stream.get("node", "")),
        stream.get("stream_type", ""),
        stream.get("desc_type", ""),
        len(chunks),
        _num(sum(int(c.get("num_pages") or 0) for c in chunks)),
        _num(sum(int(c.get("length") or 0) for c in chunks)),
        _num(sum(int(n) for n in nulls)) if nulls and known_nulls else "-",
        _stat(_minmax((c.get("min") for c in chunks), min)),
        _stat(_minmax((c.get("max") for c in chunks), max)),
        ",".join(encodings) or "-",
        ",".join(codecs) or "-",
    ]


def render_inspect(info: dict[str, Any]) -> str:
    """The human-readable ``fermion inspect`` report of a ``FileReader.describe()`` dict.

    Shows the file facts and footer, the schema of the described columns and, per column,
    where its metadata block (CMB) lies and one line per stream summed over the stripes:
    desc type, chunks, pages, bytes, nulls, min, max, encodings and compressions.

    Example:
        >>> info = {"path": "t.fermion", "file_size": 10, "format_version": "1.0",
        ...         "num_rows": 0, "num_columns": 0, "num_stripes": 0, "features": [],
        ...         "footer": {}, "stripes": [], "columns": []}
        >>> render_inspect(info).splitlines()[0]
        'file      t.fermion'
    """
    lines: list[str] = []
    stripes: list[dict[str, Any]] = list(info.get("stripes") or [])
    columns: list[dict[str, Any]] = list(info.get("columns") or [])
    lines.append(f"file      {info.get('path', '?')}")
    lines.append(f"size      {_num(info.get('file_size', '?'))} bytes")
    lines.append(f"version   {info.get('format_version', '?')}")
    features = info.get("features") or []
    lines.append(f"features  {', '.join(map(str, features)) if features else '-'}")
    lines.append(f"rows      {_num(info.get('num_rows', '?'))}")
    shown = f" (showing {len(columns)})" if len(columns) != info.get("num_columns") else ""
    lines.append(f"columns   {_num(info.get('num_columns', '?'))}{shown}")
    row_counts = [_num(s.get("rows", "?")) for s in stripes[:8]]
    more = f", … {len(stripes) - 8} more" if len(stripes) > 8 else ""
    detail = f" (rows: {', '.join(row_counts)}{more})" if stripes else ""
    lines.append(f"stripes   {_num(info.get('num_stripes', len(stripes)))}{detail}")
    batch = info.get("batch_mode")
    if batch:
        per = [_num(int(n)) for n in (batch.get("batches_per_stripe") or [])]
        more_b = f", … {len(per) - 8} more" if len(per) > 8 else ""
        lines.append(
            f"batches   {_num(batch.get('num_batches', '?'))} (per stripe: "
            f"{', '.join(per[:8])}{more_b})"
        )
        pages = batch.get("pages_per_batch") or {}
        exact = {k: v for k, v in pages.items() if "max" in v}
        if exact:
            worst = max(int(v["max"]) for v in exact.values())
            mean = max(float(v["mean"]) for v in exact.values())
            lines.append(
                f"          pages per batch and stream: at most {worst}, "
                f"mean {mean:g} ({len(exact)} top-level streams)"
            )
    footer = info.get("footer") or {}
    if footer:
        lines.append("")
        lines.append("footer")
        width = max(len(str(k)) for k in footer)
        lines.extend(f"  {str(k).ljust(width)}  {v}" for k, v in footer.items())
    lines.append("")
    lines.append("schema")
    lines.extend(
        _table(
            ["#", "name", "type", "field_id"],
            [[c.get("index"), c.get("name"), c.get("type"), c.get("field_id")] for c in columns],
        )
    )
    for col in columns:
        lines.append("")
        lines.append(f"column {col.get('name')} (#{col.get('index')}, {col.get('type')})")
        if not col.get("has_cmb"):
            lines.append("  no CMB: every value is null (zero data IO)")
            continue
        offset = col.get("cmb_offset")
        where = "" if offset is None else f" at offset {_num(offset)}"
        lines.append(f"  CMB{where}: {_num(col.get('cmb_size'))} bytes")
        header = ["stream", "type", "desc", "chunks", "pages", "bytes", "nulls", "min", "max"]
        header += ["encodings", "compressions"]
        lines.extend(_table(header, [_stream_row(s) for s in col.get("streams") or []]))
    return "\n".join(lines) + "\n"
