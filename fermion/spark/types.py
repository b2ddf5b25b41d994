"""Arrow ↔ Spark types, and batches made to match a declared schema exactly.

Spark checks every record batch a Python data source yields against the Arrow form of the
declared schema (``to_arrow_schema(schema, timezone="UTC")``), nested field names and
nullability included. :func:`spark_schema` maps a table's Arrow schema to Spark types
without loss (docs/SPARK.md has the table); :func:`arrow_schema` is the Arrow schema Spark
expects for a Spark schema; :func:`conform` casts a batch to it.

Example:
    >>> import pyarrow as pa
    >>> schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
    ...                     ("tags", pa.list_(pa.string())), ("n", pa.uint64())])
    >>> spark_schema(schema).simpleString()
    'struct<id:bigint,tags:array<string>,n:decimal(20,0)>'
    >>> arrow_schema(spark_schema(schema)).field("tags").type
    ListType(list<element: string>)
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.types as pat
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from fermion.errors import SchemaMismatchError, UnsupportedTypeError

__all__ = [
    "MAX_LONG_DIGITS",
    "arrow_schema",
    "conform",
    "fits_long",
    "loose",
    "spark_schema",
    "spark_type",
    "unscaled",
]

#: The most digits a decimal whose unscaled value Spark keeps in a long can have.
MAX_LONG_DIGITS = 18

_MAX_DECIMAL_PRECISION = 38

_SIMPLE: list[tuple[object, DataType]] = [
    (pat.is_null, NullType()),
    (pat.is_boolean, BooleanType()),
    (pat.is_int8, ByteType()),
    (pat.is_int16, ShortType()),
    (pat.is_int32, IntegerType()),
    (pat.is_int64, LongType()),
    (pat.is_uint8, ShortType()),  # unsigned: the next wider signed type holds every value
    (pat.is_uint16, IntegerType()),
    (pat.is_uint32, LongType()),
    (pat.is_uint64, DecimalType(20, 0)),
    (pat.is_float16, FloatType()),
    (pat.is_float32, FloatType()),
    (pat.is_float64, DoubleType()),
    (pat.is_string, StringType()),
    (pat.is_large_string, StringType()),
    (pat.is_string_view, StringType()),
    (pat.is_binary, BinaryType()),
    (pat.is_large_binary, BinaryType()),
    (pat.is_binary_view, BinaryType()),
    (pat.is_fixed_size_binary, BinaryType()),
    (pat.is_date, DateType()),
    (pat.is_duration, DayTimeIntervalType()),
]


def spark_type(arrow_type: pa.DataType, name: str = "?") -> DataType:
    """The Spark type that holds every value of ``arrow_type`` exactly.

    Raises:
        UnsupportedTypeError: No Spark type does (unions, times, decimals above 38 digits);
            the message names the column ``name``.

    Example:
        >>> import pyarrow as pa
        >>> spark_type(pa.timestamp("ms", tz="Europe/Paris")), spark_type(pa.timestamp("us"))
        (TimestampType(), TimestampNTZType())
    """
    for test, result in _SIMPLE:
        if test(arrow_type):  # type: ignore[operator]
            return result
    if pat.is_decimal(arrow_type):
        if arrow_type.precision > _MAX_DECIMAL_PRECISION:
            raise UnsupportedTypeError(
                f"column {name!r}: {arrow_type} has more than {_MAX_DECIMAL_PRECISION} digits, "
                "Spark's decimals do not"
            )
        return DecimalType(arrow_type.precision, arrow_type.scale)
    if pat.is_timestamp(arrow_type):
        return TimestampType() if arrow_type.tz is not None else TimestampNTZType()
    if pat.is_dictionary(arrow_type):
        return spark_type(arrow_type.value_type, name)
    if (
        pat.is_list(arrow_type)
        or pat.is_large_list(arrow_type)
        or pat.is_fixed_size_list(arrow_type)
        or pat.is_list_view(arrow_type)
        or pat.is_large_list_view(arrow_type)
    ):
        element = arrow_type.value_field
        return ArrayType(spark_type(element.type, name), containsNull=element.nullable)
    if pat.is_map(arrow_type):
        return MapType(
            spark_type(arrow_type.key_type, name),
            spark_type(arrow_type.item_type, name),
            valueContainsNull=arrow_type.item_field.nullable,
        )
    if pat.is_struct(arrow_type):
        return StructType(
            [
                StructField(f.name, spark_type(f.type, f"{name}.{f.name}"), nullable=f.nullable)
                for f in arrow_type
            ]
        )
    raise UnsupportedTypeError(f"column {name!r}: Arrow type {arrow_type} has no Spark type")


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of an Arrow schema (nullability kept)."""
    return StructType(
        [StructField(f.name, spark_type(f.type, f.name), nullable=f.nullable) for f in schema]
    )


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects batches of ``schema`` to have (timestamps in UTC)."""
    return to_arrow_schema(schema, timezone="UTC")


def loose(data_type: DataType) -> DataType:
    """``data_type`` with every nullability flag set (to compare types alone).

    Example:
        >>> from pyspark.sql.types import ArrayType, LongType
        >>> loose(ArrayType(LongType(), containsNull=False)) == ArrayType(LongType())
        True
    """
    if isinstance(data_type, ArrayType):
        return ArrayType(loose(data_type.elementType), containsNull=True)
    if isinstance(data_type, MapType):
        return MapType(loose(data_type.keyType), loose(data_type.valueType), True)
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, loose(f.dataType), True) for f in data_type])
    return data_type


def conform(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` cast to ``target`` (same column names), refusing lossy casts.

    Raises:
        SchemaMismatchError: A value does not fit the target type (e.g. nanoseconds where
            Spark keeps microseconds), or a column ``target`` declares not nullable holds
            nulls.

    Example:
        >>> import pyarrow as pa
        >>> batch = pa.record_batch({"t": pa.array([1000], pa.timestamp("ns", tz="Asia/Tokyo"))})
        >>> conform(batch, pa.schema([("t", pa.timestamp("us", tz="UTC"))])).column(0)[0]
        <pyarrow.TimestampScalar: '1970-01-01T00:00:00.000001+0000'>
    """
    if batch.schema.equals(target):
        return batch
    batch = batch.select(target.names)
    for field, column in zip(target, batch.columns, strict=True):
        if not field.nullable and column.null_count:
            raise SchemaMismatchError(
                f"column {field.name!r} is declared not nullable but holds "
                f"{column.null_count} null(s)"
            )
    arrays = []
    for field, column in zip(target, batch.columns, strict=True):
        try:
            arrays.append(column if column.type.equals(field.type) else column.cast(field.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise SchemaMismatchError(
                f"column {field.name!r}: cannot convert {column.type} to {field.type}: {exc}"
            ) from None
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def fits_long(arrow_type: pa.DataType) -> bool:
    """Whether ``arrow_type`` is a decimal whose unscaled values fit a long (at most
    :data:`MAX_LONG_DIGITS` digits).

    Example:
        >>> fits_long(pa.decimal128(15, 2)), fits_long(pa.decimal128(19, 2))
        (True, False)
    """
    return pat.is_decimal(arrow_type) and arrow_type.precision <= MAX_LONG_DIGITS


def unscaled(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """The unscaled values of a decimal column of at most 18 digits, as int64 (``12.34``
    of a ``decimal(15,2)`` gives ``1234``), nulls kept.

    Example:
        >>> from decimal import Decimal
        >>> unscaled(pa.array([Decimal("12.34"), None, Decimal("-0.05")], pa.decimal128(15, 2)))
        <pyarrow.lib.Int64Array object at ...>
        [
          1234,
          null,
          -5
        ]
    """
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array([unscaled(c) for c in column.chunks], pa.int64())
    if not fits_long(column.type):
        raise UnsupportedTypeError(f"{column.type} has no unscaled value in a long")
    width = column.type.bit_width // 8
    words = np.frombuffer(column.buffers()[1], dtype=np.int64 if width >= 8 else np.int32)
    step = max(width // words.itemsize, 1)  # a value's low word (little-endian), then its sign
    start = column.offset * step
    values = words[start : start + len(column) * step : step].astype(np.int64)
    mask = column.is_null().to_numpy(zero_copy_only=False) if column.null_count else None
    return pa.array(values, pa.int64(), mask=mask)
