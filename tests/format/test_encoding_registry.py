"""The encoding registry (fermion.format.encoding.registry): one entry per encoding id,
whose hooks agree with the kernels they stand for."""

from __future__ import annotations

import numpy as np
import pytest

from fermion.format.encoding import encodings
from fermion.format.encoding.registry import ENCODINGS, decode_payload, kind_of
from fermion.format.metadata.structs import Encoding, RequiredFeature


def test_every_encoding_id_has_one_entry() -> None:
    assert set(ENCODINGS) == set(Encoding)
    for enc, kind in ENCODINGS.items():
        assert kind.encoding is enc and kind_of(int(enc)) is kind
    assert kind_of(max(Encoding) + 1) is None


def test_the_integer_codec_entries_are_its_kernels() -> None:
    ints = {e for e, kind in ENCODINGS.items() if kind.ints is not None}
    assert ints == set(encodings.INT_CODECS)
    assert {e for e in ints if ENCODINGS[e].ints_at is None} == {Encoding.RLE}
    lengths = {e for e, codec in encodings.INT_CODECS.items() if codec.sums_lengths}
    assert lengths == {Encoding.FOR}


@pytest.mark.parametrize(
    "values",
    [
        np.full(300, 7, dtype=np.int64),  # CONSTANT
        np.arange(300, dtype=np.int64) % 13 + 1_000,  # FOR
        np.arange(300, dtype=np.int64) * 3 + 10**12,  # DELTA
        np.repeat(np.arange(10, dtype=np.int64) * 10**9, 30),  # RLE or dictionary
    ],
)
def test_decoding_through_the_registry_matches_the_kernels(values: np.ndarray) -> None:
    enc, payload = encodings.encode_ints(values, out_width=8, compressed=False)
    assert ENCODINGS[enc].ints is not None
    plain = decode_payload(enc, payload, len(values), 8 * len(values), "p")
    assert isinstance(plain, bytes | memoryview)
    assert np.array_equal(np.frombuffer(plain, dtype="<i8"), values)
    into = np.zeros(8 * len(values), dtype=np.uint8)
    assert decode_payload(enc, payload, len(values), 8 * len(values), "p", into) is None
    assert np.array_equal(into.view("<i8"), values)


def test_features_a_page_needs() -> None:
    assert ENCODINGS[Encoding.PLAIN].features(b"x") == RequiredFeature(0)
    packed = RequiredFeature.ENCODINGS | RequiredFeature.BIT_PACKING
    enc, payload = encodings.encode_ints(np.arange(100, dtype=np.int64) % 5, out_width=8)
    assert ENCODINGS[enc].features(payload) == packed
    assert ENCODINGS[Encoding.STRIPE_DICTIONARY].features(b"") & RequiredFeature.STRIPE_DICTIONARY
    assert ENCODINGS[Encoding.DERIVED].features(b"") == packed
