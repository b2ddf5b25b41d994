"""Writing a file: shred -> stripes -> pages -> file ("data first, meta last").

:mod:`~fermion.format.write.writer` cuts the input into stripes and lays out the file
(:mod:`~fermion.format.write.batch_stripes`: batch mode's stripes of whole batches);
:mod:`~fermion.format.write.shred` turns one column of a stripe into encoded pages per
stream. Nothing here imports :mod:`fermion.format.read`.

Example:
    >>> import os, tempfile
    >>> import pyarrow as pa
    >>> from fermion.format.write.writer import write_table
    >>> path = os.path.join(tempfile.mkdtemp(), "w.fermion")
    >>> write_table(pa.table({"x": [1, 2]}), path)
    >>> os.path.getsize(path) > 0
    True
"""
