"""``Append``: add new fragments; optionally record loaded inputs in the table config.

Example:
    >>> from fermion.table.proto import transaction_pb2 as txpb
    >>> op = Append((pb.Fragment(physical_rows=2),), {"fermion.input.d1": "x"})
    >>> message = txpb.Transaction().append
    >>> op.fill(message)
    >>> Append.from_message(message) == op
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from fermion.errors import InvalidArgumentError
from fermion.table.operations.base import (
    INPUT_KEY_PREFIX,
    NO,
    OK,
    ApplyContext,
    Cell,
    OperationBase,
    Verdict,
    copy_fragments,
    register,
    summarise,
    with_new_ids,
)
from fermion.table.proto import manifest_pb2 as pb

__all__ = ["Append"]


def _no_if_same_input(mine: Any, theirs: Any) -> Verdict:
    """Two appends recording the same input (config key) cannot both commit."""
    same = mine.config.keys() & theirs.config.keys()
    return NO if any(k.startswith(INPUT_KEY_PREFIX) for k in same) else OK


@register
@dataclass(frozen=True)
class Append(OperationBase):
    """Add new fragments (their ids are assigned at commit time).

    ``config`` entries are set in the table configuration by the same commit. An ingest
    records each input it loaded under a key starting with ``INPUT_KEY_PREFIX``; two
    concurrent appends that set the same such key are incompatible, so an input is never
    loaded twice.
    """

    fragments: tuple[pb.Fragment, ...]
    config: Mapping[str, str] = field(default_factory=dict)
    name: ClassVar[str] = "append"
    CONFLICTS: ClassVar[Mapping[str, Cell]] = {
        "append": _no_if_same_input, "delete": OK, "rewrite": OK, "create_index": OK,
        "schema_change": OK, "overwrite": NO, "restore": NO,
    }  # fmt: skip

    def __post_init__(self) -> None:
        object.__setattr__(self, "fragments", copy_fragments(self.fragments))
        object.__setattr__(self, "config", dict(self.config))
        if not self.fragments:
            raise InvalidArgumentError("Append needs at least one fragment")

    def fill(self, message: Any) -> None:
        """Write into ``Transaction.append``."""
        message.SetInParent()
        message.fragments.extend(self.fragments)
        message.config.update(self.config)

    @classmethod
    def from_message(cls, message: Any) -> Append:
        """Read ``Transaction.append``."""
        return cls(tuple(message.fragments), dict(message.config))

    def apply(self, manifest: pb.Manifest, context: ApplyContext) -> None:
        """New fragments at the end, with fresh ids; config entries set."""
        added = with_new_ids(manifest, self.fragments)
        for fragment in added:  # new rows: the commit gives them fresh row ids
            fragment.ClearField("row_ids")
        manifest.fragments.extend(added)
        manifest.config.update(self.config)
        summarise(manifest.summary, added, [])
