"""Parquet inputs written by tasks that read the files themselves, Spark only scheduling.

When a job's source is Parquet files, moving every row through the JVM (Spark reads the
files, hands Arrow batches to a Python worker) costs more than the write itself. Here the
driver reads the files' footers, cuts the row groups into splits of about
``spark.sql.files.maxPartitionBytes`` (as Spark's own file source does), and each Spark task
reads its splits with pyarrow and runs ``execute_write`` on them. Spark schedules, retries
and reports the tasks; no row crosses the JVM.

The rows must be exactly the ones Spark's Parquet source would give, so this path is taken
only when that is certain (:func:`plan_file_tasks` returns the reason otherwise, and the job
falls back to the Spark read):

- every column of the DataFrame is a column of every file, of a type that converts to
  Spark's view of it without changing a value (:func:`converts_exactly`), or a Hive-style
  ``key=value`` directory of type string, int, bigint or date;
- no reader options (they change what Spark reads);
- for a batch-mode write, every row group has min/max statistics of the batch-id column,
  and their ranges leave room to cut tasks where every id before the cut is below every id
  after it: each task then holds one range of ids, no batch is split, and the fragments of
  the write hold disjoint ranges, as Spark's range partitioning would give. A task whose
  ids as read are out of order sorts its rows by id (stably) before writing. Ids spread
  over every row group (hashed, random) leave no cut: Spark range-partitions them.

With ``verify`` a task reads back what it wrote before it reports and compares it with the
rows it handed to the writer: by a digest of every column taken as the rows passed
(:mod:`fermion.spark.jobs.row_digest`), or, where a column's type has no digest (nested,
dictionary), row for row with a second read of its splits. The driver compares the total
row count with the footers'.

Example:
    >>> import pyarrow as pa
    >>> converts_exactly(pa.string_view(), pa.string())
    True
    >>> converts_exactly(pa.timestamp("ns"), pa.timestamp("us", tz="UTC"))
    False
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fermion.errors import FermionError
from fermion.spark.jobs.row_digest import RowDigest, digestible
from fermion.table.codec import fragment_to_proto
from fermion.table.scan import read_fragment
from fermion.table.tasks import WritePlan, WriteResult, execute_write

if TYPE_CHECKING:
    import logging

    from pyspark.sql import DataFrame

__all__ = [
    "FilePiece",
    "FileTaskPlan",
    "FileVerificationError",
    "converts_exactly",
    "execute_file_tasks",
    "parquet_tasks",
    "partition_values",
    "plan_file_tasks",
]

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
BATCH_ROWS = 65_536
_PARTITION_TYPES = (pa.string(), pa.int32(), pa.int64(), pa.date32())
_FOOTER_THREADS = 16


class FileVerificationError(FermionError):
    """A task read back rows that differ from the Parquet rows it was given."""


@dataclass(frozen=True)
class FilePiece:
    """Some row groups of one Parquet file, with its Hive partition values."""

    path: str
    row_groups: tuple[int, ...]
    rows: int
    partitions: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True)
class FileTaskPlan:
    """What each task reads (a list of pieces per task), in Spark's Arrow schema."""

    tasks: tuple[tuple[FilePiece, ...], ...]
    schema: pa.Schema
    rows: int
    batch_column: str | None = None


def converts_exactly(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether pyarrow's values of ``source`` cast to ``target`` are exactly Spark's.

    Equal types, string/binary layouts (view, large), a narrower unsigned integer into a
    wider signed one, UTC-adjusted timestamps in ms or us, and lists, structs and maps of
    such types. Naive or nanosecond timestamps (Spark's readers treat them by session
    settings) and everything else are not.

    Example:
        >>> converts_exactly(pa.uint16(), pa.int32()), converts_exactly(pa.uint64(), pa.int64())
        (True, False)
    """
    if source == target:
        return True
    if pa.types.is_string(target) or pa.types.is_large_string(target):
        return bool(
            pa.types.is_string(source)
            or pa.types.is_large_string(source)
            or pa.types.is_string_view(source)
        )
    if pa.types.is_binary(target) or pa.types.is_large_binary(target):
        return bool(
            pa.types.is_binary(source)
            or pa.types.is_large_binary(source)
            or pa.types.is_binary_view(source)
        )
    if pa.types.is_unsigned_integer(source) and pa.types.is_signed_integer(target):
        return bool(target.bit_width > source.bit_width)
    if pa.types.is_timestamp(source) and pa.types.is_timestamp(target):
        return source.tz is not None and target.tz is not None and source.unit in ("ms", "us")
    if _is_list(source) and _is_list(target):
        return converts_exactly(source.value_type, target.value_type)
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        if [f.name for f in source] != [f.name for f in target]:
            return False
        return all(converts_exactly(s.type, t.type) for s, t in zip(source, target, strict=True))
    if pa.types.is_map(source) and pa.types.is_map(target):
        return converts_exactly(source.key_type, target.key_type) and converts_exactly(
            source.item_type, target.item_type
        )
    return False


def _is_list(t: pa.DataType) -> bool:
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t))


def partition_values(path: str, names: Sequence[str]) -> dict[str, str | None] | None:
    """The raw values of the Hive-style directories ``name=value`` of ``path``.

    Values are unescaped as Spark writes them (``%XX``); ``__HIVE_DEFAULT_PARTITION__`` is
    null. ``None`` if a name has no directory.

    Example:
        >>> partition_values("s3a://b/t/dt=2026-11-23/h=%2001/part-0.parquet", ["dt", "h"])
        {'dt': '2026-11-23', 'h': ' 01'}
        >>> partition_values("/t/part-0.parquet", ["dt"]) is None
        True
    """
    found: dict[str, str | None] = {}
    for segment in path.split("/")[:-1]:
        key, sep, value = segment.partition("=")
        if sep and key in names:
            raw = urllib.parse.unquote(value)
            found[key] = None if raw == HIVE_NULL else raw
    if any(name not in found for name in names):
        return None
    return found


def _open(path: str) -> Any:
    """A pyarrow-readable handle for a path as Spark names it (``file:``, ``s3a://``...)."""
    if path.startswith("file:"):
        local = urllib.parse.unquote(urllib.parse.urlparse(path).path)
        return local
    if "://" not in path:
        return path
    from fermion.io.store import store_for

    store, inner = store_for(path)
    return store.open_read(inner)


def _footer(path: str) -> pq.FileMetaData:
    handle = _open(path)
    try:
        return pq.ParquetFile(handle).metadata
    finally:
        if not isinstance(handle, str):
            handle.close()


def plan_file_tasks(
    df: DataFrame,
    paths: Sequence[str],
    schema: pa.Schema,
    *,
    options: dict[str, str] | None = None,
    batch_column: str | None = None,
    partitions: int = 0,
) -> FileTaskPlan | str:
    """Cut the Parquet files ``paths`` (what ``df`` reads) into tasks, or say why not.

    Args:
        df: ``spark.read.parquet(...)`` of the files (its schema is the target).
        paths: ``df.inputFiles()``.
        schema: ``df``'s Arrow schema as ``mapInArrow`` would see it.
        options: The Spark reader options the job was given (any option: not this path).
        batch_column: A batch-mode write's id column: tasks are cut where the row groups'
            id ranges (footer statistics) are disjoint, so each task holds one range of ids
            and no batch is split (no statistics, or ranges that overlap too much: not this
            path).
        partitions: Tasks to make (0: splits of ``spark.sql.files.maxPartitionBytes``); when
            the row groups cannot make that many, Spark reads the files.

    Returns:
        The plan, or a sentence saying why Spark must read the files.
    """
    if options:
        return f"reader options {sorted(options)} change what Spark reads"
    if not paths:
        return "no input files"
    with ThreadPoolExecutor(min(_FOOTER_THREADS, len(paths))) as pool:
        footers = list(pool.map(_footer, paths))
    file_names = [set(m.schema.to_arrow_schema().names) for m in footers]
    common = set.intersection(*file_names)
    hive = [f.name for f in schema if f.name not in common]
    for field in schema:
        if field.name in hive and field.type not in _PARTITION_TYPES:
            return f"column {field.name!r} ({field.type}) is not in every file"
    for footer in footers:
        arrow = footer.schema.to_arrow_schema()
        for field in schema:
            if field.name not in hive and not converts_exactly(
                arrow.field(field.name).type, field.type
            ):
                return (
                    f"column {field.name!r}: the file's {arrow.field(field.name).type} "
                    f"may not read as Spark's {field.type}"
                )
    if batch_column is not None and batch_column in hive:
        return f"the batch id column {batch_column!r} is a directory, not in the files"
    pieces: list[tuple[FilePiece, int]] = []
    ranges: list[tuple[int, int]] = []
    for path, footer in zip(paths, footers, strict=True):
        values = partition_values(path, hive) if hive else {}
        if values is None:
            return f"{path}: no directory for partition columns {hive}"
        parts = tuple((name, values[name]) for name in hive)
        for index in range(footer.num_row_groups):
            group = footer.row_group(index)
            size = sum(group.column(c).total_compressed_size for c in range(group.num_columns))
            pieces.append((FilePiece(path, (index,), group.num_rows, parts), size))
            if batch_column is not None:
                bounds = _id_range(group, batch_column)
                if bounds is None:
                    return f"{path}: row group {index} has no min/max of {batch_column!r}"
                ranges.append(bounds)
    budget = _split_bytes(df, sum(size for _, size in pieces))
    packed = (
        _pack(pieces, budget, partitions)
        if batch_column is None
        else _pack_ranges(pieces, ranges, budget, partitions)
    )
    if isinstance(packed, str):
        return packed
    if partitions and len(packed) < partitions:
        return (
            f"the row groups make {len(packed)} task(s) of the {partitions} asked for "
            f"(partitions); Spark splits the rows"
        )
    tasks = packed
    return FileTaskPlan(tasks, schema, sum(p.rows for p, _ in pieces), batch_column)


def _id_range(group: pq.RowGroupMetaData, column: str) -> tuple[int, int] | None:
    """The (min, max) batch id of a row group from its statistics (``None`` without)."""
    for c in range(group.num_columns):
        chunk = group.column(c)
        if chunk.path_in_schema == column:
            stats = chunk.statistics
            if stats is None or not stats.has_min_max or stats.null_count:
                return None
            return int(stats.min), int(stats.max)
    return None


def _pack_ranges(
    pieces: list[tuple[FilePiece, int]],
    ranges: list[tuple[int, int]],
    budget: int,
    partitions: int,
) -> tuple[tuple[FilePiece, ...], ...] | str:
    """Row groups ordered by their id ranges, cut into tasks only where every id before the
    cut is below every id after it (so tasks hold disjoint id ranges and no batch is
    split): ``partitions`` tasks (or one per ``budget`` bytes), each cut at the allowed
    boundary nearest to an equal share of the bytes.

    Example:
        >>> p = [(FilePiece(str(k), (0,), 1), 10) for k in range(4)]
        >>> [len(t) for t in _pack_ranges(p, [(0, 9), (5, 12), (20, 29), (30, 39)], 10, 3)]
        [2, 1, 1]
    """
    order = sorted(range(len(pieces)), key=lambda k: ranges[k])
    sizes = [pieces[k][1] for k in order]
    total = sum(sizes)
    wanted = partitions or max(1, -(-total // max(1, budget)))
    allowed: list[tuple[int, int]] = []  # (bytes before the cut, position in order)
    highest: int | None = None
    before = 0
    for position, k in enumerate(order):
        low, high = ranges[k]
        if highest is not None and highest < low:
            allowed.append((before, position))
        highest = high if highest is None else max(highest, high)
        before += sizes[position]
    cuts: list[int] = []
    for j in range(1, wanted):
        share = total * j / wanted
        candidates = [c for c in allowed if not cuts or c[1] > cuts[-1]]
        if not candidates:
            break
        best = min(candidates, key=lambda c: abs(c[0] - share))
        if best[1] not in cuts:
            cuts.append(best[1])
    bounds = [0, *cuts, len(order)]
    tasks = [
        tuple(pieces[k][0] for k in order[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)
    ]
    largest = max(sum(sizes[a:b]) for a, b in zip(bounds, bounds[1:], strict=False))
    if len(pieces) > 1 and largest > 2 * -(-total // wanted):
        return (
            "the row groups' batch-id ranges overlap: they cannot be split into tasks of "
            "disjoint ranges without Spark's range partitioning"
        )
    return tuple(t for t in tasks if t)


def parquet_tasks(
    df: DataFrame,
    file_reader: str,
    log: logging.Logger,
    *,
    options: dict[str, str] | None = None,
    batch_column: str | None = None,
    partitions: int = 0,
    paths: Sequence[str] | None = None,
) -> FileTaskPlan | None:
    """A job's Parquet source ``df`` cut into tasks that read it with pyarrow, or ``None``
    (Spark reads it) when ``file_reader`` is ``"spark"`` or :func:`plan_file_tasks` gives a
    reason, which is logged. ``paths``: ``df.inputFiles()`` if the caller has it already."""
    if file_reader == "spark":
        return None
    from fermion.spark.jobs.distributed import arrow_schema_of

    planned = plan_file_tasks(
        df, df.inputFiles() if paths is None else paths, arrow_schema_of(df),
        options=options, batch_column=batch_column, partitions=partitions,
    )  # fmt: skip
    if isinstance(planned, str):
        log.info("Spark reads the source: %s", planned)
        return None
    log.info("tasks read the Parquet files with pyarrow: %d tasks, %d rows",
             len(planned.tasks), planned.rows)  # fmt: skip
    return planned


def _split_bytes(df: DataFrame, total: int) -> int:
    """Spark's file split size: ``maxPartitionBytes``, smaller when the input is small, so
    that every core gets a task (``max(openCostInBytes, total / parallelism)``)."""
    spark = df.sparkSession
    conf = spark.conf
    largest = _bytes(conf.get("spark.sql.files.maxPartitionBytes", "134217728"))
    open_cost = _bytes(conf.get("spark.sql.files.openCostInBytes", "4194304"))
    parallelism = max(1, spark.sparkContext.defaultParallelism)
    return min(largest, max(open_cost, -(-total // parallelism)))


def _bytes(text: str | None) -> int:
    """A Spark size setting in bytes (``134217728``, ``128m``, ``4MB``).

    Example:
        >>> _bytes("128m"), _bytes("4MB"), _bytes("1024")
        (134217728, 4194304, 1024)
    """
    value = (text or "0").strip().lower().removesuffix("b")
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}.get(value[-1:], 1)
    return int(value[:-1] if scale > 1 else value) * scale


def _pack(
    pieces: list[tuple[FilePiece, int]], split_bytes: int, partitions: int
) -> tuple[tuple[FilePiece, ...], ...]:
    """Consecutive row groups into tasks of about ``split_bytes`` (or ``partitions`` tasks
    of about equal bytes), adjacent row groups of one file merged into one piece."""
    total = sum(size for _, size in pieces)
    budget = -(-total // partitions) if partitions else split_bytes
    tasks: list[list[FilePiece]] = [[]]
    used = 0
    for piece, size in pieces:
        if tasks[-1] and used + size > budget and (not partitions or len(tasks) < partitions):
            tasks.append([])
            used = 0
        last = tasks[-1][-1] if tasks[-1] else None
        if last is not None and last.path == piece.path:
            tasks[-1][-1] = FilePiece(
                last.path, last.row_groups + piece.row_groups, last.rows + piece.rows,
                last.partitions,
            )  # fmt: skip
        else:
            tasks[-1].append(piece)
        used += size
    return tuple(tuple(t) for t in tasks if t)


def _constant(value: str | None, type_: pa.DataType, rows: int) -> pa.Array:
    """``rows`` copies of a partition value (a string cast to ``type_``, or null)."""
    if value is None:
        return pa.nulls(rows, type_)
    return pa.repeat(pa.scalar(value, pa.string()).cast(type_), rows)


def read_pieces(pieces: Sequence[FilePiece], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The rows of ``pieces`` in order, as batches of ``schema``.

    Raises:
        SchemaMismatchError: A partition value does not convert to its column's type.
    """
    from fermion.errors import SchemaMismatchError

    for piece in pieces:
        parts = dict(piece.partitions)
        columns = [f.name for f in schema if f.name not in parts]
        file = pq.ParquetFile(_open(piece.path))
        for batch in file.iter_batches(
            batch_size=BATCH_ROWS, row_groups=list(piece.row_groups), columns=columns
        ):
            arrays = []
            for field in schema:
                if field.name in parts:
                    try:
                        arrays.append(_constant(parts[field.name], field.type, batch.num_rows))
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                        raise SchemaMismatchError(
                            f"{piece.path}: partition value {field.name}="
                            f"{parts[field.name]!r} is not a {field.type}: {exc}"
                        ) from None
                else:
                    arrays.append(batch.column(field.name).cast(field.type))
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def task_batches(
    pieces: Sequence[FilePiece], schema: pa.Schema, batch_column: str | None
) -> Iterator[pa.RecordBatch]:
    """A task's rows: as read, or in batch mode ordered by batch id (a stable sort, done
    only when the ids as read are not already in order; it holds the task's rows).

    Example:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "p.parquet")
        >>> pq.write_table(pa.table({"b": [3, 1, 1, 2], "v": [0, 1, 2, 3]}), path)
        >>> piece = FilePiece(path, (0,), 4)
        >>> t = pa.Table.from_batches(task_batches([piece], pa.schema([("b", pa.int64()),
        ...     ("v", pa.int64())]), "b"))
        >>> t["b"].to_pylist(), t["v"].to_pylist()
        ([1, 1, 2, 3], [1, 2, 3, 0])
    """
    if batch_column is None:
        yield from read_pieces(pieces, schema)
        return
    ids = pa.chunked_array(
        [b.column(0) for b in read_pieces(pieces, pa.schema([schema.field(batch_column)]))],
        schema.field(batch_column).type,
    )
    values = ids.to_numpy()
    if len(values) < 2 or bool((values[1:] >= values[:-1]).all()):
        yield from read_pieces(pieces, schema)
        return
    table = pa.Table.from_batches(read_pieces(pieces, schema), schema)
    yield from table.take(pc.array_sort_indices(ids)).to_batches(BATCH_ROWS)


class _Rows:
    """A stream of batches read ``n`` rows at a time."""

    def __init__(self, batches: Iterator[pa.RecordBatch], schema: pa.Schema) -> None:
        self._batches = batches
        self._schema = schema
        self._head: list[pa.RecordBatch] = []

    def take(self, count: int) -> pa.Table:
        """The next ``count`` rows (fewer if the stream ends)."""
        have = sum(b.num_rows for b in self._head)
        while have < count:
            batch = next(self._batches, None)
            if batch is None:
                break
            self._head.append(batch)
            have += batch.num_rows
        table = pa.Table.from_batches(self._head, self._schema)
        self._head = table.slice(count).to_batches()
        return table.slice(0, count)


def _verify(
    plan: WritePlan, result: WriteResult, pieces: Sequence[FilePiece], schema: pa.Schema
) -> None:
    """Read the task's fragments back and compare them, in order, with a second read of its
    pieces (``schema``: the batches' schema)."""
    storage = plan.table.open()
    names = plan.schema.arrow.names
    source = _Rows(task_batches(pieces, schema, plan.batch_id_column), schema)
    for info in result.fragments:
        written = read_fragment(storage, plan.schema, fragment_to_proto(info), names)
        expected = source.take(written.num_rows).select(names)
        if expected.num_rows != written.num_rows or not written.equals(
            expected.cast(written.schema)
        ):
            path = info.files[0].path if info.files else "?"
            raise FileVerificationError(
                f"{path}: the rows read back differ from the Parquet rows written"
            )
    if source.take(1).num_rows:
        raise FileVerificationError("the task wrote fewer rows than its Parquet pieces hold")


class _SourceDigest(RowDigest):
    """A digest of the rows handed to the writer, taken in the written schema (the plan's
    columns and types; the batches' schema may order or type them otherwise)."""

    def __init__(self, written: pa.Schema, source: pa.Schema) -> None:
        super().__init__(written)
        self._same = source.equals(written)

    def add(self, batch: pa.RecordBatch | pa.Table) -> None:
        if not self._same:
            batch = batch.select(self.schema.names).cast(self.schema)
        super().add(batch)


def _source_digest(plan: WritePlan, schema: pa.Schema) -> _SourceDigest | None:
    """The digest to take of a task's rows, or None when a column has none (the task then
    compares the rows with a second read of its pieces)."""
    written = plan.schema.arrow
    if not digestible(written):
        return None
    return _SourceDigest(written, schema)


def _verify_digest(plan: WritePlan, result: WriteResult, source: RowDigest) -> None:
    """Read the task's fragments back, in order, and compare their digest with the digest of
    the rows the writer was given (see :mod:`fermion.spark.jobs.row_digest`)."""
    storage = plan.table.open()
    names = plan.schema.arrow.names
    written = RowDigest(plan.schema.arrow)
    for info in result.fragments:
        written.add(read_fragment(storage, plan.schema, fragment_to_proto(info), names))
    if written.rows != source.rows:
        raise FileVerificationError(
            f"the task wrote {written.rows:,} rows; its Parquet pieces hold {source.rows:,}"
        )
    differ = source.differences(written)
    if differ:
        paths = ", ".join(i.files[0].path for i in result.fragments if i.files)
        raise FileVerificationError(
            f"{paths}: the values read back of column(s) {', '.join(differ)} differ from the "
            "Parquet rows written"
        )


_RESULT = "result"


def execute_file_tasks(
    spark: Any, plan: WritePlan, files: FileTaskPlan, *, verify: bool = False
) -> list[WriteResult]:
    """Run one Spark task per entry of ``files.tasks``: read its pieces with pyarrow, write
    them with ``execute_write`` (and with ``verify``, compare what it wrote with what it was
    given). The driver gets the results; nothing is committed.

    Raises:
        FileVerificationError: The rows written differ from the source (with ``verify``),
            or the written total differs from the footers' row count.
    """
    schema = files.schema
    if not files.tasks:
        return []
    encoded = [json.dumps([_piece_json(p) for p in task]) for task in files.tasks]

    def run(index: int, items: Iterator[str]) -> Iterator[str]:
        from pyspark import TaskContext

        task = TaskContext.get()
        attempt = 0 if task is None else task.attemptNumber()
        for item in items:
            pieces = [_piece_from_json(p) for p in json.loads(item)]
            batches = task_batches(pieces, schema, files.batch_column)
            digest = _source_digest(plan, schema) if verify else None
            if digest is not None:
                batches = digest.feed(batches)
            reader = pa.RecordBatchReader.from_batches(schema, batches)
            result = execute_write(plan, reader, task_id=f"{index}.{attempt}")
            if digest is not None:
                _verify_digest(plan, result, digest)
            elif verify:
                _verify(plan, result, pieces, schema)
            yield result.to_json()

    rdd = spark.sparkContext.parallelize(encoded, len(encoded))
    results = [WriteResult.from_json(r) for r in rdd.mapPartitionsWithIndex(run).collect()]
    written = sum(r.rows for r in results)
    if written != files.rows:
        raise FileVerificationError(
            f"the tasks wrote {written:,} rows; the files' footers hold {files.rows:,}"
        )
    return [r for r in results if r.fragments]


def _piece_json(piece: FilePiece) -> dict[str, Any]:
    return {"path": piece.path, "row_groups": list(piece.row_groups), "rows": piece.rows,
            "partitions": [list(p) for p in piece.partitions]}  # fmt: skip


def _piece_from_json(data: dict[str, Any]) -> FilePiece:
    return FilePiece(
        data["path"], tuple(data["row_groups"]), data["rows"],
        tuple((name, value) for name, value in data["partitions"]),
    )  # fmt: skip
