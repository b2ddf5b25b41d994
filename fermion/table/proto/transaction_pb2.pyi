from fermion.table.proto import manifest_pb2 as _manifest_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Transaction(_message.Message):
    __slots__ = ("read_version", "uuid", "timestamp_us", "append", "delete", "overwrite", "rewrite", "create_index", "schema_change", "restore", "merge_insert", "update", "add_columns", "drop_index", "update_config")
    class Append(_message.Message):
        __slots__ = ("fragments", "config")
        class ConfigEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: str
            def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
        FRAGMENTS_FIELD_NUMBER: _ClassVar[int]
        CONFIG_FIELD_NUMBER: _ClassVar[int]
        fragments: _containers.RepeatedCompositeFieldContainer[_manifest_pb2.Fragment]
        config: _containers.ScalarMap[str, str]
        def __init__(self, fragments: _Optional[_Iterable[_Union[_manifest_pb2.Fragment, _Mapping]]] = ..., config: _Optional[_Mapping[str, str]] = ...) -> None: ...
    class Delete(_message.Message):
        __slots__ = ("updated_fragments", "deleted_fragment_ids", "predicate")
        UPDATED_FRAGMENTS_FIELD_NUMBER: _ClassVar[int]
        DELETED_FRAGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
        PREDICATE_FIELD_NUMBER: _ClassVar[int]
        updated_fragments: _containers.RepeatedCompositeFieldContainer[_manifest_pb2.Fragment]
        deleted_fragment_ids: _containers.RepeatedScalarFieldContainer[int]
        predicate: str
        def __init__(self, updated_fragments: _Optional[_Iterable[_Union[_manifest_pb2.Fragment, _Mapping]]] = ..., deleted_fragment_ids: _Optional[_Iterable[int]] = ..., predicate: _Optional[str] = ...) -> None: ...
    class Overwrite(_message.Message):
        __slots__ = ("fragments", "schema", "max_field_id", "config")
        class ConfigEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: str
            def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
        FRAGMENTS_FIELD_NUMBER: _ClassVar[int]
        SCHEMA_FIELD_NUMBER: _ClassVar[int]
        MAX_FIELD_ID_FIELD_NUMBER: _ClassVar[int]
        CONFIG_FIELD_NUMBER: _ClassVar[int]
        fragments: _containers.RepeatedCompositeFieldContainer[_manifest_pb2.Fragment]
        schema: _manifest_pb2.Schema
        max_field_id: int
        config: _containers.ScalarMap[str, str]
        def __init__(self, fragments: _Optional[_Iterable[_Union[_manifest_pb2.Fragment, _Mapping]]] = ..., schema: _Optional[_Union[_manifest_pb2.Schema, _Mapping]] = ..., max_field_id: _Optional[int] = ..., config: _Optional[_Mapping[str, str]] = ...) -> None: ...
    class RewriteGroup(_message.Message):
        __slots__ = ("old_fragment_ids", "new_fragments")
        OLD_FRAGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
        NEW_FRAGMENTS_FIELD_NUMBER: _ClassVar[int]
        old_fragment_ids: _containers.RepeatedScalarFieldContainer[int]
        new_fragments: _containers.RepeatedCompositeFieldContainer[_manifest_pb2.Fragment]
        def __init__(self, old_fragment_ids: _Optional[_Iterable[int]] = ..., new_fragments: _Optional[_Iterable[_Union[_manifest_pb2.Fragment, _Mapping]]] = ...) -> None: ...
    class Rewrite(_message.Message):
        __slots__ = ("groups",)
        GROUPS_FIELD_NUMBER: _ClassVar[int]
        groups: _containers.RepeatedCompositeFieldContainer[Transaction.RewriteGroup]
        def __init__(self, groups: _Optional[_Iterable[_Union[Transaction.RewriteGroup, _Mapping]]] = ...) -> None: ...
    class CreateIndex(_message.Message):
        __slots__ = ("index", "fragment_stats")
        INDEX_FIELD_NUMBER: _ClassVar[int]
        FRAGMENT_STATS_FIELD_NUMBER: _ClassVar[int]
        index: _manifest_pb2.IndexMetadata
        fragment_stats: _containers.RepeatedCompositeFieldContainer[_manifest_pb2.Fragment]
        def __init__(self, index: _Optional[_Union[_manifest_pb2.IndexMetadata, _Mapping]] = ..., fragment_stats: _Optional[_Iterable[_Union[_manifest_pb2.Fragment, _Mapping]]] = ...) -> None: ...
    class SchemaChange(_message.Message):
        __slots__ = ("schema", "max_field_id")
        SCHEMA_FIELD_NUMBER: _ClassVar[int]
        MAX_FIELD_ID_FIELD_NUMBER: _ClassVar[int]
        schema: _manifest_pb2.Schema
        max_field_id: int
        def __init__(self, schema: _Optional[_Union[_manifest_pb2.Schema, _Mapping]] = ..., max_field_id: _Optional[int] = ...) -> None: ...
    class DropIndex(_message.Message):
        __slots__ = ("name",)
        NAME_FIELD_NUMBER: _ClassVar[int]
        name: str
        def __init__(self, name: _Optional[str] = ...) -> None: ...
    class Restore(_message.Message):
        __slots__ = ("version",)
        VERSION_FIELD_NUMBER: _ClassVar[int]
        version: int
        def __init__(self, version: _Optional[int] = ...) -> None: ...
    class MergeInsert(_message.Message):
        __slots__ = ("updated_fragments", "removed_fragment_ids", "new_fragments", "on", "key_hashes", "inserted_rows", "config")
        class ConfigEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: str
            def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
        UPDATED_FRAGMENTS_FIELD_NUMBER: _ClassVar[int]
        REMOVED_FRAGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
        NEW_FRAGMENTS_FIELD_NUMBER: _ClassVar[int]
        ON_FIELD_NUMBER: _ClassVar[int]
        KEY_HASHES_FIELD_NUMBER: _ClassVar[int]
        INSERTED_ROWS_FIELD_NUMBER: _ClassVar[int]
        CONFIG_FIELD_NUMBER: _ClassVar[int]
        updated_fragments: _containers.RepeatedCompositeFieldContainer[_manifest_pb2.Fragment]
        removed_fragment_ids: _containers.RepeatedScalarFieldContainer[int]
        new_fragments: _containers.RepeatedCompositeFieldContainer[_manifest_pb2.Fragment]
        on: _containers.RepeatedScalarFieldContainer[str]
        key_hashes: _containers.RepeatedScalarFieldContainer[int]
        inserted_rows: int
        config: _containers.ScalarMap[str, str]
        def __init__(self, updated_fragments: _Optional[_Iterable[_Union[_manifest_pb2.Fragment, _Mapping]]] = ..., removed_fragment_ids: _Optional[_Iterable[int]] = ..., new_fragments: _Optional[_Iterable[_Union[_manifest_pb2.Fragment, _Mapping]]] = ..., on: _Optional[_Iterable[str]] = ..., key_hashes: _Optional[_Iterable[int]] = ..., inserted_rows: _Optional[int] = ..., config: _Optional[_Mapping[str, str]] = ...) -> None: ...
    class Update(_message.Message):
        __slots__ = ("updated_fragments", "removed_fragment_ids", "new_fragments", "predicate", "columns", "replace_where")
        UPDATED_FRAGMENTS_FIELD_NUMBER: _ClassVar[int]
        REMOVED_FRAGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
        NEW_FRAGMENTS_FIELD_NUMBER: _ClassVar[int]
        PREDICATE_FIELD_NUMBER: _ClassVar[int]
        COLUMNS_FIELD_NUMBER: _ClassVar[int]
        REPLACE_WHERE_FIELD_NUMBER: _ClassVar[int]
        updated_fragments: _containers.RepeatedCompositeFieldContainer[_manifest_pb2.Fragment]
        removed_fragment_ids: _containers.RepeatedScalarFieldContainer[int]
        new_fragments: _containers.RepeatedCompositeFieldContainer[_manifest_pb2.Fragment]
        predicate: str
        columns: _containers.RepeatedScalarFieldContainer[str]
        replace_where: bool
        def __init__(self, updated_fragments: _Optional[_Iterable[_Union[_manifest_pb2.Fragment, _Mapping]]] = ..., removed_fragment_ids: _Optional[_Iterable[int]] = ..., new_fragments: _Optional[_Iterable[_Union[_manifest_pb2.Fragment, _Mapping]]] = ..., predicate: _Optional[str] = ..., columns: _Optional[_Iterable[str]] = ..., replace_where: _Optional[bool] = ...) -> None: ...
    class AddColumns(_message.Message):
        __slots__ = ("schema", "max_field_id", "fragment_files")
        SCHEMA_FIELD_NUMBER: _ClassVar[int]
        MAX_FIELD_ID_FIELD_NUMBER: _ClassVar[int]
        FRAGMENT_FILES_FIELD_NUMBER: _ClassVar[int]
        schema: _manifest_pb2.Schema
        max_field_id: int
        fragment_files: _containers.RepeatedCompositeFieldContainer[_manifest_pb2.Fragment]
        def __init__(self, schema: _Optional[_Union[_manifest_pb2.Schema, _Mapping]] = ..., max_field_id: _Optional[int] = ..., fragment_files: _Optional[_Iterable[_Union[_manifest_pb2.Fragment, _Mapping]]] = ...) -> None: ...
    class UpdateConfig(_message.Message):
        __slots__ = ("upsert", "remove")
        class UpsertEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: str
            def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
        UPSERT_FIELD_NUMBER: _ClassVar[int]
        REMOVE_FIELD_NUMBER: _ClassVar[int]
        upsert: _containers.ScalarMap[str, str]
        remove: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, upsert: _Optional[_Mapping[str, str]] = ..., remove: _Optional[_Iterable[str]] = ...) -> None: ...
    READ_VERSION_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_US_FIELD_NUMBER: _ClassVar[int]
    APPEND_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    OVERWRITE_FIELD_NUMBER: _ClassVar[int]
    REWRITE_FIELD_NUMBER: _ClassVar[int]
    CREATE_INDEX_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_CHANGE_FIELD_NUMBER: _ClassVar[int]
    RESTORE_FIELD_NUMBER: _ClassVar[int]
    MERGE_INSERT_FIELD_NUMBER: _ClassVar[int]
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    ADD_COLUMNS_FIELD_NUMBER: _ClassVar[int]
    DROP_INDEX_FIELD_NUMBER: _ClassVar[int]
    UPDATE_CONFIG_FIELD_NUMBER: _ClassVar[int]
    read_version: int
    uuid: str
    timestamp_us: int
    append: Transaction.Append
    delete: Transaction.Delete
    overwrite: Transaction.Overwrite
    rewrite: Transaction.Rewrite
    create_index: Transaction.CreateIndex
    schema_change: Transaction.SchemaChange
    restore: Transaction.Restore
    merge_insert: Transaction.MergeInsert
    update: Transaction.Update
    add_columns: Transaction.AddColumns
    drop_index: Transaction.DropIndex
    update_config: Transaction.UpdateConfig
    def __init__(self, read_version: _Optional[int] = ..., uuid: _Optional[str] = ..., timestamp_us: _Optional[int] = ..., append: _Optional[_Union[Transaction.Append, _Mapping]] = ..., delete: _Optional[_Union[Transaction.Delete, _Mapping]] = ..., overwrite: _Optional[_Union[Transaction.Overwrite, _Mapping]] = ..., rewrite: _Optional[_Union[Transaction.Rewrite, _Mapping]] = ..., create_index: _Optional[_Union[Transaction.CreateIndex, _Mapping]] = ..., schema_change: _Optional[_Union[Transaction.SchemaChange, _Mapping]] = ..., restore: _Optional[_Union[Transaction.Restore, _Mapping]] = ..., merge_insert: _Optional[_Union[Transaction.MergeInsert, _Mapping]] = ..., update: _Optional[_Union[Transaction.Update, _Mapping]] = ..., add_columns: _Optional[_Union[Transaction.AddColumns, _Mapping]] = ..., drop_index: _Optional[_Union[Transaction.DropIndex, _Mapping]] = ..., update_config: _Optional[_Union[Transaction.UpdateConfig, _Mapping]] = ...) -> None: ...
