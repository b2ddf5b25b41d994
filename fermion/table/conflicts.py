"""The conflict matrix: may my transaction commit on top of one committed since I read?

One table, :data:`MATRIX`, keyed by (my operation, their operation), assembled from the
rows the operation types declare in their own modules (``CONFLICTS``, and
``CONFLICTS_AS_THEIRS`` for cells of older types' rows against a newer one). Every pair must
have exactly one cell; :func:`build_matrix` refuses a gap or a double declaration. Each
cell is a :class:`Verdict` or a rule that looks at the fragments both touch (``index``:
create_index, ``cfg``: update_config):

========= ====== ======= ======= ===== ====== ========= ======= ======= ======= ====== ======= ===
mine      append delete  rewrite index schema overwrite restore merge   update  addcol dropidx cfg
========= ====== ======= ======= ===== ====== ========= ======= ======= ======= ====== ======= ===
append    OK***  OK      OK      OK    OK     NO        NO      OK      OK      OK     OK      OK
delete    OK     rebase* R*      OK    OK     NO        NO      rebase* rebase* OK     OK      OK
rewrite   OK     R*      R*      OK    OK     NO        NO      R*      R*      R      OK      OK
index     OK     R**     R*      OK    OK     R         R       R**     R**     OK     OK      OK
schema    OK     OK      OK      OK    R      NO        NO      OK      OK      R      OK      OK
overwrite OK     OK      OK      OK    OK     OK        OK      OK      OK      OK     OK      OK
restore   OK     OK      OK      OK    OK     OK        OK      OK      OK      OK     OK      OK
merge     R+     rebase* R*      OK    OK     NO        NO      rebase+ rebase+ R      OK      OK
update    R+     rebase* R*      OK    OK     NO        NO      rebase+ rebase+ R      OK      OK
addcol    R      OK      R       OK    R      NO        NO      R       R       R      OK      OK
dropidx   OK     OK      OK      OK    OK     OK        OK      OK      OK      OK     OK      OK
cfg       OK     OK      OK      OK    OK     OK        OK      OK      OK      OK     OK      R*
========= ====== ======= ======= ===== ====== ========= ======= ======= ======= ====== ======= ===

``*``: only when both touch a common fragment, otherwise OK. ``***``: incompatible when
both record the same input (a configuration key with ``INPUT_KEY_PREFIX``, set by an
ingest), so the same input is never appended twice; otherwise OK. ``**``: only when the
delete removes a covered fragment entirely (more deleted rows keep statistics valid bounds).
``rebase``: a delete of the same fragment is merged by OR-ing the deletion bitmaps when the
rows are disjoint; overlapping rows make it retryable (the commit loop decides, since it
must read the bitmaps). ``merge`` (merge_insert) and ``update`` (update, replace_where)
delete their old rows as a delete does and add new fragments. ``R+``: retryable when the
merge inserted rows (an append may hold their keys) or the update is a replace_where (the
appended rows may match its predicate), otherwise OK. ``rebase+``: retryable when two
merges share a source key (compared by 64-bit key hashes), when either side is a
replace_where, or when an update sets a key column of a merge that inserted rows; otherwise
as ``rebase*``. ``**`` for merge and update: only when they empty a covered fragment.
``addcol`` (add_columns with values) gives every fragment a new data file: rows added
concurrently would lack the values, a concurrent compaction would drop them, a concurrent
schema change would be undone, so all of these make it (or them) re-plan.
``R`` is retryable (re-plan on the new version), ``NO`` is incompatible (the transaction
cannot happen). A compaction never commits over a delete of
its fragments, so it cannot resurrect deleted rows; an index never covers fragments a
concurrent rewrite removed (a scalar index's re-plan narrows its coverage to the fragments
still there; docs/TABLE_FORMAT.md, "Scalar indices"). ``drop_index`` touches no fragment and
commits over anything; so does ``update_config`` (the write properties: data written under
the old ones stays valid), except that for two ``update_config`` commits ``*`` means: when
both change a common key to different outcomes. An unknown operation (``None``) is always
incompatible: be conservative.

Example:
    >>> from fermion.table.operations import Restore, SchemaChange
    >>> check(Restore(2), Restore(3))
    <Verdict.OK: 'ok'>
"""

from __future__ import annotations

from collections.abc import Mapping

from fermion.table.operations import REGISTRY, Operation
from fermion.table.operations.base import NO, Cell, Rule, Verdict

__all__ = ["MATRIX", "Cell", "Rule", "Verdict", "build_matrix", "check"]


def build_matrix(registry: Mapping[str, type]) -> dict[str, dict[str, Cell]]:
    """``{mine: {theirs: cell}}`` from the operation classes' declarations.

    Raises:
        ValueError: A pair without a cell, or with two.
    """
    matrix: dict[str, dict[str, Cell]] = {
        name: dict(getattr(cls, "CONFLICTS", {})) for name, cls in registry.items()
    }
    for theirs, cls in registry.items():
        for mine, cell in getattr(cls, "CONFLICTS_AS_THEIRS", {}).items():
            if theirs in matrix[mine]:
                raise ValueError(f"conflict cell ({mine}, {theirs}) is declared twice")
            matrix[mine][theirs] = cell
    for mine, row in matrix.items():
        missing = sorted(set(registry) - set(row))
        unknown = sorted(set(row) - set(registry))
        if missing or unknown:
            raise ValueError(f"conflict row {mine!r}: missing {missing}, unknown {unknown}")
    return matrix


#: (mine, theirs) -> verdict or rule. Keys are ``Operation.name``.
MATRIX: dict[str, dict[str, Cell]] = build_matrix(REGISTRY)


def check(mine: Operation, theirs: Operation | None) -> Verdict:
    """Look up (and evaluate) the cell for ``mine`` against a committed ``theirs``.

    Example:
        >>> from fermion.table.operations import Delete, Rewrite, RewriteGroup
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
