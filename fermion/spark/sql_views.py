"""Which views :func:`fermion.spark.sql` registers: one per reference, with the rows it may skip.

A view of a Fermion table is fixed when it is loaded (docs/SPARK.md, "Filters"), so a
filter can only be given to a view that exactly one reference of the query reads. This
module walks the query's syntax tree (sqlglot) and, for each reference of a table in
``FROM`` / ``JOIN``, finds the conjuncts of its ``SELECT``'s ``WHERE`` that

- read only that reference's columns (qualified by its alias, or unqualified names that no
  other source of that ``SELECT`` can have: every other source is a Fermion table of
  known columns without the name);
- sit in a ``SELECT`` whose joins are all inner or cross (no outer, semi or anti join, no
  lateral view), on a reference without sampling, pivots or other modifiers;
- contain no subquery, and are in the shapes Fermion evaluates exactly as Spark does
  (:func:`fermion.spark.filters.exact_conjuncts`).

Such a conjunct removes every row of that reference it is not TRUE for, after the joins,
before grouping. Reading the reference's rows without those rows therefore gives the same
answer, and Spark still applies the whole ``WHERE`` itself. A table read by one reference
keeps its view name and the query text is unchanged; a table read by several (a self-join,
a subquery over the same table) gets one view per reference that has a filter, named
``__fermion_<table>_<k>``, and the query is rewritten to read those (the reference keeps
its alias, or gets the table's name as one, so qualified names still resolve).

Example:
    >>> import pyarrow as pa
    >>> s = {"t": pa.schema([("k", pa.int64()), ("v", pa.float64())])}
    >>> plan = plan_views("SELECT sum(v) FROM t WHERE k > 5 AND v < 1.0", s)
    >>> plan.query is None, plan.filters
    (True, {'t': 'k > 5'})
    >>> plan = plan_views(
    ...     "SELECT count(*) FROM t a JOIN t b ON a.k = b.k WHERE a.k = 1 AND b.k < 3", s)
    >>> plan.filters
    {'t': None, '__fermion_t_0': 'k = 1', '__fermion_t_1': 'k < 3'}
    >>> plan.query.split(" WHERE ")[0]
    'SELECT COUNT(*) FROM __fermion_t_0 AS a JOIN __fermion_t_1 AS b ON a.k = b.k'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import sqlglot
from sqlglot import expressions as exp

from fermion.spark.filters import conjuncts, exact_conjuncts

__all__ = ["ViewPlan", "plan_views"]

#: Modifiers of a table reference that are safe for filtering its rows first.
_PLAIN_TABLE_ARGS = frozenset({"this", "alias"})


@dataclass
class ViewPlan:
    """The views to register and the query to run over them.

    Attributes:
        query: The rewritten query, or ``None`` to run the caller's text unchanged.
        filters: View name → the table it reads → its ``filter`` option (``None``: all rows).
            Every table of the input has a view of its own name (with a filter only when
            one reference reads it).
        sources: View name → the table name (a key of the input schemas) it reads.
    """

    query: str | None
    filters: dict[str, str | None] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)


def plan_views(query: str, schemas: Mapping[str, pa.Schema]) -> ViewPlan:
    """The views :func:`fermion.spark.sql` registers for ``query`` over ``schemas``' tables.

    Args:
        query: Spark SQL text.
        schemas: Table (view) name → the table's Arrow schema.

    Returns:
        A :class:`ViewPlan`. Text sqlglot cannot parse gives plain views and the query
        unchanged (Spark still runs it, or says why not).

    Example:
        >>> import pyarrow as pa
        >>> plan_views("SELECT * FROM t LEFT JOIN u ON t.k = u.k WHERE t.k = 1",
        ...            {"t": pa.schema([("k", pa.int64())])}).filters
        {'t': None}
    """
    plan = ViewPlan(None, {name: None for name in schemas}, {name: name for name in schemas})
    try:
        tree = sqlglot.parse_one(query, read="spark")
    except sqlglot.errors.SqlglotError:
        return plan
    if tree is None:
        return plan
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    lowered = {name.lower(): name for name in schemas}
    refs: dict[str, list[exp.Table]] = {}
    for table in tree.find_all(exp.Table):
        name = lowered.get(table.name.lower())
        if name is None or table.args.get("db") or table.args.get("catalog"):
            continue
        if name.lower() in ctes:  # a CTE of the same name shadows the view
            continue
        refs.setdefault(name, []).append(table)
    rewritten = False
    for name, tables in refs.items():
        filters = [_reference_filter(t, name, schemas) for t in tables]
        if len(tables) == 1:
            plan.filters[name] = filters[0]
            continue
        if not any(filters):
            continue
        for k, (table, text) in enumerate(zip(tables, filters, strict=True)):
            if text is None:
                continue
            view = f"__fermion_{name}_{k}"
            if not table.args.get("alias"):
                table.set("alias", exp.TableAlias(this=exp.to_identifier(table.name)))
            table.set("this", exp.to_identifier(view))
            plan.filters[view] = text
            plan.sources[view] = name
            rewritten = True
    if rewritten:
        plan.query = tree.sql(dialect="spark")
    return plan


def _reference_filter(table: exp.Table, name: str, schemas: Mapping[str, pa.Schema]) -> str | None:
    """The ``filter`` option for the rows one reference may skip, or ``None``."""
    if any(v for k, v in table.args.items() if k not in _PLAIN_TABLE_ARGS):
        return None
    holder = table.parent
    select = holder.parent if isinstance(holder, exp.From | exp.Join) else None
    if not isinstance(select, exp.Select) or select.args.get("laterals"):
        return None
    where = select.args.get("where")
    if where is None:
        return None
    joins = select.args.get("joins") or []
    for join in joins:
        if join.side or join.kind not in ("", "INNER", "CROSS"):
            return None
    own = {n.lower() for n in schemas[name].names}
    others = _other_columns(select, table, schemas)
    alias = table.alias_or_name.lower()
    kept = []
    for conjunct in conjuncts(where.this):
        if conjunct.find(exp.Subquery, exp.Select, exp.Exists):
            continue
        if not all(_belongs(c, alias, own, others) for c in conjunct.find_all(exp.Column)):
            continue
        local = conjunct.copy()
        for column in local.find_all(exp.Column):
            column.set("table", None)
        kept.append(f"({local.sql(dialect='spark')})")
    if not kept:
        return None
    return exact_conjuncts(" AND ".join(kept), schemas[name])


def _other_columns(
    select: exp.Select, table: exp.Table, schemas: Mapping[str, pa.Schema]
) -> set[str] | None:
    """The lower-case column names of the select's other sources; ``None`` if unknown."""
    lowered = {n.lower(): n for n in schemas}
    sources: list[Any] = []
    start = select.args.get("from_") or select.args.get("from")
    if start is not None:
        sources.append(start.this)
    sources += [join.this for join in select.args.get("joins") or []]
    names: set[str] = set()
    for source in sources:
        if source is table:
            continue
        known = isinstance(source, exp.Table) and not source.args.get("db")
        name = lowered.get(source.name.lower()) if known else None
        if name is None:
            return None
        names |= {n.lower() for n in schemas[name].names}
    return names


def _belongs(column: exp.Column, alias: str, own: set[str], others: set[str] | None) -> bool:
    """``column`` is certainly the reference's own column in this ``SELECT``."""
    if column.args.get("db") or column.args.get("catalog"):
        return False
    if column.table:
        return column.table.lower() == alias and column.name.lower() in own
    return column.name.lower() in own and others is not None and column.name.lower() not in others
