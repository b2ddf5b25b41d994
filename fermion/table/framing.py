"""Framing of manifest and transaction files: magic, kind, length, CRC32, and the table
feature flags a reader or writer must know (docs/TABLE_FORMAT.md, "Framing" and
"Feature flags").

Protobuf alone cannot tell a truncated message from a shorter valid one, so every table
metadata file is framed::

    offset  size  field
    0       4     magic  b"FRMT"
    4       2     kind   1 = manifest, 2 = transaction          (little endian)
    6       2     framing version (1)
    8       8     payload length n
    16      n     payload: protobuf wire format
    16+n    4     CRC32 of the payload
    20+n    4     magic  b"FRMT"

Any deviation raises a typed :class:`~fermion.errors.InvalidFileError` (``TruncatedFileError``
for a short file, ``ChecksumError`` for a CRC mismatch, ``UnsupportedVersionError`` for a
newer framing version or unknown feature flags), never a silently older or partial result.

Example:
    >>> from fermion.table.proto import manifest_pb2 as pb
    >>> data = encode_manifest(pb.Manifest(version=3))
    >>> decode_manifest(data, "3.manifest").version
    3
    >>> decode_manifest(data[:-1], "3.manifest")
    Traceback (most recent call last):
    ...
    fermion.errors.TruncatedFileError: 3.manifest: 25 bytes, the frame needs 26
"""

from __future__ import annotations

import zlib

import numpy as np
from google.protobuf.message import DecodeError

from fermion.errors import (
    ChecksumError,
    InvalidFileError,
    TruncatedFileError,
    UnsupportedVersionError,
)
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.proto import transaction_pb2 as txpb

__all__ = [
    "FLAG_DELETION_FILES",
    "FLAG_INDICES",
    "FLAG_ROW_IDS",
    "FLAG_WRITE_PROPERTIES",
    "FRAMING_VERSION",
    "KIND_MANIFEST",
    "KIND_TRANSACTION",
    "KNOWN_READER_FLAGS",
    "KNOWN_WRITER_FLAGS",
    "MAGIC",
    "check_reader_flags",
    "check_writer_flags",
    "decode_manifest",
    "decode_transaction",
    "encode_manifest",
    "encode_transaction",
]

MAGIC = b"FRMT"
FRAMING_VERSION = 1
KIND_MANIFEST = 1
KIND_TRANSACTION = 2

HEADER = np.dtype([("magic", "S4"), ("kind", "<u2"), ("version", "<u2"), ("length", "<u8")])
TRAILER = np.dtype([("crc32", "<u4"), ("magic", "S4")])
assert HEADER.itemsize == 16 and TRAILER.itemsize == 8

#: Reader feature flag: some fragment has a deletion file that readers must apply.
FLAG_DELETION_FILES = 1
#: Reader feature flag: the manifest lists secondary indices / statistics rebuilds.
FLAG_INDICES = 2
#: Reader and writer feature flag: every fragment has row ids and the manifest keeps
#: ``next_row_id`` (docs/TABLE_FORMAT.md, "Row ids").
FLAG_ROW_IDS = 4
#: Writer feature flag only: the table's config records write properties
#: (``fermion.write.*``) that every writer must honour; older readers still read it
#: (docs/TABLE_FORMAT.md, "Write properties").
FLAG_WRITE_PROPERTIES = 8
KNOWN_READER_FLAGS = FLAG_DELETION_FILES | FLAG_INDICES | FLAG_ROW_IDS
KNOWN_WRITER_FLAGS = FLAG_DELETION_FILES | FLAG_INDICES | FLAG_ROW_IDS | FLAG_WRITE_PROPERTIES


def _frame(kind: int, payload: bytes) -> bytes:
    header = np.zeros(1, HEADER)
    header[0] = (MAGIC, kind, FRAMING_VERSION, len(payload))
    trailer = np.zeros(1, TRAILER)
    trailer[0] = (zlib.crc32(payload), MAGIC)
    return header.tobytes() + payload + trailer.tobytes()


def _unframe(data: bytes, kind: int, name: str) -> bytes:
    size = len(data)
    if size < HEADER.itemsize + TRAILER.itemsize:
        raise TruncatedFileError(f"{name}: {size} bytes is shorter than a frame")
    header = np.frombuffer(data, HEADER, count=1)[0]
    if bytes(header["magic"]) != MAGIC:
        raise InvalidFileError(f"{name}: bad magic {bytes(header['magic'])!r}")
    if int(header["version"]) > FRAMING_VERSION:
        raise UnsupportedVersionError(
            f"{name}: framing version {int(header['version'])} is newer than this reader"
        )
    if int(header["version"]) != FRAMING_VERSION:
        raise InvalidFileError(f"{name}: invalid framing version {int(header['version'])}")
    if int(header["kind"]) != kind:
        raise InvalidFileError(f"{name}: holds kind {int(header['kind'])}, expected {kind}")
    need = HEADER.itemsize + int(header["length"]) + TRAILER.itemsize
    if size < need:
        raise TruncatedFileError(f"{name}: {size} bytes, the frame needs {need}")
    if size > need:
        raise InvalidFileError(f"{name}: {size - need} unexpected bytes after the frame")
    trailer = np.frombuffer(data, TRAILER, count=1, offset=need - TRAILER.itemsize)[0]
    if bytes(trailer["magic"]) != MAGIC:
        raise InvalidFileError(f"{name}: bad trailing magic")
    payload = data[HEADER.itemsize : need - TRAILER.itemsize]
    if zlib.crc32(payload) != int(trailer["crc32"]):
        raise ChecksumError(f"{name}: CRC32 mismatch")
    return bytes(payload)


def encode_manifest(manifest: pb.Manifest) -> bytes:
    """Serialise and frame a manifest."""
    return _frame(KIND_MANIFEST, manifest.SerializeToString(deterministic=True))


def decode_manifest(data: bytes, name: str) -> pb.Manifest:
    """Unframe and parse a manifest; checks the reader feature flags.

    Raises:
        InvalidFileError: Damaged bytes (or a subclass: truncated, checksum, version).
    """
    message = pb.Manifest()
    try:
        message.ParseFromString(_unframe(data, KIND_MANIFEST, name))
    except DecodeError as exc:
        raise InvalidFileError(f"{name}: undecodable manifest: {exc}") from exc
    check_reader_flags(message, name)
    return message


def encode_transaction(transaction: txpb.Transaction) -> bytes:
    """Serialise and frame a transaction."""
    return _frame(KIND_TRANSACTION, transaction.SerializeToString(deterministic=True))


def decode_transaction(data: bytes, name: str) -> txpb.Transaction:
    """Unframe and parse a transaction file.

    Raises:
        InvalidFileError: Damaged bytes (or a subclass).
    """
    message = txpb.Transaction()
    try:
        message.ParseFromString(_unframe(data, KIND_TRANSACTION, name))
    except DecodeError as exc:
        raise InvalidFileError(f"{name}: undecodable transaction: {exc}") from exc
    return message


def check_reader_flags(manifest: pb.Manifest, name: str = "manifest") -> None:
    """Raise ``UnsupportedVersionError`` if the manifest needs reader features we lack.

    Example:
        >>> check_reader_flags(pb.Manifest(reader_feature_flags=1 << 40))
        Traceback (most recent call last):
        ...
        fermion.errors.UnsupportedVersionError: manifest: unknown reader feature flags 0x10000000000
    """
    unknown = manifest.reader_feature_flags & ~KNOWN_READER_FLAGS
    if unknown:
        raise UnsupportedVersionError(f"{name}: unknown reader feature flags {unknown:#x}")


def check_writer_flags(manifest: pb.Manifest, name: str = "manifest") -> None:
    """Raise ``UnsupportedVersionError`` if writing needs features we lack."""
    unknown = manifest.writer_feature_flags & ~KNOWN_WRITER_FLAGS
    if unknown:
        raise UnsupportedVersionError(f"{name}: unknown writer feature flags {unknown:#x}")
