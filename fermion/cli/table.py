"""Table commands for the ``fermion`` CLI: ``fermion log URI`` and ``fermion show URI``.

:func:`fermion.cli.app.build_parser` calls :func:`add_table_commands` with its argparse
subparsers object; each command sets ``handler`` and raises :class:`fermion.FermionError`
for expected failures.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="fermion")
    >>> add_table_commands(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["show", "t", "--version", "3"]).version
    3
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fermion.errors import InvalidArgumentError
from fermion.table.dataset import dataset
from fermion.table.deletions import deletion_path
from fermion.table.ref import parse_storage_option

__all__ = ["add_table_commands", "cmd_log", "cmd_show"]


MANIFEST_STORE_HELP = (
    "external manifest store the table commits through: postgresql://user@host/db or an "
    "SQLite file path (default: FERMION_MANIFEST_STORE, for filesystems without an atomic "
    "create); keep the password in PGPASSWORD or ~/.pgpass"
)


STORAGE_OPTION_HELP = (
    "an option of the table's fsspec filesystem, e.g. endpoint_url=http://localhost:9000 "
    "or region_name=eu-west-1 (repeatable; the value is a string)"
)


def _storage_option(text: str) -> tuple[str, str]:
    try:
        return parse_storage_option(text)
    except InvalidArgumentError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_storage_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--storage-option", metavar="KEY=VALUE", action="append", type=_storage_option,
        default=[], dest="storage_options", help=STORAGE_OPTION_HELP,
    )  # fmt: skip


def add_table_commands(subparsers: Any) -> None:
    """Register ``log`` and ``show`` on an argparse subparsers object."""
    p = subparsers.add_parser("log", help="versions of a table with operation summaries")
    p.add_argument("uri", metavar="URI", help="table directory: path or fsspec URL")
    p.add_argument("--json", action="store_true", help="one JSON object per version")
    p.add_argument("--manifest-store", metavar="STORE", default=None, help=MANIFEST_STORE_HELP)
    _add_storage_option(p)
    p.set_defaults(handler=cmd_log)

    p = subparsers.add_parser("show", help="schema, fragments, deletions and sizes of a version")
    p.add_argument("uri", metavar="URI", help="table directory: path or fsspec URL")
    p.add_argument("--version", type=int, default=None, help="version (default: latest)")
    p.add_argument("--json", action="store_true", help="print as one JSON object")
    p.add_argument("--manifest-store", metavar="STORE", default=None, help=MANIFEST_STORE_HELP)
    _add_storage_option(p)
    p.set_defaults(handler=cmd_show)


def cmd_log(args: argparse.Namespace) -> int:
    """Print every version, newest first."""
    ds = dataset(
        args.uri,
        manifest_store=args.manifest_store,
        storage_options=dict(getattr(args, "storage_options", None) or []),
    )
    for info in reversed(ds.versions()):
        if args.json:
            row = {
                "version": info.version,
                "timestamp": info.timestamp.isoformat(),
                "operation": info.operation,
                "fragments": info.num_fragments,
                "rows": info.num_rows,
                "tags": list(info.tags),
                "summary": info.summary,
            }
            sys.stdout.write(json.dumps(row) + "\n")
            continue
        changes = ", ".join(f"{k}={v}" for k, v in info.summary.items() if v)
        tags = f" [{', '.join(info.tags)}]" if info.tags else ""
        sys.stdout.write(
            f"version {info.version}{tags}  {info.timestamp:%Y-%m-%d %H:%M:%S}Z  "
            f"{info.operation:<13} rows={info.num_rows} fragments={info.num_fragments}"
            f"{'  ' + changes if changes else ''}\n"
        )
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """Print one version: schema with field ids, fragments, deletion files, sizes."""
    ds = dataset(
        args.uri,
        version=args.version,
        manifest_store=args.manifest_store,
        storage_options=dict(getattr(args, "storage_options", None) or []),
    )
    m = ds.manifest
    fragments = []
    for f in m.fragments:
        entry: dict[str, Any] = {
            "id": f.id,
            "physical_rows": f.physical_rows,
            "files": [{"path": d.path, "bytes": d.size_bytes} for d in f.files],
        }
        if f.HasField("deletion_file"):
            entry["deletion_file"] = {
                "path": deletion_path(f.id, f.deletion_file),
                "deleted_rows": f.deletion_file.num_deleted_rows,
            }
        fragments.append(entry)
    ids = ds.table_schema.top_level_ids()
    info = {
        "uri": ds.uri,
        "version": m.version,
        "operation": m.summary.operation,
        "rows": ds.count_rows(),
        "schema": [
            {"name": f.name, "type": str(f.type), "field_id": i, "nullable": f.nullable}
            for f, i in zip(ds.schema, ids, strict=True)
        ],
        "fragments": fragments,
        "data_bytes": sum(d.size_bytes for f in m.fragments for d in f.files),
        "indices": [
            {
                "name": i.name,
                "kind": i.kind,
                "columns": list(i.columns),
                "fragments": len(i.fragment_ids),
                "entries": i.num_entries,
                "bytes": i.size_bytes,
            }
            for i in ds.indices()
        ],  # fmt: skip
        "config": dict(m.config),
    }
    if args.json:
        sys.stdout.write(json.dumps(info) + "\n")
        return 0
    out = [f"{info['uri']}  version {m.version} ({m.summary.operation})  rows={info['rows']}"]
    out.append("schema:")
    out += [f"  {c['field_id']:>4}  {c['name']}: {c['type']}" for c in info["schema"]]
    out.append(f"fragments: {len(fragments)}  data bytes: {info['data_bytes']}")
    for entry in fragments:
        deleted = entry.get("deletion_file")
        gone = f"  deleted={deleted['deleted_rows']} ({deleted['path']})" if deleted else ""
        files = ", ".join(f"{d['path']} ({d['bytes']} B)" for d in entry["files"])
        out.append(f"  #{entry['id']:<5} rows={entry['physical_rows']}{gone}  {files}")
    for index in info["indices"]:
        on = f" on {', '.join(index['columns'])}" if index["columns"] else ""
        out.append(
            f"index {index['name']} ({index['kind']}){on} over {index['fragments']} fragments"
        )
    sys.stdout.write("\n".join(out) + "\n")
    return 0
