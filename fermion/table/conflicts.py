"""The conflict matrix: may my transaction commit on top of one committed since I read?

One table, :data:`MATRIX`, keyed by (my operation, their operation). Each cell is a
:class:`Verdict` or a rule that looks at the fragments both touch:

========== ======== ========== ========= ============ ============= ========= =========
mine       append   delete     rewrite   create_index schema_change overwrite restore
========== ======== ========== ========= ============ ============= ========= =========
append     OK***    OK         OK        OK           OK            NO        NO
delete     OK       rebase*    R*        OK           OK            NO        NO
rewrite    OK       R*         R*        OK           OK            NO        NO
create_idx OK       R**        R*        OK           OK            R         R
schema     OK       OK         OK        OK           R             NO        NO
overwrite  OK       OK         OK        OK           OK            OK        OK
restore    OK       OK         OK        OK           OK            OK        OK
========== ======== ========== ========= ============ ============= ========= =========

``*``: only when both touch a common fragment, otherwise OK. ``***``: incompatible when
both record the same input (a configuration key with ``INPUT_KEY_PREFIX``, set by an
ingest), so the same input is never appended twice; otherwise OK. ``**``: only when the
delete removes a covered fragment entirely (more deleted rows keep statistics valid bounds).
``rebase``: a delete of the same fragment is merged by OR-ing the deletion bitmaps when the
rows are disjoint; overlapping rows make it retryable (the commit loop decides, since it
must read the bitmaps). ``R`` is retryable (re-plan on the new version), ``NO`` is
incompatible (the transaction cannot happen). A compaction never commits over a delete of
its fragments, so it cannot resurrect deleted rows; an index never covers fragments a
concurrent rewrite removed. An unknown operation (``None``) is always incompatible: be
conservative.

Example:
    >>> from fermion.table.operations import Restore, SchemaChange
    >>> check(Restore(2), Restore(3))
    <Verdict.OK: 'ok'>
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from fermion.table.operations import (
    INPUT_KEY_PREFIX,
    Append,
    Delete,
    Operation,
    touched_fragment_ids,
)

__all__ = ["MATRIX", "Verdict", "check"]


class Verdict(enum.Enum):
    """Outcome of checking my operation against one committed since my read version."""

    OK = "ok"
    REBASE = "rebase"  # merge deletion bitmaps, then commit (or retry if rows overlap)
    RETRY = "retry"  # retryable: re-plan the operation on the newer version
    INCOMPATIBLE = "incompatible"  # not retryable


Rule = Callable[[Operation, Operation], Verdict]
Cell = Verdict | Rule

OK, R, NO = Verdict.OK, Verdict.RETRY, Verdict.INCOMPATIBLE


def _if_overlap(verdict: Verdict) -> Rule:
    def rule(mine: Operation, theirs: Operation) -> Verdict:
        return verdict if touched_fragment_ids(mine) & touched_fragment_ids(theirs) else OK

    return rule


_REBASE_IF_OVERLAP = _if_overlap(Verdict.REBASE)
_RETRY_IF_OVERLAP = _if_overlap(R)


def _no_if_same_config(mine: Operation, theirs: Operation) -> Verdict:
    """Two appends recording the same input (config key) cannot both commit."""
    if isinstance(mine, Append) and isinstance(theirs, Append):
        same = mine.config.keys() & theirs.config.keys()
        return NO if any(k.startswith(INPUT_KEY_PREFIX) for k in same) else OK
    return OK


def _retry_if_removed(mine: Operation, theirs: Operation) -> Verdict:
    """An index only cares about fragments that disappear (more deletions keep stats valid)."""
    removed = set(theirs.deleted_fragment_ids) if isinstance(theirs, Delete) else set()
    return R if touched_fragment_ids(mine) & removed else OK


#: (mine, theirs) -> verdict or rule. Keys are ``Operation.name``.
MATRIX: dict[str, dict[str, Cell]] = {
    "append": {
        "append": _no_if_same_config, "delete": OK, "rewrite": OK, "create_index": OK,
        "schema_change": OK, "overwrite": NO, "restore": NO,
    },
    "delete": {
        "append": OK, "delete": _REBASE_IF_OVERLAP, "rewrite": _RETRY_IF_OVERLAP,
        "create_index": OK, "schema_change": OK, "overwrite": NO, "restore": NO,
    },
    "rewrite": {
        "append": OK, "delete": _RETRY_IF_OVERLAP, "rewrite": _RETRY_IF_OVERLAP,
        "create_index": OK, "schema_change": OK, "overwrite": NO, "restore": NO,
    },
    "create_index": {
        "append": OK, "delete": _retry_if_removed, "rewrite": _RETRY_IF_OVERLAP,
        "create_index": OK, "schema_change": OK, "overwrite": R, "restore": R,
    },
    "schema_change": {
        "append": OK, "delete": OK, "rewrite": OK, "create_index": OK,
        "schema_change": R, "overwrite": NO, "restore": NO,
    },
    "overwrite": {
        "append": OK, "delete": OK, "rewrite": OK, "create_index": OK,
        "schema_change": OK, "overwrite": OK, "restore": OK,
    },
    "restore": {
        "append": OK, "delete": OK, "rewrite": OK, "create_index": OK,
        "schema_change": OK, "overwrite": OK, "restore": OK,
    },
}  # fmt: skip


def check(mine: Operation, theirs: Operation | None) -> Verdict:
    """Look up (and evaluate) the cell for ``mine`` against a committed ``theirs``.

    Example:
        >>> from fermion.table.operations import Delete, Rewrite, RewriteGroup
        >>> from fermion.table.proto import manifest_pb2 as pb
        >>> gone = Delete(deleted_fragment_ids=(3,))
        >>> check(Rewrite((RewriteGroup((3, 4), ()),)), gone)
        <Verdict.RETRY: 'retry'>
        >>> check(Rewrite((RewriteGroup((5,), ()),)), gone)
        <Verdict.OK: 'ok'>
    """
    if theirs is None:
        return NO
    cell = MATRIX[mine.name].get(theirs.name, NO)
    return cell if isinstance(cell, Verdict) else cell(mine, theirs)
