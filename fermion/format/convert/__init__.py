"""Converting between other formats and Fermion: Parquet (:mod:`.parquet`).

Example:
    >>> import os, tempfile
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"x": [1, 2]}), os.path.join(d, "a.parquet"))
    >>> parquet_to_fermion(os.path.join(d, "a.parquet"), os.path.join(d, "a.fermion")).num_rows
    2
"""

from fermion.format.convert.parquet import (
    ConversionSummary,
    fermion_to_parquet,
    parquet_to_fermion,
)

__all__ = ["ConversionSummary", "fermion_to_parquet", "parquet_to_fermion"]
