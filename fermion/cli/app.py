"""The ``fermion`` command line: the parser, ``main`` and the file commands.

Subcommands::

    fermion inspect FILE [--json] [--columns a,b]    footer, schema, per-column CMB summary
    fermion convert SRC DST [--json] [--force]       .parquet/.parq <-> .fermion
    fermion cat FILE|URI [--columns a,b] [--filter SQL] [--limit N] [--version N]
                [--format table|jsonl|csv]           rows of a file or of a table version
    fermion log URI [--json]                         versions of a table (fermion.cli.table)
    fermion show URI [--version N] [--json]          one version of a table
    fermion --version                                the library version

Bare ``fermion`` prints the help (the commands) on stdout and exits with 2: no command ran.

Expected failures print one line ``fermion: error: ...`` on stderr and exit with 2 for bad
usage or 1 for a Fermion error (bad file, missing column, ...) or an OS error (permission,
full disk, ...); no traceback. Where the user went the wrong way the line says which command
fits (a table directory given to ``cat`` -> ``fermion show``, a Parquet file ->
``fermion convert``). Any other exception is a bug: one line ``fermion: error: internal
error: ...`` and exit code 3; ``fermion --debug ...`` (or ``FERMION_DEBUG=1``) shows the
full traceback instead. Every command sets ``handler=<callable(args: argparse.Namespace) ->
int>`` with ``set_defaults``.

Example:
    >>> main(["convert", "a.csv", "b.fermion"])  # the error line goes to stderr
    2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import NoReturn

import pyarrow as pa

from fermion.cli.render import RowFormat, render_inspect, write_rows
from fermion.cli.table import add_table_commands
from fermion.errors import FermionError, InvalidArgumentError, InvalidFileError
from fermion.format.convert import fermion_to_parquet, parquet_to_fermion
from fermion.format.read.reader import FileReader
from fermion.io.source import open_source
from fermion.io.store import store_for
from fermion.table.dataset import dataset
from fermion.table.predicate import parse_predicate
from fermion.version import __version__

__all__ = ["main", "build_parser"]

PROG = "fermion"
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
DEBUG_ENV_VAR = "FERMION_DEBUG"

PARQUET_SUFFIXES = (".parquet", ".parq")
FERMION_SUFFIXES = (".fermion",)

Handler = Callable[[argparse.Namespace], int]


class UsageError(Exception):
    """Bad command-line usage (exit code 2)."""


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that reports usage errors by raising instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


# --------------------------------------------------------------------------------------
# argument types


def _column_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",")]
    if not text.strip() or any(not n for n in names):
        raise argparse.ArgumentTypeError(f"expected column names separated by commas: {text!r}")
    return names


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


# --------------------------------------------------------------------------------------
# commands


def _exists(path: str) -> bool:
    """Whether a local path or fsspec URL exists."""
    store, where = store_for(path)
    return store.exists(where)


def _is_table_directory(path: str) -> bool:
    store, where = store_for(path)
    return store.isdir(store.join(where, "_versions"))


def _is_parquet(path: str) -> bool:
    """Whether the file ends in the Parquet magic (a cheap guess for a hint)."""
    try:
        source = open_source(path)
    except (OSError, FermionError):
        return False
    try:
        return source.size >= 8 and bytes(source.read(source.size - 4, 4)) == b"PAR1"
    except (OSError, FermionError):
        return False
    finally:
        source.close()


def _open_reader(path: str, command: str) -> FileReader:
    """Open a Fermion file; a table directory or a Parquet file get a hint to the command
    that fits."""
    try:
        return FileReader(path)
    except FileNotFoundError:
        raise InvalidArgumentError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InvalidArgumentError(f"{path}: is a directory") from None
    except InvalidArgumentError:
        if _is_table_directory(path):
            raise InvalidArgumentError(
                f"{path} is a table directory, not a file; try `fermion show {path}` "
                f"or `fermion log {path}`"
            ) from None
        raise
    except InvalidFileError:
        if _is_parquet(path):
            stem = path[: path.rfind(".")] if "." in os.path.basename(path) else path
            raise InvalidFileError(
                f"{path} is a Parquet file, not a Fermion file; try `fermion convert {path} "
                f"{stem}.fermion` and `fermion {command}` the result"
            ) from None
        raise


def _cmd_inspect(args: argparse.Namespace) -> int:
    with _open_reader(args.file, "inspect") as reader:
        info = reader.describe(columns=args.columns)
    if args.json:
        sys.stdout.write(json.dumps(info, indent=2, default=str) + "\n")
    else:
        sys.stdout.write(render_inspect(info))
    return EXIT_OK


def _cmd_cat(args: argparse.Namespace) -> int:
    if _is_table_directory(args.file):
        ds = dataset(args.file, version=args.version)
        scanner = ds.scanner(args.columns, args.filter)
        names = scanner.projected_schema.names
        if args.limit == 0:
            _print_rows(iter(()), names, args.limit, args.format)
            return EXIT_OK
        batches = scanner.to_batches()
        try:
            _print_rows(batches, names, args.limit, args.format)
        finally:
            batches.close()  # stops the fragments read ahead
        return EXIT_OK
    if args.version is not None:
        raise UsageError(f"--version is for table directories; {args.file} is not one")
    with _open_reader(args.file, "cat") as reader:
        where = None if args.filter is None else parse_predicate(args.filter, reader.schema)
        names = list(args.columns) if args.columns else list(reader.schema.names)
        if args.limit == 0:
            reader.read(columns=args.columns, stripes=[])  # unknown columns still fail
            _print_rows(iter(()), names, args.limit, args.format)
        else:
            _print_rows(reader.iter_batches(args.columns, where), names, args.limit, args.format)
    return EXIT_OK


def _print_rows(
    batches: Iterator[pa.RecordBatch], names: list[str], limit: int | None, fmt: RowFormat
) -> None:
    remaining = limit
    header = True
    widths: list[int] | None = None
    if remaining == 0:
        write_rows([], names, sys.stdout, fmt=fmt, header=True)
        return
    for batch in batches:
        if remaining is not None:
            batch = batch.slice(0, remaining)
            remaining -= batch.num_rows
        widths = write_rows(
            batch.to_pylist(),
            batch.schema.names,
            sys.stdout,
            fmt=fmt,
            header=header,
            widths=widths,
        )
        header = False
        if remaining == 0:
            break
    if header:  # no batch at all: an empty file still shows its columns
        write_rows([], names, sys.stdout, fmt=fmt, header=True)


def conversion_direction(src: str, dst: str) -> str:
    """``"parquet->fermion"`` or ``"fermion->parquet"`` from the file extensions.

    Example:
        >>> conversion_direction("s3://b/x.parq", "out.fermion")
        'parquet->fermion'
    """

    def kind(name: str) -> str | None:
        lowered = name.lower()
        if lowered.endswith(PARQUET_SUFFIXES):
            return "parquet"
        if lowered.endswith(FERMION_SUFFIXES):
            return "fermion"
        return None

    pair = (kind(src), kind(dst))
    if pair == ("parquet", "fermion"):
        return "parquet->fermion"
    if pair == ("fermion", "parquet"):
        return "fermion->parquet"
    raise UsageError(
        f"cannot tell the conversion direction from {src!r} -> {dst!r}: one side must end "
        f"in .parquet or .parq and the other in .fermion"
    )


def _cmd_convert(args: argparse.Namespace) -> int:
    direction = conversion_direction(args.src, args.dst)
    convert = parquet_to_fermion if direction == "parquet->fermion" else fermion_to_parquet
    if not args.force and _exists(args.dst):
        raise InvalidArgumentError(f"{args.dst} exists; pass --force to overwrite it")
    summary = convert(args.src, args.dst)
    if args.json:
        sys.stdout.write(json.dumps(summary.to_dict()) + "\n")
    else:
        sys.stdout.write(
            f"{summary.src} -> {summary.dst}: {summary.num_rows:,} rows, "
            f"{summary.num_columns:,} columns, {summary.source_units:,} "
            f"{'row groups' if direction == 'parquet->fermion' else 'stripes'} read, "
            f"{summary.src_bytes:,} -> {summary.dst_bytes:,} bytes "
            f"in {summary.seconds:.2f} s\n"
        )
    return EXIT_OK


# --------------------------------------------------------------------------------------
# parser


def build_parser() -> argparse.ArgumentParser:
    """The ``fermion`` argument parser (usage errors raise :class:`UsageError`).

    Example:
        >>> build_parser().parse_args(["cat", "t.fermion", "--limit", "3"]).limit
        3
    """
    parser = _Parser(
        prog=PROG,
        description="Inspect, convert and print Fermion files; inspect tables.",
        epilog="docs/CLI.md describes every command with an example.",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help=f"show the full traceback of an internal error (or set {DEBUG_ENV_VAR}=1)",
    )
    parser.add_argument(
        "--version", action="version", version=f"{PROG} {__version__}",
        help="print the library version and exit",
    )  # fmt: skip
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=_Parser
    )

    p = sub.add_parser("inspect", help="footer, schema and per-column metadata of a file")
    p.add_argument("file", metavar="FILE", help="a .fermion file: path or fsspec URL")
    p.add_argument("--json", action="store_true", help="print the full description as JSON")
    p.add_argument("--columns", type=_column_list, help="only these columns: a,b,c")
    p.set_defaults(handler=_cmd_inspect)

    p = sub.add_parser("convert", help="convert between Parquet and Fermion")
    p.add_argument("src", metavar="SRC", help="source file (.parquet/.parq or .fermion)")
    p.add_argument("dst", metavar="DST", help="destination file (the other extension)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON line")
    p.add_argument("--force", action="store_true", help="overwrite an existing destination")
    p.set_defaults(handler=_cmd_convert)

    p = sub.add_parser("cat", help="print rows of a file or of a table version")
    p.add_argument(
        "file", metavar="FILE|URI", help="a .fermion file or a table directory: path or fsspec URL"
    )
    p.add_argument("--columns", type=_column_list, help="only these columns: a,b,c")
    p.add_argument(
        "--filter",
        metavar="SQL",
        help="only rows matching a SQL predicate, e.g. \"x > 1 AND y = 'a'\"",
    )
    p.add_argument("--limit", type=_non_negative_int, help="print at most N rows")
    p.add_argument(
        "--version", type=_non_negative_int, default=None,
        help="table version to read (default: the latest; tables only)",
    )  # fmt: skip
    p.add_argument(
        "--format", choices=["table", "jsonl", "csv"], default="table",
        help="aligned text (default), one JSON object per row, or CSV with a header",
    )  # fmt: skip
    p.set_defaults(handler=_cmd_cat)

    add_table_commands(sub)
    return parser


def _fail(message: str, code: int) -> int:
    sys.stderr.write(f"{PROG}: error: {message}\n")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``fermion`` command line; returns the exit code.

    Args:
        argv: arguments without the program name (``sys.argv[1:]`` when ``None``).

    Returns:
        0 on success, 1 on a Fermion error (bad file, missing column...), 2 on bad usage,
        3 on an internal error (a bug; ``--debug`` re-raises it with its traceback).

    Example:
        >>> main(["cat"])
        2
    """
    parser = build_parser()
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments:  # bare `fermion`: show the commands (exit 2: nothing ran)
        sys.stdout.write(parser.format_help())
        return EXIT_USAGE
    try:
        args = parser.parse_args(arguments)
    except UsageError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except SystemExit as exc:  # --help / --version exit through argparse
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    handler: Handler = args.handler
    try:
        return handler(args)
    except UsageError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except FermionError as exc:
        return _fail(_one_line(exc), EXIT_ERROR)
    except BrokenPipeError:  # `fermion cat big.fermion | head`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:  # permissions, a full disk, a network store going away, ...
        return _fail(_one_line(exc), EXIT_ERROR)
    except Exception as exc:  # noqa: BLE001 - a bug: one line unless asked for the traceback
        if args.debug or os.environ.get(DEBUG_ENV_VAR, "") not in ("", "0"):
            raise
        return _fail(
            f"internal error: {type(exc).__name__}: {_one_line(exc)} "
            f"(rerun with --debug or {DEBUG_ENV_VAR}=1 for the traceback)",
            EXIT_INTERNAL,
        )


def _one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line (the first line; the type when it is empty)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
