"""An ``s3fs`` filesystem that counts the S3 requests it makes and the bytes it reads.

Every S3 call of ``s3fs`` (``get_object``, ``put_object``, the multipart calls, listings)
goes through ``S3FileSystem._call_s3``; every byte it reads comes back from
``_cat_file``. :class:`CountingS3FileSystem` counts both, so a test or a benchmark sees how
many requests and bytes an operation cost on the wire.

Example (not run as a doctest: it needs a server, see :mod:`tests.support.s3server`)::

    fs = CountingS3FileSystem(**server.storage_options(), skip_instance_cache=True)
    fermion.dataset((fs, f"{bucket}/t")).to_table(columns=["a"])
    fs.counts["get_object"], fs.bytes_read
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from fsspec.asyn import sync_wrapper
from s3fs import S3FileSystem

__all__ = ["CountingS3FileSystem"]


class CountingS3FileSystem(S3FileSystem):  # type: ignore[misc]
    """``S3FileSystem`` with request counts per S3 method and a count of bytes read."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.counts: Counter[str] = Counter()
        self.keys: list[tuple[str, str]] = []  # (method, key) in call order
        self.bytes_read = 0
        self._count_lock = threading.Lock()

    def reset(self) -> None:
        """Forget what was counted."""
        with self._count_lock:
            self.counts.clear()
            self.keys.clear()
            self.bytes_read = 0

    async def _call_s3(self, method: str, *args: Any, **kwargs: Any) -> Any:
        with self._count_lock:
            self.counts[method] += 1
            self.keys.append((method, str(kwargs.get("Key", ""))))
        return await super()._call_s3(method, *args, **kwargs)

    call_s3 = sync_wrapper(_call_s3)

    async def _cat_file(self, path: str, *args: Any, **kwargs: Any) -> bytes:
        data = await super()._cat_file(path, *args, **kwargs)
        with self._count_lock:
            self.bytes_read += len(data)
        return data
