"""Quality suites declared in YAML (``conf/quality/<name>.yaml``), loaded and validated.

A suite file has these keys (all but ``suite`` optional)::

    suite: features                 # the suite's name (GX suite name, report file names)
    row_count: {min: 1, max: 5000000}
    not_null: [request_id, label]   # columns that never hold a null
    unique:                         # keys: a column, or a list of columns unique together
      - row_id
      - [request_id, position]
    ranges:                         # value bounds per column (either bound may be omitted)
      label: {min: 0, max: 1}
    batch_integrity:                # fragment-level check on the committed table
      column: request_id

An unknown key, a value of the wrong type or a missing name raises :class:`SuiteError`
naming the key and the file.

Example:
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "s.yaml"
    >>> _ = path.write_text("suite: s\\nnot_null: [a]\\nranges: {a: {min: 0}}\\n")
    >>> suite = load_suite(path)
    >>> suite.name, suite.not_null, suite.ranges[0]
    ('s', ('a',), ValueRange(column='a', min=0, max=None))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fermion.errors import InvalidArgumentError

__all__ = ["RowCount", "Suite", "SuiteError", "ValueRange", "load_suite"]

_KEYS = ("suite", "row_count", "not_null", "unique", "ranges", "batch_integrity")
_BOUND_KEYS = ("min", "max")


class SuiteError(InvalidArgumentError):
    """A quality suite file is missing, unparsable, or has a wrong or unknown key."""


@dataclass(frozen=True)
class RowCount:
    """Bounds on the number of rows (inclusive; ``None``: unbounded)."""

    min: int | None = None
    max: int | None = None


@dataclass(frozen=True)
class ValueRange:
    """Bounds on one column's values (inclusive; ``None``: unbounded; nulls not counted)."""

    column: str
    min: float | None = None
    max: float | None = None


@dataclass(frozen=True)
class Suite:
    """A declared quality suite: what :func:`fermion.quality.validate_dataframe` checks."""

    name: str
    path: str
    row_count: RowCount | None = None
    not_null: tuple[str, ...] = ()
    unique: tuple[tuple[str, ...], ...] = ()
    ranges: tuple[ValueRange, ...] = ()
    batch_id_column: str | None = None

    @property
    def columns(self) -> list[str]:
        """The columns the suite's expectations read, in first-mention order.

        Example:
            >>> Suite("s", "s.yaml", not_null=("a",), unique=(("b", "a"),)).columns
            ['a', 'b']
        """
        named = [*self.not_null, *(c for key in self.unique for c in key)]
        named += [r.column for r in self.ranges]
        return list(dict.fromkeys(named))


def load_suite(path: str | Path) -> Suite:
    """Read and validate a suite file.

    Raises:
        SuiteError: The file is missing or not YAML, or a key is unknown or mistyped.

    Example:
        >>> load_suite("no/such/suite.yaml")
        Traceback (most recent call last):
        ...
        fermion.quality.suite.SuiteError: no/such/suite.yaml: cannot read the suite file ...
    """
    where = str(path)
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SuiteError(f"{where}: cannot read the suite file ({detail})") from None
    if not isinstance(raw, Mapping):
        raise SuiteError(f"{where}: a suite file is a mapping of keys ({', '.join(_KEYS)})")
    unknown = sorted(set(raw) - set(_KEYS))
    if unknown:
        known = ", ".join(_KEYS)
        raise SuiteError(f"{where}: key {unknown[0]!r}: unknown key (known keys: {known})")
    name = raw.get("suite")
    if not isinstance(name, str) or not name:
        raise SuiteError(f"{where}: key 'suite': a non-empty name is required")
    return Suite(
        name=name,
        path=where,
        row_count=_row_count(raw.get("row_count"), where),
        not_null=_names(raw.get("not_null", []), "not_null", where),
        unique=_keys(raw.get("unique", []), where),
        ranges=_ranges(raw.get("ranges", {}), where),
        batch_id_column=_batch_column(raw.get("batch_integrity"), where),
    )


def _bounds(value: Any, key: str, where: str, *, integer: bool) -> tuple[Any, Any]:
    if not isinstance(value, Mapping) or set(value) - set(_BOUND_KEYS):
        raise SuiteError(f"{where}: key {key!r}: expected a mapping with min and/or max")
    bounds = []
    for bound in _BOUND_KEYS:
        got = value.get(bound)
        allowed = (int,) if integer else (int, float)
        if got is not None and (isinstance(got, bool) or not isinstance(got, allowed)):
            kind = "an integer" if integer else "a number"
            raise SuiteError(f"{where}: key '{key}.{bound}': expected {kind}, got {got!r}")
        bounds.append(got)
    low, high = bounds
    if low is not None and high is not None and low > high:
        raise SuiteError(f"{where}: key {key!r}: min {low} is above max {high}")
    return low, high


def _row_count(value: Any, where: str) -> RowCount | None:
    if value is None:
        return None
    low, high = _bounds(value, "row_count", where, integer=True)
    return RowCount(low, high)


def _names(value: Any, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise SuiteError(f"{where}: key {key!r}: expected a list of column names")
    return tuple(value)


def _keys(value: Any, where: str) -> tuple[tuple[str, ...], ...]:
    if not isinstance(value, list):
        raise SuiteError(f"{where}: key 'unique': expected a list of columns or column lists")
    return tuple(_names(key, "unique", where) for key in value)


def _ranges(value: Any, where: str) -> tuple[ValueRange, ...]:
    if not isinstance(value, Mapping):
        raise SuiteError(f"{where}: key 'ranges': expected a mapping of column -> {{min, max}}")
    return tuple(
        ValueRange(str(column), *_bounds(bounds, f"ranges.{column}", where, integer=False))
        for column, bounds in value.items()
    )


def _batch_column(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != {"column"}:
        raise SuiteError(f"{where}: key 'batch_integrity': expected {{column: <batch id column>}}")
    column = value["column"]
    if not isinstance(column, str) or not column:
        raise SuiteError(f"{where}: key 'batch_integrity.column': expected a column name")
    return column
