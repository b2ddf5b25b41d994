"""The footer: the last 64 bytes of a file, built and parsed here (docs/FORMAT.md).

The footer points at the Column Metadata Blocks, the schema area and the Column Index
Table, and carries the row, column and stripe counts, the format version and the feature
flags a reader must know. :func:`build_footer` is the writer's last step and
:func:`parse_footer` a reader's first check; :class:`FileMetadata` is its file-level facts.

Example:
    >>> raw = build_footer(cmb_offset=8, schema_offset=8, cit_offset=8, num_rows=3,
    ...                    num_columns=1, num_stripes=1, schema_size=0,
    ...                    required_features=0, page_crc=True)
    >>> int(parse_footer(raw, "x")["num_rows"]), len(raw)
    (3, 64)
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from fermion.errors import ChecksumError, InvalidFileError, UnsupportedVersionError
from fermion.format.metadata.structs import (
    FOOTER_DTYPE,
    FORMAT_VERSION_MAJOR,
    MAGIC,
    OptionalFeature,
    RequiredFeature,
    minor_version,
)

__all__ = ["KNOWN_REQUIRED_FEATURES", "FileMetadata", "build_footer", "parse_footer"]

KNOWN_REQUIRED_FEATURES = int(
    RequiredFeature.BATCH_MODE
    | RequiredFeature.ENCODINGS
    | RequiredFeature.BIT_PACKING
    | RequiredFeature.BLOCKS
    | RequiredFeature.CHECKPOINTS
    | RequiredFeature.DECIMAL_FLOATS
    | RequiredFeature.STRIPE_DICTIONARY
    | RequiredFeature.CRC_BLOCKS
    | RequiredFeature.DECIMAL_MULTIPLY
    | RequiredFeature.DICT_BLOCKS
)  # format 1.7
_FOOTER_CRC_BYTES = 40  # the footer CRC covers the fields before it


@dataclass(frozen=True)
class FileMetadata:
    """File-level facts from the footer."""

    file_size: int
    num_rows: int
    num_columns: int
    num_stripes: int
    format_version: str
    required_features: int
    optional_features: int

    def to_dict(self) -> dict[str, Any]:
        """The facts as a JSON-able dict.

        Example:
            >>> FileMetadata(10, 1, 1, 1, "1.4", 0, 0).to_dict()["format_version"]
            '1.4'
        """
        return asdict(self)


def build_footer(
    *,
    cmb_offset: int,
    schema_offset: int,
    cit_offset: int,
    num_rows: int,
    num_columns: int,
    num_stripes: int,
    schema_size: int,
    required_features: int,
    page_crc: bool,
) -> bytes:
    """The footer's 64 bytes (version from the required features, CRC filled in).

    Example:
        >>> raw = build_footer(cmb_offset=8, schema_offset=8, cit_offset=8, num_rows=0,
        ...                    num_columns=0, num_stripes=0, schema_size=0,
        ...                    required_features=0, page_crc=False)
        >>> int(parse_footer(raw, "x")["num_rows"]), len(raw)
        (0, 64)
    """
    footer = np.zeros(1, dtype=FOOTER_DTYPE)
    f = footer[0]
    f["cmb_offset"] = cmb_offset
    f["schema_offset"] = schema_offset
    f["cit_offset"] = cit_offset
    f["num_rows"] = num_rows
    f["num_columns"] = num_columns
    f["num_stripes"] = num_stripes
    f["schema_size"] = schema_size
    f["required_features"] = required_features
    f["optional_features"] = OptionalFeature.PAGE_CRC if page_crc else 0
    f["version_major"] = FORMAT_VERSION_MAJOR
    f["version_minor"] = minor_version(required_features)
    f["magic"] = MAGIC
    f["footer_crc"] = zlib.crc32(footer.tobytes()[:_FOOTER_CRC_BYTES])
    return footer.tobytes()


def parse_footer(raw: bytes, name: str) -> np.void:
    """The footer record of the last ``FOOTER_DTYPE.itemsize`` bytes ``raw`` of file ``name``,
    after its magic, major version, CRC and required feature flags are checked.

    Raises:
        InvalidFileError: bad magic. UnsupportedVersionError: another major version or an
            unknown required feature. ChecksumError: the footer CRC does not match.

    Example:
        >>> parse_footer(bytes(64), "x.fermion")
        Traceback (most recent call last):
        ...
        fermion.errors.InvalidFileError: x.fermion: not a Fermion file (bad footer magic)
    """
    footer = np.frombuffer(raw, dtype=FOOTER_DTYPE, count=1)[0]
    if bytes(footer["magic"]) != MAGIC:
        raise InvalidFileError(f"{name}: not a Fermion file (bad footer magic)")
    if int(footer["version_major"]) != FORMAT_VERSION_MAJOR:
        raise UnsupportedVersionError(
            f"{name}: format version {int(footer['version_major'])}."
            f"{int(footer['version_minor'])} is not supported (this reader: "
            f"{FORMAT_VERSION_MAJOR}.x)"
        )
    if zlib.crc32(bytes(raw[:_FOOTER_CRC_BYTES])) != int(footer["footer_crc"]):
        raise ChecksumError(f"{name}: footer CRC32 mismatch")
    unknown = int(footer["required_features"]) & ~KNOWN_REQUIRED_FEATURES
    if unknown:
        raise UnsupportedVersionError(f"{name}: unknown required feature flags {unknown:#x}")
    return footer
