"""Scenario ids (stable) and the cases each one measures.

A :class:`Case` is one (scenario, variant): what to time (``kind``), on which dataset, for
which systems. The worker turns a case into the operation it times; see ``benchmarks.worker``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa

from benchmarks import datagen
from benchmarks.config import Sizes

__all__ = ["SCENARIOS", "Case", "Dataset", "Kind", "cases"]

Kind = Literal["schema", "read", "scan", "take", "write", "size"]

#: Stable scenario ids, in report order, with what each one times.
SCENARIOS: dict[str, str] = {
    "wide_open_schema": "open the file and get its schema, nothing else",
    "wide_read10": "open + read 10 evenly spaced columns to Arrow",
    "wide_scaling": "open + read 10 evenly spaced columns, growing total column count",
    "lineitem_write": "write the in-memory lineitem table to one file",
    "lineitem_size": "bytes on disk of the written lineitem file",
    "lineitem_scan": "open + read every column and row to Arrow",
    "lineitem_take1000": "open + take 1,000 random rows (sorted), all columns",
    "nested_read": "open + read both nested columns to Arrow",
}

ALL = ("fermion", "parquet", "lance", "lance-dataset")
FILE_ONLY = ("fermion", "parquet", "lance")


@dataclass(frozen=True)
class Dataset:
    """A deterministic table every system writes its own copy of."""

    family: Literal["wide", "lineitem", "nested"]
    rows: int = 0
    cols: int = 0
    scale: float = 0.0

    @property
    def id(self) -> str:
        if self.family == "wide":
            return f"wide-{self.cols}x{self.rows}"
        if self.family == "lineitem":
            return f"lineitem-sf{self.scale:g}"
        return f"nested-{self.rows}"

    def build(self, data_dir: Path) -> pa.Table:
        """Generate (or load) the table."""
        if self.family == "wide":
            return datagen.wide_table(self.cols, self.rows)
        if self.family == "lineitem":
            return datagen.load_lineitem(datagen.lineitem_source(data_dir, self.scale))
        return datagen.nested_table(self.rows)

    def check_columns(self) -> list[str] | None:
        """The columns a read-back check compares (``None``: all of them)."""
        if self.family == "wide":
            return datagen.evenly_spaced_columns(self.cols)
        return None

    def to_json(self) -> dict[str, Any]:
        return {"family": self.family, "rows": self.rows, "cols": self.cols, "scale": self.scale}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Dataset:
        return cls(**data)


@dataclass(frozen=True)
class Case:
    """One (scenario, variant) and the systems it compares."""

    scenario: str
    variant: str
    kind: Kind
    dataset: Dataset
    systems: tuple[str, ...]
    columns: tuple[str, ...] | None = None
    take_count: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "variant": self.variant,
            "kind": self.kind,
            "dataset": self.dataset.to_json(),
            "systems": list(self.systems),
            "columns": None if self.columns is None else list(self.columns),
            "take_count": self.take_count,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Case:
        return cls(
            scenario=data["scenario"],
            variant=data["variant"],
            kind=data["kind"],
            dataset=Dataset.from_json(data["dataset"]),
            systems=tuple(data["systems"]),
            columns=None if data["columns"] is None else tuple(data["columns"]),
            take_count=data["take_count"],
        )


def _shape(cols: int, rows: int) -> str:
    return f"{cols:,} cols x {rows:,} rows"


def cases(sizes: Sizes, only: set[str] | None = None) -> list[Case]:
    """Every case of the given sizes, restricted to scenario ids in ``only`` if given."""
    wide = Dataset("wide", rows=sizes.wide_rows, cols=sizes.wide_cols)
    wide_cols = tuple(datagen.evenly_spaced_columns(sizes.wide_cols))
    lineitem = Dataset("lineitem", scale=sizes.lineitem_scale)
    sf = f"SF{sizes.lineitem_scale:g}"
    nested = Dataset("nested", rows=sizes.nested_rows)
    out = [
        Case("wide_open_schema", _shape(wide.cols, wide.rows), "schema", wide, ALL),
        Case("wide_read10", _shape(wide.cols, wide.rows), "read", wide, ALL, wide_cols),
    ]
    for ncols in sizes.scaling_cols:
        ds = Dataset("wide", rows=sizes.scaling_rows, cols=ncols)
        columns = tuple(datagen.evenly_spaced_columns(ncols))
        out.append(Case("wide_scaling", _shape(ncols, ds.rows), "read", ds, FILE_ONLY, columns))
    out += [
        Case("lineitem_write", sf, "write", lineitem, FILE_ONLY),
        Case("lineitem_size", sf, "size", lineitem, ALL),
        Case("lineitem_scan", sf, "scan", lineitem, ALL),
        Case(
            "lineitem_take1000",
            f"{sf}, {sizes.take_rows:,} random rows",
            "take",
            lineitem,
            ALL,
            take_count=sizes.take_rows,
        ),
        Case("nested_read", f"{nested.rows:,} rows", "scan", nested, FILE_ONLY),
    ]
    return [c for c in out if only is None or c.scenario in only]
