"""Rewrites conserve live rows: what a compaction or materialisation wrote, checked before
it commits.

For every rewritten group the new fragments (as their writer described them) must hold
exactly the group's live rows, and none may carry deleted rows. The task API trusts each
task's own row count; this check reads the fragments the task returned instead, so a writer
that lost or duplicated rows is caught before the ``Rewrite`` commit.

Example:
    >>> import tempfile, pyarrow as pa, fermion.table as ft
    >>> from fermion.table.tasks import plan_compaction, execute_rewrite
    >>> uri = tempfile.mkdtemp()
    >>> _ = ft.write_dataset(pa.table({"x": list(range(6))}), uri, max_rows_per_file=2)
    >>> plan = plan_compaction(uri, target_rows_per_fragment=100)
    >>> check = check_rows_conserved(plan, [execute_rewrite(t) for t in plan.tasks])
    >>> check.success, check.rows_in, check.rows_out
    (True, 6, 6)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from fermion.table.tasks import RewritePlan, RewriteResult, unit_live_rows

__all__ = ["ConservationResult", "check_rows_conserved"]


@dataclass(frozen=True)
class ConservationResult:
    """Rows in (live rows of the rewritten groups) against rows out (their new fragments)."""

    rows_in: int
    rows_out: int
    groups: int
    mismatched: list[dict[str, Any]] = field(default_factory=list)

    @property
    def success(self) -> bool:
        """True when every group's new fragments hold exactly its live rows."""
        return not self.mismatched

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (``check`` names the check, ``success`` is included)."""
        return {"check": "rows_conserved", "success": self.success, **asdict(self)}


def check_rows_conserved(plan: RewritePlan, results: Sequence[RewriteResult]) -> ConservationResult:
    """Compare each result's new fragments with its task's live rows (see the module doc).

    Tasks without a result are not counted (they commit nothing); the tasks of a unit
    split by batch-id range are checked together (each holds part of the unit's rows), and
    a unit with some of its results missing is a mismatch.
    """
    done = {result.task_id: result for result in results}
    rows_in = rows_out = 0
    groups = 0
    mismatched = []
    for unit, members in plan.units().items():
        got = [done[t.task_id] for t in members if t.task_id in done]
        if not got:
            continue
        groups += len(got)
        # a unit split by batch-id range: its tasks together hold its fragments' rows
        expected = unit_live_rows(members)
        written = sum(f.physical_rows for r in got for f in r.new_fragments)
        deleted = sum(f.deleted_rows for r in got for f in r.new_fragments)
        rows_in += expected
        rows_out += written - deleted
        if written != expected or deleted or len(got) != len(members):
            name = members[0].task_id if len(members) == 1 else f"{unit} ({len(members)} tasks)"
            mismatched.append(
                {"task": name, "live_rows": expected, "written": written,
                 "deleted": deleted}
            )  # fmt: skip
    return ConservationResult(rows_in, rows_out, groups, mismatched)
