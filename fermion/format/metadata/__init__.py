"""The on-disk structs and the metadata areas, each built and parsed in one module.

Neutral ground: the writer (:mod:`fermion.format.write`) and the reader
(:mod:`fermion.format.read`) both import from here, and nothing here imports either.

- :mod:`~fermion.format.metadata.structs`: every on-disk struct, declared once;
- :mod:`~fermion.format.metadata.layout`: an Arrow type -> the node tree and its streams;
- :mod:`~fermion.format.metadata.footer`: the footer;
- :mod:`~fermion.format.metadata.cit`: the Column Index Table;
- :mod:`~fermion.format.metadata.cmb`: one Column Metadata Block;
- :mod:`~fermion.format.metadata.schema`: the schema area and its column index;
- :mod:`~fermion.format.metadata.batch`: batch mode's BATCH_META column;
- :mod:`~fermion.format.metadata.stats`: typed min/max statistics in int64 slots.

Example:
    >>> from fermion.format.metadata.structs import FOOTER_DTYPE
    >>> FOOTER_DTYPE.itemsize
    64
"""
