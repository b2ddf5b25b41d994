"""Reading a file: plan -> fetch -> decode -> assemble, point reads and batch lookups.

:mod:`~fermion.format.read.reader` is the entry; :mod:`~fermion.format.read.metadata`
reads the metadata areas, :mod:`~fermion.format.read.plan` and
:mod:`~fermion.format.read.stripes` plan and fetch a stripe's pages,
:mod:`~fermion.format.read.assemble` turns decoded pages into Arrow arrays, and
:mod:`~fermion.format.read.points` / :mod:`~fermion.format.read.batch_lookup` answer
``take`` without decoding whole pages. Nothing here imports :mod:`fermion.format.write`.

Example:
    >>> import os, tempfile
    >>> import pyarrow as pa
    >>> from fermion.format.read.reader import FileReader
    >>> from fermion.format.write.writer import write_table
    >>> path = os.path.join(tempfile.mkdtemp(), "r.fermion")
    >>> write_table(pa.table({"x": [1, 2, 3]}), path)
    >>> with FileReader(path) as r:
    ...     r.take([2]).column("x").to_pylist()
    [3]
"""
