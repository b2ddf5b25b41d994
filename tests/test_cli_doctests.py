"""The examples of docs/CLI.md (one per command) and help text on every option (the
docstring examples of the CLI, converter and demo modules run in tests/test_public_api.py,
with every other module's)."""

from __future__ import annotations

import argparse
import doctest
import shlex
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fermion
import fermion.cli

# --------------------------------------------------------------------------------------
# docs/CLI.md: one example per command, run and compared

CLI_DOC = Path(__file__).resolve().parents[1] / "docs" / "CLI.md"


def _doc_examples() -> list[tuple[str, str]]:
    """``(command line, expected output)`` of the "One example per command" section."""
    text = CLI_DOC.read_text()
    section = text.split("## One example per command", 1)[1].split("\n## ", 1)[0]
    block = section.split("```console\n", 1)[1].split("```", 1)[0]
    examples: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            examples.append((line[2:], []))
        else:
            examples[-1][1].append(line)
    return [(command, "\n".join(out) + "\n") for command, out in examples]


def _events_folder(folder: Path) -> None:
    rows = pa.table({"id": [1, 2, 3, 4], "country": ["de", "us", "jp", "de"]})
    fermion.write_table(rows, folder / "events.fermion")
    pq.write_table(rows, folder / "events.parquet")
    ds = fermion.write_dataset(rows, str(folder / "events"))
    ds.append(pa.table({"id": [5], "country": ["fr"]}))


def test_cli_doc_lists_every_command_with_an_example() -> None:
    parser = fermion.cli.build_parser()
    commands = set(_subparsers(parser))
    shown = {shlex.split(c)[1] for c, _ in _doc_examples() if len(shlex.split(c)) > 1}
    assert commands | {"--version"} <= shown, commands - shown
    table = CLI_DOC.read_text().split("## One example per command", 1)[0]
    for command in commands:
        assert f"`fermion {command} " in table, command


def test_cli_doc_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _events_folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    checker = doctest.OutputChecker()
    examples = _doc_examples()
    assert len(examples) >= 8
    for command, want in examples:
        argv = shlex.split(command)
        assert argv[0] == "fermion"
        code = fermion.cli.main(argv[1:])
        out, err = capsys.readouterr()
        assert code == (2 if argv == ["fermion"] else 0), (command, err)
        assert checker.check_output(want, out, doctest.ELLIPSIS), (command, want, out)


# --------------------------------------------------------------------------------------
# every option of every command has help text


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def test_every_option_has_help() -> None:
    parser = fermion.cli.build_parser()
    parsers = {"fermion": parser, **_subparsers(parser)}
    assert {"inspect", "convert", "cat", "log", "show"} <= set(parsers)
    for name, p in parsers.items():
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                # each command's one-line help in `fermion --help`
                helps = {a.dest: a.help for a in action._choices_actions}
                assert set(helps) == set(action.choices), name
                assert all(helps.values()), helps
                continue
            assert action.help and action.help != argparse.SUPPRESS, (name, action.dest)


def test_bare_fermion_prints_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert fermion.cli.main([]) == 2
    out, err = capsys.readouterr()
    assert err == ""
    for command in ("inspect", "convert", "cat", "log", "show"):
        assert f"\n    {command} " in out


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert fermion.cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"fermion {fermion.__version__}\n"
