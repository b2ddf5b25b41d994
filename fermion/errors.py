"""The Fermion exception tree.

Every error Fermion raises on purpose derives from :class:`FermionError`. Where a
builtin fits, the error also subclasses it, so callers that catch the builtin keep
working::

    FermionError
    ├── InvalidFileError (ValueError)        bytes that are not a valid Fermion file
    │   ├── TruncatedFileError (EOFError)    a range lies past the end of the file
    │   ├── ChecksumError                    a CRC32 does not match
    │   └── UnsupportedVersionError          unknown format version or feature flag
    ├── SchemaMismatchError (ValueError)     data does not fit the declared schema
    ├── UnsupportedTypeError (TypeError)     an Arrow type Fermion cannot store
    ├── ColumnNotFoundError (KeyError)       a projected name is not in the file
    ├── InvalidArgumentError (ValueError)    an option or argument is out of range
    ├── SourceNotFoundError (FileNotFoundError)  the file or object does not exist
    ├── BatchModeError (ValueError)          AppendBatch protocol violations
    ├── CommitError                          the table commit protocol failed
    │   ├── CommitConflictError              retryable; raised after retries ran out
    │   └── IncompatibleTransactionError     not retryable: rebasing cannot help
    ├── ManifestStoreError (OSError)         the external manifest store is unreachable
    ├── MissingExtraError (ImportError)      an optional dependency is not installed
    └── DatasetError (ValueError)            table-level misuse (missing version, ...)

Example:
    >>> import fermion
    >>> issubclass(fermion.TruncatedFileError, fermion.InvalidFileError)
    True
"""

from __future__ import annotations

__all__ = [
    "BatchModeError",
    "ChecksumError",
    "ColumnNotFoundError",
    "CommitConflictError",
    "CommitError",
    "DatasetError",
    "FermionError",
    "IncompatibleTransactionError",
    "InvalidArgumentError",
    "InvalidFileError",
    "ManifestStoreError",
    "MissingExtraError",
    "SchemaMismatchError",
    "SourceNotFoundError",
    "TruncatedFileError",
    "UnsupportedTypeError",
    "UnsupportedVersionError",
]


class FermionError(Exception):
    """Root of every error Fermion raises deliberately."""


class InvalidFileError(FermionError, ValueError):
    """The bytes are not a valid Fermion file (bad magic, inconsistent metadata)."""


class TruncatedFileError(InvalidFileError, EOFError):
    """A footer, metadata block or page lies (partly) beyond the end of the file."""


class ChecksumError(InvalidFileError):
    """A stored CRC32 does not match the bytes it protects."""


class UnsupportedVersionError(InvalidFileError):
    """The file needs a newer reader: unknown major version or required feature flag."""


class SchemaMismatchError(FermionError, ValueError):
    """Data written or appended does not match the declared schema."""


class UnsupportedTypeError(FermionError, TypeError):
    """An Arrow type that this version of the format cannot store."""


class ColumnNotFoundError(FermionError, KeyError):
    """A projected column or nested field path does not exist in the file."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else ""


class InvalidArgumentError(FermionError, ValueError):
    """An option or argument is out of its valid range."""


class SourceNotFoundError(FermionError, FileNotFoundError):
    """The file (or object) to read does not exist."""


class BatchModeError(FermionError, ValueError):
    """The AppendBatch protocol was violated (ids not increasing, empty batch, ...)."""


class CommitError(FermionError):
    """A table commit did not go through."""


class CommitConflictError(CommitError):
    """A concurrent commit conflicts in a way a retry may resolve.

    Raised to the caller only after the configured number of attempts is used up.
    """


class IncompatibleTransactionError(CommitError):
    """A concurrent commit makes this transaction impossible; retrying cannot help."""


class ManifestStoreError(FermionError, OSError):
    """The external manifest store (a database server) cannot be reached or failed a call.

    An ``OSError``: a commit whose insert fails this way has an unknown outcome, and the
    commit loop checks whether it landed before trying again.
    """


class MissingExtraError(FermionError, ImportError):
    """A feature needs an optional dependency that is not installed; the message names the
    ``pip install 'fermion[...]'`` line (:mod:`fermion.extras`)."""


class DatasetError(FermionError, ValueError):
    """Table-level misuse: a version or tag that does not exist, a bad mode, ..."""
