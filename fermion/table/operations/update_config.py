"""``UpdateConfig``: set or remove table configuration entries (the write properties).

Only ``fermion.write.*`` keys (:mod:`fermion.table.write_properties`) may be changed this
way: the other keys are the library's own records (the batch-id column, loaded inputs).

Example:
    >>> from fermion.table.proto import transaction_pb2 as txpb
    >>> op = UpdateConfig({"fermion.write.compression": "none"}, ("fermion.write.page_size",))
    >>> message = txpb.Transaction().update_config
    >>> op.fill(message)
    >>> UpdateConfig.from_message(message) == op, op.touched_fragment_ids()
    (True, set())
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from fermion.errors import InvalidArgumentError
from fermion.table.operations.base import (
    OK,
    ApplyContext,
    Cell,
    OperationBase,
    Verdict,
    register,
)
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.schema import TableSchema
from fermion.table.write_properties import WRITE_KEY_PREFIX, WriteProperties

__all__ = ["UpdateConfig", "plan_update_config"]


def _same_keys(mine: Any, theirs: Any) -> Verdict:
    """Two configuration commits changing a common key to different outcomes: re-plan
    (the later writer reads what the other set, then decides); else both stand."""
    common = mine.keys() & theirs.keys()
    differ = any(mine.upsert.get(k) != theirs.upsert.get(k) for k in common)
    return Verdict.RETRY if differ else OK


@register
@dataclass(frozen=True)
class UpdateConfig(OperationBase):
    """Set ``upsert`` and remove ``remove`` from the table configuration.

    It touches no fragment: data written before or concurrently keeps the properties it
    was written with (files are never rewritten for a property change; compaction rewrites
    them with the properties of its read version).

    Raises:
        InvalidArgumentError: A key outside ``fermion.write.*``, an unknown property, a bad
            value, or a key both set and removed.
    """

    upsert: Mapping[str, str] = field(default_factory=dict)
    remove: tuple[str, ...] = ()
    name: ClassVar[str] = "update_config"
    CONFLICTS: ClassVar[Mapping[str, Cell]] = {
        "append": OK, "delete": OK, "rewrite": OK, "create_index": OK, "schema_change": OK,
        "overwrite": OK, "restore": OK, "merge_insert": OK, "update": OK, "add_columns": OK,
        "drop_index": OK, "update_config": _same_keys,
    }  # fmt: skip
    CONFLICTS_AS_THEIRS: ClassVar[Mapping[str, Cell]] = {
        "append": OK, "delete": OK, "rewrite": OK, "create_index": OK, "schema_change": OK,
        "overwrite": OK, "restore": OK, "merge_insert": OK, "update": OK, "add_columns": OK,
        "drop_index": OK,
    }  # fmt: skip

    def __post_init__(self) -> None:
        upsert, remove = dict(self.upsert), tuple(self.remove)
        if isinstance(self.remove, str):
            raise InvalidArgumentError("remove must be a list of keys")
        for key in [*upsert, *remove]:
            if not isinstance(key, str) or not key.startswith(WRITE_KEY_PREFIX):
                raise InvalidArgumentError(
                    f"only {WRITE_KEY_PREFIX}* configuration keys can be changed, not {key!r}"
                )
        if not all(isinstance(v, str) for v in upsert.values()):
            raise InvalidArgumentError("configuration values are strings")
        both = sorted(set(upsert) & set(remove))
        if both:
            raise InvalidArgumentError(f"keys both set and removed: {both}")
        WriteProperties.from_config(upsert)  # unknown keys, bad values
        unknown = sorted(
            k for k in remove if k[len(WRITE_KEY_PREFIX) :] not in WriteProperties.names()
        )
        if unknown:
            raise InvalidArgumentError(f"unknown write properties: {unknown}")
        object.__setattr__(self, "upsert", upsert)
        object.__setattr__(self, "remove", tuple(sorted(set(remove))))

    def keys(self) -> set[str]:
        """The configuration keys this commit changes."""
        return set(self.upsert) | set(self.remove)

    def fill(self, message: Any) -> None:
        """Write into ``Transaction.update_config``."""
        message.SetInParent()
        message.upsert.update(self.upsert)
        message.remove.extend(self.remove)

    @classmethod
    def from_message(cls, message: Any) -> UpdateConfig:
        """Read ``Transaction.update_config``."""
        return cls(dict(message.upsert), tuple(message.remove))

    def apply(self, manifest: pb.Manifest, context: ApplyContext) -> None:
        """Set and remove the entries."""
        manifest.config.update(self.upsert)
        for key in self.remove:
            manifest.config.pop(key, None)
        manifest.summary.properties["config"] = ",".join(sorted(self.keys()))


def plan_update_config(
    manifest: pb.Manifest,
    values: WriteProperties | Mapping[str, Any] | None,
    unset: Sequence[str] = (),
) -> UpdateConfig:
    """The ``UpdateConfig`` setting write properties ``values`` (names or full keys) and
    removing those named in ``unset``, checked against the table version ``manifest``
    (bloom filter columns must be columns of its schema with bloom filter support).

    Raises:
        InvalidArgumentError: An unknown property, a bad value, a bloom column not in the
            table, nothing to change, or a property both set and unset.
        UnsupportedTypeError: A bloom column of a type without bloom filters.

    Example:
        >>> plan_update_config(pb.Manifest(), {"page_size": 4096}, ["compression"])
        UpdateConfig(upsert={'fermion.write.page_size': '4096'}, \
remove=('fermion.write.compression',))
    """
    wanted = WriteProperties.parse(values)
    if wanted.bloom_filter_columns:
        schema = TableSchema.from_proto(manifest.schema, manifest.max_field_id)
        wanted.check_schema(schema.arrow)
    if isinstance(unset, str):
        raise InvalidArgumentError("unset is a list of property names")
    remove = tuple(k if k.startswith(WRITE_KEY_PREFIX) else WRITE_KEY_PREFIX + k for k in unset)
    if not wanted.to_config() and not remove:
        raise InvalidArgumentError("no write property to set or unset")
    return UpdateConfig(wanted.to_config(), remove)
