"""Streaming converters between Parquet and Fermion files.

Both directions stream: Parquet is read as batches of at most ``batch_rows`` rows (never
spanning two row groups), Fermion stripe by stripe. Memory is one batch plus the Fermion
writer's stripe buffer on the way in (bounded by the ``max_stripe_rows`` and
``max_stripe_bytes`` write options), one decoded stripe on the way out. Sources and
destinations are local paths or fsspec URLs.

A conversion either completes or leaves no destination file behind: local destinations are
written under a hidden temporary name in the destination folder and renamed into place on
success; fsspec destinations are removed (best effort) when the conversion fails.

Anything that goes wrong with the *input* is reported as a typed :class:`FermionError`:
a missing source or an unwritable destination is an :class:`InvalidArgumentError`, bytes
that are not Parquet are an :class:`InvalidFileError` (:class:`TruncatedFileError` when the
file starts like Parquet but its footer is gone).

Example:
    >>> import os, tempfile
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> from fermion.format.convert.parquet import fermion_to_parquet, parquet_to_fermion
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"x": [1, 2, 3]}), os.path.join(d, "a.parquet"))
    >>> s = parquet_to_fermion(os.path.join(d, "a.parquet"), os.path.join(d, "a.fermion"))
    >>> (s.num_rows, s.num_columns)
    (3, 1)
    >>> _ = fermion_to_parquet(os.path.join(d, "a.fermion"), os.path.join(d, "b.parquet"))
    >>> pq.read_table(os.path.join(d, "b.parquet")).to_pydict()
    {'x': [1, 2, 3]}
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import IO, Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq

from fermion.errors import (
    FermionError,
    InvalidArgumentError,
    InvalidFileError,
    TruncatedFileError,
    UnsupportedTypeError,
)
from fermion.format.read.reader import FileReader
from fermion.format.write.writer import FileWriter
from fermion.io.store import Store, StoreFile, store_for

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "ConversionSummary",
    "fermion_to_parquet",
    "parquet_to_fermion",
]

DEFAULT_BATCH_ROWS = 64 * 1024
"""Rows per batch read from Parquet; a batch never spans two row groups."""

_PARQUET_MAGIC = b"PAR1"

Direction = Literal["parquet->fermion", "fermion->parquet"]


@dataclass(frozen=True)
class ConversionSummary:
    """What one conversion did.

    Attributes:
        src: the source as given.
        dst: the destination as given.
        direction: ``"parquet->fermion"`` or ``"fermion->parquet"``.
        num_rows: rows written.
        num_columns: top-level columns written.
        source_units: Parquet row groups or Fermion stripes read.
        batches: batches handed to the writer (the unit of memory use).
        src_bytes: size of the source file.
        dst_bytes: size of the destination file.
        seconds: wall-clock time of the conversion.
    """

    src: str
    dst: str
    direction: Direction
    num_rows: int
    num_columns: int
    source_units: int
    batches: int
    src_bytes: int
    dst_bytes: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """The summary as a JSON-able dict.

        Example:
            >>> s = ConversionSummary("a", "b", "parquet->fermion", 1, 1, 1, 1, 10, 9, 0.5)
            >>> s.to_dict()["direction"]
            'parquet->fermion'
        """
        return asdict(self)


# --------------------------------------------------------------------------------------
# destinations: write under a temporary name, publish on success, leave nothing on failure


class _Destination:
    """Where a conversion writes, with publish-on-success and cleanup-on-failure: through
    the store serving ``dst``, under the name :meth:`~fermion.io.store.Store.stage` gives
    (a hidden temporary file beside it on the local disk, renamed into place on success;
    the object itself on an object store, visible once complete)."""

    def __init__(self, dst: Any) -> None:
        self.display = str(dst)
        self.store, path = store_for(dst)
        self.path = self.store.canonical(path)
        try:
            self.store.check_destination(self.path)
        except IsADirectoryError:
            raise InvalidArgumentError(f"{self.display}: destination is a directory") from None
        except FileNotFoundError as exc:
            raise InvalidArgumentError(
                f"{self.display}: destination folder {str(exc)!r} does not exist"
            ) from None
        self.write_path = self.store.stage(self.path)

    def writer_target(self) -> StoreFile:
        """What the Fermion writer is given: the file being written, in its store."""
        return self.store.target(self.write_path)

    def open_binary(self) -> IO[bytes]:
        """A binary handle on the file being written."""
        try:
            handle = self.store.new_output(self.write_path).create()
        except OSError as exc:
            raise InvalidArgumentError(f"{self.display}: cannot write: {exc}") from exc
        if isinstance(handle, io.RawIOBase):  # an unbuffered local file: pyarrow writes small
            return io.BufferedWriter(handle)
        return handle

    def publish(self) -> int:
        """Move the finished file into place; returns its size."""
        self.store.publish(self.write_path, self.path)
        return self.store.size(self.path)

    def discard(self) -> None:
        """Remove whatever a failed conversion wrote (best effort, never raises)."""
        with contextlib.suppress(Exception):
            self.store.delete(self.write_path)


def _same_file(src: Any, dst: _Destination) -> bool:
    """Whether ``src`` names the file ``dst`` would replace (same store URI)."""
    try:
        store, path = store_for(src)
    except FermionError:
        return False
    return store.uri(store.canonical(path)) == dst.store.uri(dst.path)


# --------------------------------------------------------------------------------------
# Parquet input


def _looks_like_parquet_head(store: Store, path: str) -> bool:
    with contextlib.suppress(Exception):
        source = store.new_input(path).open()
        try:
            return bytes(source.read_ranges([(0, 4)], max_gap=0)[0]) == _PARQUET_MAGIC
        finally:
            source.close()
    return False


def _open_parquet(
    src: Any,
    *,
    read_dictionary: Sequence[str] | None,
    coerce_int96_timestamp_unit: str | None,
) -> tuple[pq.ParquetFile, int, list[IO[bytes] | pa.NativeFile]]:
    """Open a Parquet source; returns the file, its size and handles to close."""
    store, path = store_for(src)
    handles: list[IO[bytes] | pa.NativeFile] = []
    try:
        if not store.isfile(path):
            what = "is a directory" if store.isdir(path) else "does not exist"
            raise InvalidArgumentError(f"{src}: source {what}")
        size = store.size(path)
        try:
            where = store.open_read(path)
            handles.append(where)
            pf = pq.ParquetFile(
                where,
                read_dictionary=list(read_dictionary) if read_dictionary else None,
                coerce_int96_timestamp_unit=coerce_int96_timestamp_unit,
            )
        except FileNotFoundError as exc:
            raise InvalidArgumentError(f"{src}: source does not exist") from exc
        except (pa.ArrowException, OSError) as exc:
            if size >= 8 and _looks_like_parquet_head(store, path):
                raise TruncatedFileError(
                    f"{src}: starts like a Parquet file but its footer is missing or "
                    f"damaged (truncated?): {exc}"
                ) from exc
            raise InvalidFileError(f"{src}: not a readable Parquet file: {exc}") from exc
        return pf, size, handles
    except BaseException:
        for h in handles:
            with contextlib.suppress(Exception):
                h.close()
        raise


def _parquet_batches(pf: pq.ParquetFile, src: Any, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """Batches of one row group at a time; pyarrow's errors become typed ones."""
    try:
        for index in range(pf.num_row_groups):
            yield from pf.iter_batches(batch_size=batch_rows, row_groups=[index])
    except pa.ArrowNotImplementedError as exc:
        raise InvalidFileError(f"{src}: pyarrow cannot read this Parquet data: {exc}") from exc
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InvalidFileError(f"{src}: corrupt Parquet data: {exc}") from exc


def parquet_to_fermion(
    src: Any,
    dst: Any,
    *,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    read_dictionary: Sequence[str] | None = None,
    coerce_int96_timestamp_unit: str | None = None,
    **write_options: Any,
) -> ConversionSummary:
    """Convert a Parquet file to a Fermion file, one row group at a time.

    Any Parquet file pyarrow can read converts (INT96 timestamps, legacy list layouts,
    maps, decimals, dictionary-encoded columns); the Fermion file holds exactly the Arrow
    table ``pyarrow.parquet.read_table(src, read_dictionary=...)`` would return.

    Args:
        src: Parquet file: local path, ``pathlib.Path`` or fsspec URL.
        dst: Fermion file to write (replaced atomically if it exists and is local).
        batch_rows: most rows held in memory at once (a batch never spans row groups).
        read_dictionary: columns to read as Arrow dictionary arrays (for files written
            without an Arrow schema, e.g. by Spark or Impala).
        coerce_int96_timestamp_unit: unit for INT96 timestamps (``"ns"`` by default in
            pyarrow; ``"us"`` keeps dates outside 1677–2262 representable).
        **write_options: passed to :class:`fermion.format.FileWriter`.

    Returns:
        A :class:`ConversionSummary`.

    Raises:
        InvalidArgumentError: missing source, unwritable destination, bad options.
        InvalidFileError: the source is not (readable) Parquet.
        TruncatedFileError: the source starts like Parquet but its footer is gone.

    Example:
        >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
        >>> d = tempfile.mkdtemp(); src = os.path.join(d, "in.parquet")
        >>> pq.write_table(pa.table({"id": [1, 2]}), src, use_deprecated_int96_timestamps=True)
        >>> parquet_to_fermion(src, os.path.join(d, "out.fermion")).num_rows
        2
    """
    if batch_rows <= 0:
        raise InvalidArgumentError(f"batch_rows must be positive, got {batch_rows}")
    started = time.perf_counter()
    destination = _Destination(dst)
    if _same_file(src, destination):
        raise InvalidArgumentError(f"{src}: source and destination are the same file")
    pf, src_bytes, handles = _open_parquet(
        src,
        read_dictionary=read_dictionary,
        coerce_int96_timestamp_unit=coerce_int96_timestamp_unit,
    )
    rows = batches = 0
    try:
        schema = pf.schema_arrow
        try:
            writer = FileWriter(destination.writer_target(), schema, **write_options)
        except UnsupportedTypeError:
            raise  # a column of a type the format cannot store: named in the message
        except TypeError as exc:
            raise InvalidArgumentError(f"bad write option: {exc}") from exc
        except OSError as exc:
            raise InvalidArgumentError(f"{dst}: cannot write: {exc}") from exc
        with writer:
            for batch in _parquet_batches(pf, src, batch_rows):
                writer.write(batch)
                rows += batch.num_rows
                batches += 1
        # the row groups' counts, not the footer's total: some writers (parquet-rs) leave
        # the total at 0, and pyarrow reads such files by their row groups too
        meta = pf.metadata
        expected = sum(meta.row_group(i).num_rows for i in range(meta.num_row_groups))
        if rows != expected:
            raise InvalidFileError(f"{src}: the row groups promise {expected} rows but hold {rows}")
        dst_bytes = destination.publish()
    except BaseException:
        destination.discard()
        raise
    finally:
        for h in handles:
            with contextlib.suppress(Exception):
                h.close()
    return ConversionSummary(
        src=str(src),
        dst=str(dst),
        direction="parquet->fermion",
        num_rows=rows,
        num_columns=len(schema),
        source_units=pf.num_row_groups,
        batches=batches,
        src_bytes=src_bytes,
        dst_bytes=dst_bytes,
        seconds=time.perf_counter() - started,
    )


# --------------------------------------------------------------------------------------
# Fermion input


def fermion_to_parquet(
    src: Any,
    dst: Any,
    *,
    compression: str | None = "zstd",
    row_group_size: int | None = None,
    **options: Any,
) -> ConversionSummary:
    """Convert a Fermion file to a Parquet file, one stripe at a time.

    Each Fermion stripe becomes at least one Parquet row group (more when a stripe is
    larger than ``row_group_size``). The Arrow schema is stored in the Parquet file, so
    ``pyarrow.parquet.read_table(dst)`` returns the table the Fermion file holds.

    Args:
        src: Fermion file: local path, ``pathlib.Path``, fsspec URL or ``(fs, path)``.
        dst: Parquet file to write (replaced atomically if it exists and is local).
        compression: Parquet codec (``"zstd"``, ``"snappy"``, ``None``...).
        row_group_size: largest row group, in rows (pyarrow's default when ``None``).
        **options: passed to :class:`pyarrow.parquet.ParquetWriter`.

    Returns:
        A :class:`ConversionSummary`.

    Raises:
        InvalidArgumentError: missing source, unwritable destination, bad options.
        InvalidFileError: the source is not a valid Fermion file (or a subclass of it).
        UnsupportedTypeError: a column type Parquet cannot store.

    Example:
        >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
        >>> from fermion.format import write_table
        >>> d = tempfile.mkdtemp(); src = os.path.join(d, "in.fermion")
        >>> write_table(pa.table({"id": [1, 2]}), src)
        >>> fermion_to_parquet(src, os.path.join(d, "out.parquet")).num_rows
        2
    """
    started = time.perf_counter()
    destination = _Destination(dst)
    if _same_file(src, destination):
        raise InvalidArgumentError(f"{src}: source and destination are the same file")
    try:
        reader = FileReader(src)
    except FileNotFoundError as exc:
        raise InvalidArgumentError(f"{src}: source does not exist") from exc
    except IsADirectoryError as exc:
        raise InvalidArgumentError(f"{src}: source is a directory") from exc
    except OSError as exc:
        raise InvalidArgumentError(f"{src}: cannot open source: {exc}") from exc
    schema = reader.schema
    rows = batches = 0
    handle = destination.open_binary()
    try:
        try:
            writer = pq.ParquetWriter(handle, schema, compression=compression, **options)
        except TypeError as exc:
            raise InvalidArgumentError(f"bad Parquet writer option: {exc}") from exc
        except pa.ArrowNotImplementedError as exc:
            raise UnsupportedTypeError(f"{src}: Parquet cannot store this schema: {exc}") from exc
        except (pa.ArrowInvalid, ValueError) as exc:
            raise InvalidArgumentError(f"bad Parquet writer option: {exc}") from exc
        try:
            for batch in reader.iter_batches():
                try:
                    writer.write_batch(batch, row_group_size=row_group_size)
                except pa.ArrowNotImplementedError as exc:
                    raise UnsupportedTypeError(
                        f"{src}: Parquet cannot store this data: {exc}"
                    ) from exc
                rows += batch.num_rows
                batches += 1
        finally:
            writer.close()
        handle.close()
        dst_bytes = destination.publish()
    except BaseException:
        with contextlib.suppress(Exception):
            handle.close()
        destination.discard()
        raise
    finally:
        close = getattr(reader, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()
    return ConversionSummary(
        src=str(src),
        dst=str(dst),
        direction="fermion->parquet",
        num_rows=rows,
        num_columns=len(schema),
        source_units=int(reader.metadata.num_stripes),
        batches=batches,
        src_bytes=int(reader.source.size),
        dst_bytes=dst_bytes,
        seconds=time.perf_counter() - started,
    )
