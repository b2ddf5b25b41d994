from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Schema(_message.Message):
    __slots__ = ("arrow_schema", "field_ids")
    ARROW_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    FIELD_IDS_FIELD_NUMBER: _ClassVar[int]
    arrow_schema: bytes
    field_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, arrow_schema: _Optional[bytes] = ..., field_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class Value(_message.Message):
    __slots__ = ("int_value", "float_value", "string_value", "binary_value", "bool_value")
    INT_VALUE_FIELD_NUMBER: _ClassVar[int]
    FLOAT_VALUE_FIELD_NUMBER: _ClassVar[int]
    STRING_VALUE_FIELD_NUMBER: _ClassVar[int]
    BINARY_VALUE_FIELD_NUMBER: _ClassVar[int]
    BOOL_VALUE_FIELD_NUMBER: _ClassVar[int]
    int_value: int
    float_value: float
    string_value: str
    binary_value: bytes
    bool_value: bool
    def __init__(self, int_value: _Optional[int] = ..., float_value: _Optional[float] = ..., string_value: _Optional[str] = ..., binary_value: _Optional[bytes] = ..., bool_value: _Optional[bool] = ...) -> None: ...

class FieldStats(_message.Message):
    __slots__ = ("field_id", "null_count", "min", "max")
    FIELD_ID_FIELD_NUMBER: _ClassVar[int]
    NULL_COUNT_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    field_id: int
    null_count: int
    min: Value
    max: Value
    def __init__(self, field_id: _Optional[int] = ..., null_count: _Optional[int] = ..., min: _Optional[_Union[Value, _Mapping]] = ..., max: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...

class DataFile(_message.Message):
    __slots__ = ("path", "field_ids", "size_bytes", "file_format")
    PATH_FIELD_NUMBER: _ClassVar[int]
    FIELD_IDS_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    FILE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    path: str
    field_ids: _containers.RepeatedScalarFieldContainer[int]
    size_bytes: int
    file_format: str
    def __init__(self, path: _Optional[str] = ..., field_ids: _Optional[_Iterable[int]] = ..., size_bytes: _Optional[int] = ..., file_format: _Optional[str] = ...) -> None: ...

class DeletionFile(_message.Message):
    __slots__ = ("file_type", "read_version", "id", "num_deleted_rows")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        ARROW_ARRAY: _ClassVar[DeletionFile.Kind]
        BITMAP: _ClassVar[DeletionFile.Kind]
    ARROW_ARRAY: DeletionFile.Kind
    BITMAP: DeletionFile.Kind
    FILE_TYPE_FIELD_NUMBER: _ClassVar[int]
    READ_VERSION_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    NUM_DELETED_ROWS_FIELD_NUMBER: _ClassVar[int]
    file_type: DeletionFile.Kind
    read_version: int
    id: int
    num_deleted_rows: int
    def __init__(self, file_type: _Optional[_Union[DeletionFile.Kind, str]] = ..., read_version: _Optional[int] = ..., id: _Optional[int] = ..., num_deleted_rows: _Optional[int] = ...) -> None: ...

class RowIdSegment(_message.Message):
    __slots__ = ("range", "sorted", "array", "unassigned")
    class Range(_message.Message):
        __slots__ = ("start", "end")
        START_FIELD_NUMBER: _ClassVar[int]
        END_FIELD_NUMBER: _ClassVar[int]
        start: int
        end: int
        def __init__(self, start: _Optional[int] = ..., end: _Optional[int] = ...) -> None: ...
    class Sorted(_message.Message):
        __slots__ = ("base", "bitmap", "count")
        BASE_FIELD_NUMBER: _ClassVar[int]
        BITMAP_FIELD_NUMBER: _ClassVar[int]
        COUNT_FIELD_NUMBER: _ClassVar[int]
        base: int
        bitmap: bytes
        count: int
        def __init__(self, base: _Optional[int] = ..., bitmap: _Optional[bytes] = ..., count: _Optional[int] = ...) -> None: ...
    class Array(_message.Message):
        __slots__ = ("deltas", "count")
        DELTAS_FIELD_NUMBER: _ClassVar[int]
        COUNT_FIELD_NUMBER: _ClassVar[int]
        deltas: bytes
        count: int
        def __init__(self, deltas: _Optional[bytes] = ..., count: _Optional[int] = ...) -> None: ...
    RANGE_FIELD_NUMBER: _ClassVar[int]
    SORTED_FIELD_NUMBER: _ClassVar[int]
    ARRAY_FIELD_NUMBER: _ClassVar[int]
    UNASSIGNED_FIELD_NUMBER: _ClassVar[int]
    range: RowIdSegment.Range
    sorted: RowIdSegment.Sorted
    array: RowIdSegment.Array
    unassigned: int
    def __init__(self, range: _Optional[_Union[RowIdSegment.Range, _Mapping]] = ..., sorted: _Optional[_Union[RowIdSegment.Sorted, _Mapping]] = ..., array: _Optional[_Union[RowIdSegment.Array, _Mapping]] = ..., unassigned: _Optional[int] = ...) -> None: ...

class RowIdSequence(_message.Message):
    __slots__ = ("segments",)
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    segments: _containers.RepeatedCompositeFieldContainer[RowIdSegment]
    def __init__(self, segments: _Optional[_Iterable[_Union[RowIdSegment, _Mapping]]] = ...) -> None: ...

class Fragment(_message.Message):
    __slots__ = ("id", "files", "deletion_file", "physical_rows", "stats", "row_ids")
    ID_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    DELETION_FILE_FIELD_NUMBER: _ClassVar[int]
    PHYSICAL_ROWS_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    ROW_IDS_FIELD_NUMBER: _ClassVar[int]
    id: int
    files: _containers.RepeatedCompositeFieldContainer[DataFile]
    deletion_file: DeletionFile
    physical_rows: int
    stats: _containers.RepeatedCompositeFieldContainer[FieldStats]
    row_ids: RowIdSequence
    def __init__(self, id: _Optional[int] = ..., files: _Optional[_Iterable[_Union[DataFile, _Mapping]]] = ..., deletion_file: _Optional[_Union[DeletionFile, _Mapping]] = ..., physical_rows: _Optional[int] = ..., stats: _Optional[_Iterable[_Union[FieldStats, _Mapping]]] = ..., row_ids: _Optional[_Union[RowIdSequence, _Mapping]] = ...) -> None: ...

class IndexMetadata(_message.Message):
    __slots__ = ("uuid", "name", "kind", "field_ids", "fragment_ids", "dataset_version", "files", "index_version", "num_entries", "size_bytes")
    UUID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    FIELD_IDS_FIELD_NUMBER: _ClassVar[int]
    FRAGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    DATASET_VERSION_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    INDEX_VERSION_FIELD_NUMBER: _ClassVar[int]
    NUM_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    uuid: str
    name: str
    kind: str
    field_ids: _containers.RepeatedScalarFieldContainer[int]
    fragment_ids: _containers.RepeatedScalarFieldContainer[int]
    dataset_version: int
    files: _containers.RepeatedScalarFieldContainer[str]
    index_version: int
    num_entries: int
    size_bytes: int
    def __init__(self, uuid: _Optional[str] = ..., name: _Optional[str] = ..., kind: _Optional[str] = ..., field_ids: _Optional[_Iterable[int]] = ..., fragment_ids: _Optional[_Iterable[int]] = ..., dataset_version: _Optional[int] = ..., files: _Optional[_Iterable[str]] = ..., index_version: _Optional[int] = ..., num_entries: _Optional[int] = ..., size_bytes: _Optional[int] = ...) -> None: ...

class OperationSummary(_message.Message):
    __slots__ = ("operation", "added_files", "removed_files", "added_rows", "removed_rows", "added_fragments", "removed_fragments", "deleted_rows", "properties")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    ADDED_FILES_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FILES_FIELD_NUMBER: _ClassVar[int]
    ADDED_ROWS_FIELD_NUMBER: _ClassVar[int]
    REMOVED_ROWS_FIELD_NUMBER: _ClassVar[int]
    ADDED_FRAGMENTS_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FRAGMENTS_FIELD_NUMBER: _ClassVar[int]
    DELETED_ROWS_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    operation: str
    added_files: int
    removed_files: int
    added_rows: int
    removed_rows: int
    added_fragments: int
    removed_fragments: int
    deleted_rows: int
    properties: _containers.ScalarMap[str, str]
    def __init__(self, operation: _Optional[str] = ..., added_files: _Optional[int] = ..., removed_files: _Optional[int] = ..., added_rows: _Optional[int] = ..., removed_rows: _Optional[int] = ..., added_fragments: _Optional[int] = ..., removed_fragments: _Optional[int] = ..., deleted_rows: _Optional[int] = ..., properties: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Manifest(_message.Message):
    __slots__ = ("schema", "fragments", "version", "parent_version", "timestamp_us", "tag", "reader_feature_flags", "writer_feature_flags", "max_fragment_id", "transaction_file", "transaction_uuid", "summary", "config", "indices", "max_field_id", "writer_library", "writer_version", "next_row_id")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    FRAGMENTS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PARENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_US_FIELD_NUMBER: _ClassVar[int]
    TAG_FIELD_NUMBER: _ClassVar[int]
    READER_FEATURE_FLAGS_FIELD_NUMBER: _ClassVar[int]
    WRITER_FEATURE_FLAGS_FIELD_NUMBER: _ClassVar[int]
    MAX_FRAGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_FILE_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_UUID_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    INDICES_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_ID_FIELD_NUMBER: _ClassVar[int]
    WRITER_LIBRARY_FIELD_NUMBER: _ClassVar[int]
    WRITER_VERSION_FIELD_NUMBER: _ClassVar[int]
    NEXT_ROW_ID_FIELD_NUMBER: _ClassVar[int]
    schema: Schema
    fragments: _containers.RepeatedCompositeFieldContainer[Fragment]
    version: int
    parent_version: int
    timestamp_us: int
    tag: str
    reader_feature_flags: int
    writer_feature_flags: int
    max_fragment_id: int
    transaction_file: str
    transaction_uuid: str
    summary: OperationSummary
    config: _containers.ScalarMap[str, str]
    indices: _containers.RepeatedCompositeFieldContainer[IndexMetadata]
    max_field_id: int
    writer_library: str
    writer_version: str
    next_row_id: int
    def __init__(self, schema: _Optional[_Union[Schema, _Mapping]] = ..., fragments: _Optional[_Iterable[_Union[Fragment, _Mapping]]] = ..., version: _Optional[int] = ..., parent_version: _Optional[int] = ..., timestamp_us: _Optional[int] = ..., tag: _Optional[str] = ..., reader_feature_flags: _Optional[int] = ..., writer_feature_flags: _Optional[int] = ..., max_fragment_id: _Optional[int] = ..., transaction_file: _Optional[str] = ..., transaction_uuid: _Optional[str] = ..., summary: _Optional[_Union[OperationSummary, _Mapping]] = ..., config: _Optional[_Mapping[str, str]] = ..., indices: _Optional[_Iterable[_Union[IndexMetadata, _Mapping]]] = ..., max_field_id: _Optional[int] = ..., writer_library: _Optional[str] = ..., writer_version: _Optional[str] = ..., next_row_id: _Optional[int] = ...) -> None: ...
