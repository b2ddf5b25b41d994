"""A Fermion table version as a ``pyarrow.dataset.Dataset``, for engines that special-case
Arrow datasets (DuckDB): they pass the query's columns and filter to ``scanner()``.

``Dataset.arrow_dataset()`` builds one; this module is imported only then, because
``pyarrow.dataset`` loads pandas (half a second at every start of the CLI or a Spark worker).
The Arrow methods a Fermion table does not offer (``join``, ``sort_by``, ``filter``,
``get_fragments``, ...) raise :class:`~fermion.errors.InvalidArgumentError`: the Arrow
base class would dereference a C++ dataset this object does not have.

Example:
    >>> import tempfile, duckdb, pyarrow as pa, fermion
    >>> ads = fermion.write_dataset(pa.table({"x": [1, 2, 3]}), tempfile.mkdtemp()).arrow_dataset()
    >>> duckdb.sql("select count(*) from ads where x >= 2").fetchall()
    [(2,)]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds

from fermion.errors import InvalidArgumentError
from fermion.table.scan import Scanner

__all__ = ["ArrowDataset"]


def _restore(table: Any) -> ArrowDataset:
    return ArrowDataset(table)


class ArrowDataset(pds.Dataset):
    """A ``pyarrow.dataset.Dataset`` that reads one version of a Fermion table.

    Args:
        table: the :class:`~fermion.table.dataset.Dataset` (version) to read.
    """

    def __init__(self, table: Any) -> None:  # a fermion.table.Dataset (no import cycle)
        self.table = table

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (self.table,))

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"ArrowDataset({self.table!r})"

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the version."""
        return self.table.schema

    def scanner(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | str | None = None,
        *,
        batch_size: int | None = None,
    ) -> Scanner:
        """A scan with projection and filter pushed down (DuckDB calls this, then reads
        ``scanner.to_reader()``)."""
        return self.table.scanner(columns, filter, batch_size=batch_size)

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | str | None = None,
        *,
        batch_size: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Record batches of the projected, filtered rows, read as they are consumed."""
        return self.table.to_batches(columns, filter, batch_size=batch_size)

    def to_table(
        self, columns: Sequence[str] | None = None, filter: pc.Expression | str | None = None
    ) -> pa.Table:
        """The projected, filtered rows as one table."""
        return self.table.to_table(columns, filter)

    def count_rows(self, filter: pc.Expression | str | None = None) -> int:
        """Rows matching ``filter`` (the manifest alone answers without one)."""
        return self.table.count_rows(filter)

    def head(
        self,
        num_rows: int = 5,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | str | None = None,
    ) -> pa.Table:
        """The first ``num_rows`` rows; reading stops once they are found."""
        return self.table.head(num_rows, columns, filter)

    def take(self, indices: Any, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows at logical positions ``indices``."""
        return self.table.take(indices, columns)

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow PyCapsule stream of the version."""
        return self.table.__arrow_c_stream__(requested_schema)

    # -- what a Fermion table does not offer -------------------------------------------

    def _unsupported(self, name: str) -> NoReturn:
        raise InvalidArgumentError(
            f"{name} is not supported on a Fermion table: read it first "
            "(ds.to_table(...)) or query it with DuckDB / Polars"
        )

    def filter(self, expression: Any) -> NoReturn:
        """Not supported: pass ``filter=`` to :meth:`scanner`, :meth:`to_table`, ..."""
        self._unsupported("filter")

    def get_fragments(self, filter: Any = None) -> NoReturn:
        """Not supported: see ``Dataset.fragments`` (manifest fragment messages)."""
        self._unsupported("get_fragments")

    def _get_fragments(self, filter: Any = None) -> NoReturn:
        self._unsupported("_get_fragments")

    def _scan_options(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._unsupported("_scan_options")

    def _scanner_options(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._unsupported("_scanner_options")

    def join(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Not supported: join the tables :meth:`to_table` returns, or use DuckDB."""
        self._unsupported("join")

    def join_asof(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Not supported: join the tables :meth:`to_table` returns, or use DuckDB."""
        self._unsupported("join_asof")

    def sort_by(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Not supported: sort the table :meth:`to_table` returns."""
        self._unsupported("sort_by")

    def replace_schema(self, schema: Any) -> NoReturn:
        """Not supported: change the schema with ``Dataset.add_columns``, ..."""
        self._unsupported("replace_schema")

    @property
    def partition_expression(self) -> pc.Expression:
        """Always true: a Fermion table is not partitioned by directory."""
        return pc.scalar(True)
