"""The history of a table as a :class:`~fermion.table.dataset.Dataset` shows it: its
versions with their tags (:func:`version_history`) and the live :class:`Tags` mapping
(:meth:`Dataset.versions` and :attr:`Dataset.tags` delegate here; the versions and tags
themselves are read and written by :mod:`fermion.table.versions`).

Example:
    >>> import tempfile, pyarrow as pa
    >>> from fermion.table.dataset import write_dataset
    >>> ds = write_dataset(pa.table({"x": [1]}), tempfile.mkdtemp())
    >>> ds.create_tag("first")
    >>> [(v.version, v.tags) for v in version_history(ds.storage)]
    [(1, ('first',))]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from fermion.table.storage import TableStorage
from fermion.table.versions import (
    VersionInfo,
    create_tag,
    delete_tag,
    list_tags,
    load_manifest,
    version_info,
)

__all__ = ["Tags", "version_history"]


def version_history(storage: TableStorage) -> list[VersionInfo]:
    """Every version still on disk, oldest first, with operation summaries and tags."""
    tags_by_version: dict[int, list[str]] = {}
    for name, version in list_tags(storage).items():
        tags_by_version.setdefault(version, []).append(name)
    return [
        version_info(load_manifest(storage, v), tuple(tags_by_version.get(v, ())))
        for v in storage.versions()
    ]


class Tags(Mapping[str, int]):
    """The tags of a table as a read-only mapping ``name -> version`` (live: every access
    lists the table's tags), with ``create`` and ``delete``. Calling it, as the method
    ``Dataset.tags()`` was called before, returns a ``dict``.

    Example:
        >>> import tempfile, pyarrow as pa
        >>> from fermion.table.dataset import write_dataset
        >>> ds = write_dataset(pa.table({"x": [1]}), tempfile.mkdtemp())
        >>> ds.tags.create("gold")
        >>> dict(ds.tags), "gold" in ds.tags, ds.tags["gold"]
        ({'gold': 1}, True, 1)
        >>> ds.tags.delete("gold")
        >>> len(ds.tags)
        0
    """

    def __init__(self, storage: TableStorage, version: Callable[[], int]) -> None:
        self._storage = storage
        self._version = version  # the dataset's version, the default of create

    def _all(self) -> dict[str, int]:
        return list_tags(self._storage)

    def __getitem__(self, name: str) -> int:
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __call__(self) -> dict[str, int]:
        """Every tag and its version, as a dict."""
        return self._all()

    def __repr__(self) -> str:
        return f"Tags({self._all()!r})"

    def create(self, name: str, version: int | None = None) -> None:
        """Pin ``version`` (default: the dataset's version) as ``name``."""
        create_tag(self._storage, name, self._version() if version is None else version)

    def delete(self, name: str) -> None:
        """Remove the tag ``name``."""
        delete_tag(self._storage, name)
