"""A JSON-able description of a Fermion file's physical layout (``fermion inspect``).

Example:
    >>> import pyarrow as pa, tempfile, os
    >>> from fermion.format.write.writer import write_table
    >>> from fermion.format.read.reader import FileReader
    >>> path = os.path.join(tempfile.mkdtemp(), "d.fermion")
    >>> write_table(pa.table({"a": [1, None]}), path)
    >>> d = FileReader(path).describe()
    >>> d["num_rows"], d["columns"][0]["streams"][0]["desc_type"]
    (2, 'SIMPLE')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fermion.format.metadata.cmb import ColumnMeta, StreamDesc
from fermion.format.metadata.layout import Node
from fermion.format.metadata.stats import bound_scalars, stats_kind
from fermion.format.metadata.structs import (
    CHUNK_ALL_NULL,
    PAGE_HEADER_DTYPE,
    Compression,
    DescType,
    Encoding,
    OptionalFeature,
    RequiredFeature,
    StreamType,
)
from fermion.format.read.batch_read import describe_batches
from fermion.format.read.metadata import MetadataReader
from fermion.format.read.plan import Projection

__all__ = ["describe_file"]


def _flags(value: int, enum: Any) -> list[str]:
    return [str(f.name) for f in enum if value & f.value]


def _bound(t: Any, lo: int, hi: int, flags: int) -> tuple[Any, Any]:
    bounds = bound_scalars(t, stats_kind(t), lo, hi, flags)
    if bounds is None:
        return None, None
    low, high = bounds
    return _jsonable(low.as_py()), _jsonable(high.as_py())


def _jsonable(v: Any) -> Any:
    if isinstance(v, int | float | str | bool) or v is None:
        return v
    if isinstance(v, bytes):
        return v.hex()
    return str(v)


def describe_file(meta: MetadataReader, projs: Sequence[Projection]) -> dict[str, Any]:
    """Describe footer, stripes and the CMBs of the projected columns (reads the page
    headers of the described chunks).

    Args:
        meta: the open file's metadata.
        projs: the columns to describe (``meta.projections(None)`` for all).

    Example:
        >>> import pyarrow as pa, tempfile, os
        >>> from fermion.format.options import ReadOptions
        >>> from fermion.format.write.writer import write_table
        >>> from fermion.io.source import open_source
        >>> path = os.path.join(tempfile.mkdtemp(), "df.fermion")
        >>> write_table(pa.table({"a": [1, 2], "b": ["x", None]}), path)
        >>> meta = MetadataReader(open_source(path), ReadOptions())
        >>> d = describe_file(meta, meta.projections(["b"]))
        >>> [c["name"] for c in d["columns"]], d["stripes"]
        (['b'], [{'index': 0, 'rows': 2}])
        >>> meta.source.close()
    """
    info = meta.file_metadata
    metas = meta.column_metas(projs)
    rows = meta.stripe_rows(metas)
    cmb_offsets = meta.cmb_offsets([p.info.index for p in projs])
    described = []
    for p, m, cmb_offset in zip(projs, metas, cmb_offsets, strict=True):
        paths = _node_paths(p.tree)
        streams = []
        nodes = {node.index: node for node in p.tree.walk()}
        for spec in p.tree.all_streams():
            desc = m.streams[spec.index]
            node = nodes[spec.node]
            streams.append(
                {
                    "node": spec.node,
                    "path": paths[spec.node],
                    "stream_type": StreamType(spec.stream_type).name,
                    "desc_type": DescType(desc.desc_type).name,
                    "chunks": _chunks(meta, node.type, spec.stream_type, desc),
                }
            )
        described.append(
            {
                "index": p.info.index,
                "name": p.info.field.name,
                "type": str(p.field.type),
                "field_id": int(p.info.field_ids[0]) if len(p.info.field_ids) else None,
                "has_cmb": m.present,
                "cmb_offset": cmb_offset,
                "cmb_size": m.size,
                "streams": streams,
            }
        )
    return {
        "path": meta.source.name,
        "file_size": info.file_size,
        "format_version": info.format_version,
        "num_rows": info.num_rows,
        "num_columns": info.num_columns,
        "num_stripes": info.num_stripes,
        "features": _flags(info.required_features, RequiredFeature)
        + _flags(info.optional_features, OptionalFeature),
        "footer": {
            "cmb_offset": meta.cmb_offset,
            "schema_offset": meta.schema_offset,
            "cit_offset": meta.cit_offset,
        },
        "stripes": [{"index": i, "rows": int(r)} for i, r in enumerate(rows)],
        "columns": described,
        "batch_mode": _batch_mode(meta, projs, metas) if meta.batch_mode else None,
    }


def _batch_mode(
    meta: MetadataReader, projs: Sequence[Projection], metas: Sequence[ColumnMeta]
) -> dict[str, Any]:
    """Batches per stripe and the pages each batch touches in every described stream."""
    streams: dict[str, tuple[bool, list[np.ndarray]]] = {}
    for p, m in zip(projs, metas, strict=True):
        if not m.present:
            continue
        paths = _node_paths(p.tree)
        for spec in p.tree.all_streams():
            desc = m.streams[spec.index]
            if desc.full is None:
                continue
            key = f"{paths[spec.node]}:{StreamType(spec.stream_type).name}"
            counts = [desc.pages(s)["row_count"] for s in range(meta.num_stripes)]
            streams[key] = (spec.node == 0, counts)
    return describe_batches(meta.batches(), streams)


def _node_paths(tree: Node) -> dict[int, str]:
    """Dotted path of every node of a column (``col.child.item``)."""
    out: dict[int, str] = {}

    def visit(node: Node, prefix: str) -> None:
        path = f"{prefix}.{node.name}" if prefix else node.name
        out[node.index] = path
        for child in node.children:
            visit(child, path)

    visit(tree, "")
    return out


def _chunks(
    meta: MetadataReader, t: Any, stream_type: int, desc: StreamDesc
) -> list[dict[str, Any]]:
    chunks: list[dict[str, Any]] = []
    if desc.desc_type == DescType.SIMPLE and desc.simple is not None:
        for s, d in enumerate(desc.simple):
            length = int(d["length"])
            values = int(d["num_values"])
            state = "bitmap"
            if length == CHUNK_ALL_NULL:
                state = "all_null"
            elif length == 0:
                state = "all_valid"
            chunks.append(
                {
                    "stripe": s,
                    "offset": int(d["offset"]),
                    "length": length if state == "bitmap" else 0,
                    "state": state,
                    "num_values": values,
                    "null_count": {"all_null": values, "all_valid": 0}.get(state),
                    "num_pages": 1 if state == "bitmap" else 0,
                    **_page_codecs(meta, [int(d["offset"])] if state == "bitmap" else []),
                }
            )
    elif desc.desc_type == DescType.FULL and desc.full is not None:
        for s, d in enumerate(desc.full):
            lo: Any = None
            hi: Any = None
            if stream_type == StreamType.DATA:
                lo, hi = _bound(t, int(d["chunk_min"]), int(d["chunk_max"]), int(d["stats_flags"]))
            chunks.append(
                {
                    "stripe": s,
                    "offset": int(d["offset"]),
                    "length": int(d["length"]),
                    "num_values": int(d["num_values"]),
                    "null_count": int(d["null_count"]),
                    "min": lo,
                    "max": hi,
                    "num_pages": int(d["num_pages"]),
                    **_page_codecs(meta, [int(o) for o in desc.page_offsets(s)]),
                }
            )
    return chunks


def _page_codecs(meta: MetadataReader, offsets: list[int]) -> dict[str, Any]:
    """Encodings and compressions actually used by the pages at ``offsets``."""
    if not offsets:
        return {"encodings": [], "compressions": []}
    hsize = PAGE_HEADER_DTYPE.itemsize
    raws = meta.source.read_ranges([(o, hsize) for o in offsets], max_gap=1 << 20)
    heads = [np.frombuffer(r, dtype=PAGE_HEADER_DTYPE, count=1)[0] for r in raws]

    def name(enum: Any, v: int) -> str:
        try:
            return str(enum(v).name)
        except ValueError:
            return f"unknown({v})"

    return {
        "encodings": sorted({name(Encoding, int(h["encoding"])) for h in heads}),
        "compressions": sorted({name(Compression, int(h["compression"])) for h in heads}),
    }
