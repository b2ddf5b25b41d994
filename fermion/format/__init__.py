"""The Fermion file format: writer, reader, on-disk structs (see docs/FORMAT.md)."""

from fermion.format.options import ReadOptions, WriteOptions
from fermion.format.reader import FileMetadata, FileReader, read_table
from fermion.format.writer import FileWriter, write_table

__all__ = [
    "FileMetadata",
    "FileReader",
    "FileWriter",
    "ReadOptions",
    "WriteOptions",
    "read_table",
    "write_table",
]
