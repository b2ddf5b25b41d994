"""The CRC-32 used for pages: ISA-L's when ``isal`` imports, else zlib's; both must give
the same checksums, so a file written with one verifies with the other."""

from __future__ import annotations

import builtins
import importlib
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fermion
from fermion.format import checksum
from fermion.format.encoding import crc_blocks, pages
from fermion.format.metadata import cmb


@pytest.fixture
def zlib_only(monkeypatch):
    """fermion.format.checksum imported where ``isal`` cannot be imported."""
    real_import = builtins.__import__

    def no_isal(name, *args, **kwargs):
        if name.startswith("isal"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_isal)
    yield importlib.reload(checksum)
    monkeypatch.undo()
    importlib.reload(checksum)


def test_the_fallback_is_zlib_and_computes_the_same_crcs(zlib_only) -> None:
    assert zlib_only.IMPLEMENTATION == "zlib" and zlib_only.crc32 is zlib.crc32
    pytest.importorskip("isal")  # a dependency: installed wherever its wheel exists
    isal_crc32 = importlib.import_module("isal.isal_zlib").crc32  # not via __import__

    data = np.random.default_rng(1).integers(0, 256, 70_000, dtype=np.uint8).tobytes()
    view = memoryview(data)
    for size in (0, 1, 3, 255, 512, 1024, 8192, 70_000):
        for start in (0, 1, 7):
            part = view[start : start + size]
            assert isal_crc32(part) == zlib.crc32(part)
            assert isal_crc32(part, 0xDEADBEEF) == zlib.crc32(part, 0xDEADBEEF)


def test_the_package_uses_isal_when_it_imports() -> None:
    pytest.importorskip("isal")
    assert checksum.IMPLEMENTATION == "isal"
    assert pages.crc32 is checksum.crc32 and cmb.crc32 is checksum.crc32


def test_a_file_written_with_zlib_crcs_verifies_with_the_default(tmp_path: Path, monkeypatch):
    rng = np.random.default_rng(2)
    table = pa.table(
        {
            "k": pa.array(rng.integers(0, 2**40, 100_000)),  # CRC_BLOCKS pages
            "s": pa.array([f"v{int(v)}" for v in rng.integers(0, 10**6, 100_000)]),
        }
    )
    path = tmp_path / "z.fermion"
    monkeypatch.setattr(pages, "crc32", zlib.crc32)  # the writer as the fallback runs it
    monkeypatch.setattr(crc_blocks, "crc32", zlib.crc32)  # (CRC_BLOCKS bodies)
    monkeypatch.setattr(cmb, "crc32", zlib.crc32)  # and its CMBs
    fermion.write_table(table, path)
    monkeypatch.undo()
    idx = [0, 4_097, 99_999]
    with fermion.FileReader(path, verify_checksums=True) as r:
        assert r.read().equals(table)
        assert r.take(idx).equals(table.take(idx))
    data = bytearray(path.read_bytes())  # and a flipped payload byte is still caught
    data[5_000] ^= 0x01
    (tmp_path / "bad.fermion").write_bytes(bytes(data))
    with pytest.raises(fermion.FermionError):
        fermion.FileReader(tmp_path / "bad.fermion").read()
