"""The writer's sampled check of BYTE_SPLIT planes (docs/FORMAT.md §5.2): random float64
pages are stored PLAIN without a whole zstd pass, compressible ones keep their planes, and
either way the file reads back exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fermion
from fermion.format.encoding import zstd_blocks
from fermion.format.encoding.byte_split import encode_byte_split
from fermion.format.encoding.pages import planes_pay_sample
from fermion.format.metadata.structs import Encoding
from tests.format.test_stripe_dictionary import data_encodings

ROWS = 200_000  # 1.6 MB of float64: four 512 KiB pages


def _zstd_bytes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Bytes handed to zstd by this thread's compressors, recorded as they are."""
    seen: list[int] = []
    real = zstd_blocks.zstd_compressor

    class Counting:
        def __init__(self, comp: object) -> None:
            self.comp = comp

        def compress(self, data: bytes | memoryview) -> bytes:
            seen.append(len(data))
            return self.comp.compress(data)  # type: ignore[attr-defined]

    monkeypatch.setattr(zstd_blocks, "zstd_compressor", lambda *a, **k: Counting(real(*a, **k)))
    return seen


def test_random_floats_are_plain_without_compressing_their_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = np.random.default_rng(3).random(ROWS) * 3
    seen = _zstd_bytes(monkeypatch)
    path = tmp_path / "r.fermion"
    fermion.write_table(pa.table({"g": values}), path)
    monkeypatch.undo()
    assert data_encodings(path, "g")["DATA"] == {"PLAIN"}
    # one plane sample of 8 blocks (and the encoder's 16 KiB choice samples), not the pages
    assert sum(seen) < values.nbytes / 8
    assert fermion.read_table(path).column("g").to_numpy().tobytes() == values.tobytes()


def test_compressible_floats_keep_their_planes(tmp_path: Path) -> None:
    values = np.random.default_rng(4).random(ROWS).astype(np.float32).astype(np.float64)
    path = tmp_path / "c.fermion"
    fermion.write_table(pa.table({"g": values}), path)
    assert "BYTE_SPLIT" in data_encodings(path, "g")["DATA"]
    assert fermion.read_table(path).column("g").to_numpy().tobytes() == values.tobytes()


def test_the_sample_weighs_each_plane_by_its_length() -> None:
    rng = np.random.default_rng(5)
    random = encode_byte_split(rng.random(65536).tobytes(), 8, sampled=False)
    steps = encode_byte_split((np.arange(65536) * 0.25).tobytes(), 8, sampled=False)
    assert random is not None and steps is not None
    assert not planes_pay_sample(random, Encoding.BYTE_SPLIT, 3, 8192, 0.75)
    assert planes_pay_sample(steps, Encoding.BYTE_SPLIT, 3, 8192, 0.75)
    # too small to sample (under two blocks per plane): the caller decides on the page
    small = encode_byte_split(rng.random(1024).tobytes(), 8, sampled=False)
    assert small is not None and planes_pay_sample(small, Encoding.BYTE_SPLIT, 3, 8192, 0.75)
