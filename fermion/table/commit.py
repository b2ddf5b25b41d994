"""The commit loop: optimistic concurrency around one atomic put.

1. Write the transaction file ``_transactions/{read_version}-{uuid}.txn``.
2. Read the transaction of every version committed since the read version and look each
   one up in the conflict matrix (:mod:`fermion.table.conflicts`). A version created by this
   very transaction (same uuid: an earlier attempt whose outcome was unknown) means the
   commit already happened. A missing or unreadable transaction file is an
   :class:`~fermion.errors.IncompatibleTransactionError`.
3. Rebase if needed (deletes of the same fragment: OR the bitmaps of disjoint rows) or
   re-plan (when the caller gave a planner and the verdict is retryable).
4. Build the new manifest with the pure :func:`~fermion.table.transition.apply_operation`
   and put-if-absent it as ``_versions/{latest + 1}.manifest``. If the version is taken,
   back off (jittered exponential) and go back to 2.

After ``max_retries`` attempts (or ``timeout`` seconds) the loop raises
:class:`~fermion.errors.CommitConflictError`. The loop never deletes a file it wrote: an
unknown outcome may mean the commit landed, and :func:`cleanup_old_versions` removes real
orphans once they are old enough.

Example:
    >>> import tempfile, pyarrow as pa
    >>> from fermion.table.fragments import write_fragments
    >>> from fermion.table.schema import TableSchema
    >>> from fermion.table.storage import TableStorage
    >>> uri = tempfile.mkdtemp()
    >>> data = pa.table({"x": [1, 2]})
    >>> schema = TableSchema.from_arrow(data.schema)
    >>> op = Overwrite(tuple(write_fragments(data, uri, schema=schema)), schema)
    >>> result = commit_operation(TableStorage(uri), op, read_version=None)
    >>> result.table_version.version, result.attempts
    (1, 1)
"""

from __future__ import annotations

import random
import time
import uuid as uuidlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fermion.errors import (
    CommitConflictError,
    DatasetError,
    IncompatibleTransactionError,
    InvalidArgumentError,
    InvalidFileError,
)
from fermion.io import failpoints
from fermion.table.codec import check_writer_flags, encode_manifest, table_version
from fermion.table.conflicts import Verdict, check
from fermion.table.domain import TableVersion
from fermion.table.operations import (
    Operation,
    Overwrite,
    operation_from_proto,
    operation_to_proto,
)
from fermion.table.operations.base import RebaseConflict
from fermion.table.storage import TableStorage
from fermion.table.transition import apply_operation
from fermion.table.versions import load_manifest, load_transaction, write_transaction

__all__ = [
    "BACKOFF_BASE_DEFAULT",
    "BACKOFF_MAX_DEFAULT",
    "MAX_RETRIES_DEFAULT",
    "CommitConfig",
    "CommitResult",
    "Planner",
    "commit_operation",
    "on_versions",
]

MAX_RETRIES_DEFAULT = 20
BACKOFF_BASE_DEFAULT = 0.005  # seconds; attempt k sleeps uniform(0, base * 2**k), capped
BACKOFF_MAX_DEFAULT = 1.0

#: Re-plans an operation on a newer version after a retryable conflict (``None``: nothing
#: left to do). It is given that version's manifest message, as before the domain model;
#: :func:`on_versions` makes one of a function taking a
#: :class:`~fermion.table.domain.TableVersion`.
Planner = Callable[[Any], Operation | None]


def on_versions(plan: Callable[[TableVersion], Operation | None]) -> Planner:
    """The :data:`Planner` of a re-planner written on
    :class:`~fermion.table.domain.TableVersion` (what planners outside the codec take).

    Example:
        >>> import tempfile, pyarrow as pa
        >>> from fermion.table import write_dataset
        >>> ds = write_dataset(pa.table({"x": [1]}), tempfile.mkdtemp())
        >>> seen = []
        >>> on_versions(lambda version: seen.append(version.live_rows))(ds.manifest), seen
        (None, [1])
    """
    return lambda manifest: plan(table_version(manifest))


@dataclass(frozen=True)
class CommitConfig:
    """How hard the commit loop tries.

    Attributes:
        max_retries: Maximum number of commit attempts (puts of a manifest), >= 1.
        backoff_base: First backoff ceiling in seconds (full jitter, doubling per attempt).
        backoff_max: Cap of the backoff ceiling.
        timeout: Give up after this many seconds (``None``: no limit).
    """

    max_retries: int = MAX_RETRIES_DEFAULT
    backoff_base: float = BACKOFF_BASE_DEFAULT
    backoff_max: float = BACKOFF_MAX_DEFAULT
    timeout: float | None = None

    def __post_init__(self) -> None:
        if self.max_retries < 1:
            raise InvalidArgumentError(f"max_retries must be >= 1, got {self.max_retries}")
        if self.backoff_base < 0 or self.backoff_max < 0:
            raise InvalidArgumentError("backoff times must be >= 0")


@dataclass(frozen=True)
class CommitResult:
    """The committed manifest and what it took.

    Attributes:
        manifest: The manifest message of the version committed (of the latest version
            when ``committed`` is false); :attr:`table_version` is its domain handle.
    """

    manifest: Any
    attempts: int
    rebased: int
    replanned: int
    recognised: bool  # an earlier attempt with unknown outcome had in fact committed
    committed: bool = True  # False: a re-plan found nothing left to do (manifest: latest)

    @property
    def table_version(self) -> TableVersion:
        """The :class:`~fermion.table.domain.TableVersion` of :attr:`manifest`."""
        return table_version(self.manifest)


def _their_operation(storage: TableStorage, theirs: TableVersion) -> Operation | None:
    try:
        txn = load_transaction(storage, theirs.transaction_file)
        return operation_from_proto(txn)
    except (FileNotFoundError, InvalidFileError, InvalidArgumentError) as exc:
        raise IncompatibleTransactionError(
            f"{storage.uri}: transaction of version {theirs.version} "
            f"({theirs.transaction_file or 'none'}) is missing or unreadable: {exc}"
        ) from exc


def commit_operation(
    storage: TableStorage,
    operation: Operation,
    *,
    read_version: int | None,
    config: CommitConfig | None = None,
    planner: Planner | None = None,
    create_only: bool = False,
    properties: Mapping[str, str] | None = None,
) -> CommitResult:
    """Commit ``operation``, read at ``read_version``, as the next version of the table.

    Args:
        storage: The table.
        operation: What to commit.
        read_version: The version the operation was planned on (``None``: the latest one
            at the start of the commit; for a new table, no version).
        config: Attempts, backoff and timeout.
        planner: Re-plans the operation on a newer manifest after a retryable conflict.
            Without one a retryable conflict raises ``CommitConflictError`` at once.
        create_only: Fail with ``DatasetError`` if the table already has a version.
        properties: Informational key/values recorded in the new version's summary.

    Raises:
        CommitConflictError: Retryable conflict, or attempts / time used up.
        IncompatibleTransactionError: The operation cannot be committed any more.
        DatasetError: The read version does not exist, or the table exists and
            ``create_only`` was given.
    """
    config = config or CommitConfig()
    rng = random.Random()
    started = time.monotonic()
    latest_version = storage.latest_version() or 0
    if create_only and latest_version:
        raise DatasetError(f"{storage.uri}: table already exists (version {latest_version})")
    if read_version is None:
        read_version = latest_version
    if read_version > latest_version:
        raise DatasetError(f"{storage.uri}: read version {read_version} does not exist")
    read_manifest = load_manifest(storage, read_version) if read_version else None
    if read_manifest is not None:
        check_writer_flags(read_manifest)
    if read_manifest is None and not isinstance(operation, Overwrite):
        raise DatasetError(f"{storage.uri}: no table to apply {operation.name} to")

    op = operation
    txn_uuid = uuidlib.uuid4().hex
    my_uuids = {txn_uuid}
    txn_name = write_transaction(storage, operation_to_proto(op, read_version, txn_uuid, _now_us()))
    failpoints.hit("after_txn_write")
    checked = read_version
    base = read_manifest
    rebased = replanned = 0
    for attempt in range(1, config.max_retries + 1):
        if config.timeout is not None and time.monotonic() - started > config.timeout:
            raise CommitConflictError(
                f"{storage.uri}: commit timed out after {config.timeout}s ({attempt - 1} attempts)"
            )
        latest_version = storage.latest_version() or 0
        if create_only and checked == 0 and latest_version:
            raise DatasetError(f"{storage.uri}: table was created concurrently")
        needs_rebase = needs_replan = False
        for version in range(checked + 1, latest_version + 1):
            theirs_manifest = load_manifest(storage, version)
            theirs = table_version(theirs_manifest)
            if theirs.transaction_uuid in my_uuids:
                return CommitResult(theirs_manifest, attempt, rebased, replanned, True)
            verdict = check(op, _their_operation(storage, theirs))
            if verdict is Verdict.INCOMPATIBLE:
                raise IncompatibleTransactionError(
                    f"{storage.uri}: {op.name} read at version {read_version} is incompatible "
                    f"with the {theirs.operation} of version {version}"
                )
            if verdict is Verdict.RETRY:
                if planner is None:
                    raise CommitConflictError(
                        f"{storage.uri}: {op.name} conflicts with the "
                        f"{theirs.operation} of version {version}; "
                        "re-plan it on the latest version and commit again"
                    )
                needs_replan = True
            needs_rebase = needs_rebase or verdict is Verdict.REBASE
            base = theirs_manifest
            checked = version
        if base is not None:
            check_writer_flags(base)
        rebase = getattr(op, "rebase", None)
        if needs_rebase and not needs_replan and rebase is not None:
            assert read_manifest is not None and base is not None
            try:
                op = rebase(storage, read_manifest, base)
                rebased += 1
            except RebaseConflict as exc:
                if planner is None:
                    raise CommitConflictError(f"{storage.uri}: {exc}; re-plan and retry") from exc
                needs_replan = True
        if needs_replan:
            assert planner is not None and base is not None
            new_op = planner(base)
            replanned += 1
            if new_op is None:  # nothing left to do on the newer version
                return CommitResult(base, attempt, rebased, replanned, False, committed=False)
            op = new_op
            txn_uuid = uuidlib.uuid4().hex
            my_uuids.add(txn_uuid)
        if needs_rebase or needs_replan:
            read_manifest = base
            txn_name = write_transaction(
                storage, operation_to_proto(op, checked, txn_uuid, _now_us())
            )
        needed = [load_manifest(storage, v) for v in op.required_versions()]
        restored = needed[0] if needed else None
        manifest = apply_operation(
            base,
            op,
            version=checked + 1,
            transaction_file=txn_name,
            transaction_uuid=txn_uuid,
            timestamp_us=_now_us(),
            restored=restored,
            properties=properties,
        )
        try:
            storage.put_manifest(checked + 1, encode_manifest(manifest))
        except FileExistsError:
            pass  # someone else took the version: check their transaction next
        except OSError:
            pass  # unknown outcome: the next attempt recognises our uuid if it landed
        else:
            return CommitResult(manifest, attempt, rebased, replanned, False)
        if attempt < config.max_retries:
            ceiling = min(config.backoff_max, config.backoff_base * 2 ** (attempt - 1))
            time.sleep(rng.uniform(0, ceiling))
    for version in range(checked + 1, (storage.latest_version() or 0) + 1):
        landed = load_manifest(storage, version)  # did a put with unknown outcome land?
        if table_version(landed).transaction_uuid in my_uuids:
            return CommitResult(landed, config.max_retries, rebased, replanned, True)
    raise CommitConflictError(
        f"{storage.uri}: gave up after {config.max_retries} commit attempts "
        f"(read version {read_version}, last seen version {checked})"
    )


def _now_us() -> int:
    return time.time_ns() // 1000
