"""A pyarrow compute expression as a tree of tuples, read through public pyarrow API.

Arrow pickles an expression as an IPC file whose schema metadata lists the tree in prefix
order (``call`` / ``field_ref`` / ``nested_field_ref`` / ``literal`` / ``options`` /
``end`` entries, duplicates kept) and whose one record batch holds the literals and the
function options. ``Schema.metadata`` is a dict (duplicates lost), so the entries are read
from ``Schema.to_string``; a field name that would make that text ambiguous makes the
reading fail (checked against the names :func:`referenced_fields` finds), never guess.

Nodes: ``("call", function, [args], options scalar or None)``, ``("field", name)`` for a
top-level field, ``("nested",)``, ``("literal", scalar)``.

Example:
    >>> import pyarrow.compute as pc
    >>> expression_tree(pc.field("a") > 1)
    ('call', 'greater', [('field', 'a'), ('literal', <pyarrow.Int64Scalar: 1>)], None)
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import InvalidArgumentError
from fermion.format.read.pruning import ExpressionMemo, referenced_fields

__all__ = ["expression_tree"]

_SECTION = "\n-- schema metadata --\n"
_ENTRY = re.compile(r"^(call|field_ref|nested_field_ref|literal|options|end): '(.*)'$")


def expression_tree(expr: pc.Expression) -> Any:
    """The tree of ``expr`` (see the module docstring).

    Raises:
        InvalidArgumentError: Not an expression, or one whose serialisation is not read.
    """
    found = _TREES.get(expr)
    if found is not None:
        return found
    return _TREES.put(expr, _read_tree(expr))


#: The trees of the last few expressions read (a scan's filter is read by each index,
#: and a filter text parsed once is the same expression in the next scans); not to be
#: modified by callers.
_TREES = ExpressionMemo()


def _read_tree(expr: pc.Expression) -> Any:
    if not isinstance(expr, pc.Expression):
        raise InvalidArgumentError(f"expected a pyarrow.compute.Expression, got {expr!r}")
    try:
        _, (buf,) = expr.__reduce__()
        reader = pa.ipc.open_file(buf)
        batch = reader.get_batch(0) if reader.num_record_batches else None
        text = reader.schema.to_string(truncate_metadata=False, show_field_metadata=False)
    except (pa.ArrowException, ValueError, TypeError) as exc:
        raise InvalidArgumentError(f"cannot read expression {expr}: {exc}") from None
    if _SECTION not in text:
        raise InvalidArgumentError(f"cannot read expression {expr}: no tree")
    entries = []
    for line in text.rsplit(_SECTION, 1)[1].splitlines():
        match = _ENTRY.match(line)
        if match is None:
            raise InvalidArgumentError(f"cannot read expression {expr}: {line!r}")
        entries.append((match.group(1), match.group(2)))
    tree, used = _Reader(entries, batch).node(), set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if node[0] == "field":
            used.add(node[1])
        elif node[0] == "call":
            stack.extend(node[2])
    if not used <= referenced_fields(expr):
        raise InvalidArgumentError(f"cannot read expression {expr}: ambiguous field names")
    return tree


class _Reader:
    def __init__(self, entries: list[tuple[str, str]], batch: pa.RecordBatch | None) -> None:
        self.entries, self.batch, self.pos = entries, batch, 0

    def column(self, index: str) -> pa.Scalar:
        if self.batch is None or not index.isdigit() or int(index) >= self.batch.num_columns:
            raise InvalidArgumentError(f"expression literal {index} missing")
        return self.batch.column(int(index))[0]

    def node(self) -> Any:
        if self.pos >= len(self.entries):
            raise InvalidArgumentError("expression tree ends early")
        key, value = self.entries[self.pos]
        self.pos += 1
        if key == "field_ref":
            return ("field", value)
        if key == "nested_field_ref":
            if not value.isdigit():
                raise InvalidArgumentError(f"bad nested field reference {value!r}")
            self.pos += int(value)
            return ("nested",)
        if key == "literal":
            return ("literal", self.column(value))
        if key == "call":
            args: list[Any] = []
            options = None
            while self.pos < len(self.entries) and self.entries[self.pos][0] != "end":
                if self.entries[self.pos][0] == "options":
                    options = self.column(self.entries[self.pos][1])
                    self.pos += 1
                    continue
                args.append(self.node())
            self.pos += 1
            return ("call", value, args, options)
        raise InvalidArgumentError(f"unexpected {key!r} in an expression tree")
