"""Storage access: byte sources with ranged, coalesced reads; buffered sinks."""

from fermion.io.coalesce import MergedRead, coalesce_ranges
from fermion.io.sink import Sink, open_sink
from fermion.io.source import ByteSource, IOStats, open_source, resolve

__all__ = [
    "ByteSource",
    "IOStats",
    "MergedRead",
    "Sink",
    "coalesce_ranges",
    "open_sink",
    "open_source",
    "resolve",
]
