"""The Fermion file format: writer, reader, on-disk structs (see docs/FORMAT.md).

Example:
    >>> import pyarrow as pa, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "f.fermion")
    >>> write_table(pa.table({"x": [1, 2, 3]}), path, compression="none")
    >>> with FileReader(path) as r:
    ...     r.metadata.num_rows, r.read(columns=["x"]).column(0).to_pylist()
    (3, [1, 2, 3])
"""

from fermion.format.metadata.footer import FileMetadata
from fermion.format.options import ReadOptions, WriteOptions
from fermion.format.read.reader import FileReader, read_table
from fermion.format.write.writer import FileWriter, write_table

__all__ = [
    "FileMetadata",
    "FileReader",
    "FileWriter",
    "ReadOptions",
    "WriteOptions",
    "read_table",
    "write_table",
]
