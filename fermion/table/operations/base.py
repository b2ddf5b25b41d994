"""What every operation shares: the registry, the conflict verdicts, manifest editing.

An operation type lives in one module of this package and declares there, on its class:

- its transaction codec: ``fill(message)`` writes it into its field of the ``Transaction``
  oneof (named ``name``), ``from_message(message)`` reads it back;
- its transition: ``apply(manifest, context)`` edits a copy of the latest manifest (pure:
  no I/O; whatever it needs is in the :class:`ApplyContext`);
- its conflict rules: ``CONFLICTS``, its row of the conflict matrix (my operation against
  each one committed since I read), and optionally ``CONFLICTS_AS_THEIRS``, the cells of
  existing operations' rows against it, so that a new operation type is added in its own
  module only. ``fermion.table.conflicts`` assembles the matrix and checks it is complete.

Example:
    >>> next_id(pb.Manifest()), next_id(pb.Manifest(max_fragment_id=4))
    (0, 5)
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from fermion.errors import InvalidArgumentError
from fermion.table.codec import fragment_message
from fermion.table.domain import Fragment
from fermion.table.proto import manifest_pb2 as pb

__all__ = [
    "INPUT_KEY_PREFIX",
    "NO",
    "OK",
    "R",
    "REBASE",
    "REGISTRY",
    "ApplyContext",
    "Cell",
    "OperationBase",
    "RebaseConflict",
    "Rule",
    "Verdict",
    "copy_fragments",
    "if_overlap",
    "live_rows",
    "next_id",
    "register",
    "replace_fragments",
    "summarise",
    "with_new_ids",
]

#: Table configuration keys with this prefix record loaded inputs (see ``Append``).
INPUT_KEY_PREFIX = "fermion.input."


class Verdict(enum.Enum):
    """Outcome of checking my operation against one committed since my read version."""

    OK = "ok"
    REBASE = "rebase"  # merge with theirs (e.g. deletion bitmaps), then commit
    RETRY = "retry"  # retryable: re-plan the operation on the newer version
    INCOMPATIBLE = "incompatible"  # not retryable


OK, REBASE, R, NO = Verdict.OK, Verdict.REBASE, Verdict.RETRY, Verdict.INCOMPATIBLE

Rule = Callable[[Any, Any], Verdict]
Cell = Verdict | Rule


class RebaseConflict(Exception):
    """Raised by ``rebase`` when merging is impossible: the operation must be re-planned."""


def if_overlap(verdict: Verdict) -> Rule:
    """A cell that is ``verdict`` when both operations touch a common fragment, else OK."""

    def rule(mine: Any, theirs: Any) -> Verdict:
        return verdict if mine.touched_fragment_ids() & theirs.touched_fragment_ids() else OK

    rule.__name__ = f"{verdict.name.lower()}_if_overlap"
    return rule


@dataclass
class ApplyContext:
    """What an operation's ``apply`` may read besides the manifest it edits.

    Attributes:
        base_version: The version being built upon (0 when creating the table).
        restored: For a restore, the manifest of the restored version.
    """

    base_version: int
    restored: pb.Manifest | None = None
    by_id: dict[int, pb.Fragment] = field(default_factory=dict)


class OperationBase:
    """Defaults every operation class inherits.

    A registered class also defines ``name``, ``CONFLICTS``, ``fill(message)``,
    ``from_message(message)`` (a classmethod) and ``apply(manifest, context)``; the
    registry test checks each one does.
    """

    name: ClassVar[str]
    CONFLICTS: ClassVar[Mapping[str, Cell]]
    CONFLICTS_AS_THEIRS: ClassVar[Mapping[str, Cell]] = {}

    def touched_fragment_ids(self) -> set[int]:
        """Existing fragments the operation modifies, removes or depends on."""
        return set()

    def required_versions(self) -> tuple[int, ...]:
        """Versions whose manifests ``apply`` needs (a restore needs the restored one)."""
        return ()


#: Operation classes by name (= their field in the ``Transaction`` oneof).
REGISTRY: dict[str, type[Any]] = {}

T = TypeVar("T")


def register(cls: type[T]) -> type[T]:
    """Class decorator adding an operation type to :data:`REGISTRY`."""
    name = cls.name  # type: ignore[attr-defined]
    if name in REGISTRY:
        raise ValueError(f"operation {name!r} registered twice")
    REGISTRY[name] = cls
    return cls


def copy_fragments(fragments: object) -> tuple[pb.Fragment, ...]:
    """Copies of fragment messages, or the messages of domain fragments
    (:class:`~fermion.table.domain.Fragment`); a typed error for anything else."""
    out = []
    for fragment in fragments:  # type: ignore[attr-defined]
        if isinstance(fragment, Fragment):
            fragment = fragment_message(fragment)
        if not isinstance(fragment, pb.Fragment):
            raise InvalidArgumentError(f"expected a Fragment message, got {type(fragment)}")
        copy = pb.Fragment()
        copy.CopyFrom(fragment)
        out.append(copy)
    return tuple(out)


def live_rows(fragment: pb.Fragment) -> int:
    """Rows of a fragment that are not deleted.

    Example:
        >>> gone = pb.DeletionFile(num_deleted_rows=2)
        >>> live_rows(pb.Fragment(physical_rows=5, deletion_file=gone))
        3
    """
    deleted = fragment.deletion_file.num_deleted_rows if fragment.HasField("deletion_file") else 0
    return fragment.physical_rows - deleted


def next_id(manifest: pb.Manifest) -> int:
    """The id the next new fragment gets."""
    return manifest.max_fragment_id + 1 if manifest.HasField("max_fragment_id") else 0


def with_new_ids(manifest: pb.Manifest, fragments: Iterable[pb.Fragment]) -> list[pb.Fragment]:
    """Copies of ``fragments`` with fresh ids (the manifest's high-water mark moves)."""
    out = []
    for fragment in fragments:
        copy = pb.Fragment()
        copy.CopyFrom(fragment)
        copy.id = next_id(manifest)
        manifest.max_fragment_id = copy.id
        out.append(copy)
    return out


def replace_fragments(manifest: pb.Manifest, fragments: list[pb.Fragment]) -> None:
    """Make ``fragments`` the manifest's fragment list."""
    del manifest.fragments[:]
    manifest.fragments.extend(fragments)


def summarise(
    summary: pb.OperationSummary, added: list[pb.Fragment], removed: list[pb.Fragment]
) -> None:
    """Count added and removed fragments, files and rows into ``summary``."""
    summary.added_fragments += len(added)
    summary.removed_fragments += len(removed)
    summary.added_files += sum(len(f.files) for f in added)
    summary.removed_files += sum(len(f.files) for f in removed)
    summary.added_rows += sum(live_rows(f) for f in added)
    summary.removed_rows += sum(live_rows(f) for f in removed)
