"""The ``fermion`` command line: in-process through ``main([...])`` and once through the
installed console script.

Bad usage tried (exit 2, one ``fermion: error:`` line): no command, an unknown command, a
missing FILE, ``--limit -1``, ``--limit x``, ``--format xml``, ``--columns ""``, ``convert``
with extensions that give no direction (``.csv``, two ``.fermion``, two ``.parquet``).
Fermion errors tried (exit 1, one line): a missing file, a directory, junk bytes, a truncated
Fermion file, a projected column that does not exist, a corrupt Parquet file to convert, a
missing Parquet file to convert.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fermion
import fermion.format as fmt
from fermion.cli import app, build_parser, conversion_direction, main

# --------------------------------------------------------------------------------------
# helpers


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_error_line(err: str) -> None:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fermion: error: "), err
    assert "Traceback" not in err


def sample_table(n: int = 50) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "score": pa.array(np.linspace(0.0, 1.0, n, dtype=np.float32)),
            "name": pa.array([None if i % 7 == 0 else f"n,{i}" for i in range(n)]),
            "tags": pa.array([[i, i + 1] if i % 3 else None for i in range(n)]),
            "empty": pa.nulls(n, pa.float64()),
        }
    )


@pytest.fixture()
def sample(tmp_path: Path) -> Path:
    path = tmp_path / "sample.fermion"
    fmt.write_table(sample_table(), str(path))
    return path


# --------------------------------------------------------------------------------------
# usage errors: exit 2, one line, no traceback


@pytest.mark.parametrize(
    "argv",
    [  # bare `fermion` prints the help instead (tests/test_cli_doctests.py)
        ["frobnicate"],
        ["cat"],
        ["inspect"],
        ["cat", "x.fermion", "--limit", "-1"],
        ["cat", "x.fermion", "--limit", "x"],
        ["cat", "x.fermion", "--format", "xml"],
        ["cat", "x.fermion", "--version", "-1"],
        ["cat", "x.fermion", "--columns", ""],
        ["cat", "x.fermion", "--columns", "a,,b"],
        ["convert", "a.csv", "b.fermion"],
        ["convert", "a.fermion", "b.fermion"],
        ["convert", "a.parquet", "b.parq"],
        ["convert", "only-one.parquet"],
    ],
)
def test_bad_usage_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert_one_error_line(err)


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "inspect" in out and "convert" in out and "cat" in out


def test_conversion_direction_from_extensions() -> None:
    assert conversion_direction("a.parquet", "b.fermion") == "parquet->fermion"
    assert conversion_direction("s3://bucket/a.PARQ", "b.Fermion") == "parquet->fermion"
    assert conversion_direction("x/a.fermion", "memory:///b.parquet") == "fermion->parquet"


def test_columns_and_limit_are_parsed() -> None:
    args = build_parser().parse_args(["cat", "f.fermion", "--columns", "a, b.c", "--limit", "0"])
    assert args.columns == ["a", "b.c"]
    assert args.limit == 0


# --------------------------------------------------------------------------------------
# Fermion errors: exit 1, one line


def test_fermion_errors_exit_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    junk = tmp_path / "junk.fermion"
    junk.write_bytes(b"definitely not a fermion file" * 10)
    fmt.write_table(sample_table(), str(tmp_path / "ok.fermion"))
    data = (tmp_path / "ok.fermion").read_bytes()
    (tmp_path / "cut.fermion").write_bytes(data[: len(data) // 2])
    bad_parquet = tmp_path / "bad.parquet"
    bad_parquet.write_bytes(b"PAR1" + b"\0" * 100)

    cases: list[tuple[list[str], str]] = [
        (["cat", str(tmp_path / "missing.fermion")], "no such file"),
        (["inspect", str(tmp_path / "missing.fermion")], "no such file"),
        (["inspect", str(tmp_path)], ""),
        (["inspect", str(junk)], "junk.fermion"),
        (["cat", str(junk)], "junk.fermion"),
        (["inspect", str(tmp_path / "cut.fermion")], ""),
        (["cat", str(tmp_path / "ok.fermion"), "--columns", "id,nope"], "nope"),
        (["inspect", str(tmp_path / "ok.fermion"), "--columns", "nope"], "nope"),
        (["convert", str(bad_parquet), str(tmp_path / "out.fermion")], "bad.parquet"),
        (["convert", str(tmp_path / "missing.parquet"), str(tmp_path / "o.fermion")], "missing"),
    ]
    for argv, needle in cases:
        code, out, err = run(capsys, *argv)
        assert code == 1, (argv, err)
        assert_one_error_line(err)
        assert needle in err, (argv, err)
    assert not (tmp_path / "out.fermion").exists()


# --------------------------------------------------------------------------------------
# inspect


def test_inspect_human(capsys: pytest.CaptureFixture[str], sample: Path) -> None:
    code, out, err = run(capsys, "inspect", str(sample))
    assert code == 0, err
    assert "rows      50" in out
    assert "columns   5" in out
    for name in ("id", "score", "name", "tags", "empty"):
        assert f"column {name} " in out
    assert out.count("\n  CMB") == 4
    assert "None" not in out
    assert "no CMB: every value is null" in out  # the all-null column


def test_inspect_json(capsys: pytest.CaptureFixture[str], sample: Path) -> None:
    code, out, _ = run(capsys, "inspect", str(sample), "--json")
    assert code == 0
    info = json.loads(out)
    assert info["num_rows"] == 50
    assert [c["name"] for c in info["columns"]] == ["id", "score", "name", "tags", "empty"]
    by_name = {c["name"]: c for c in info["columns"]}
    assert by_name["empty"]["has_cmb"] is False
    assert by_name["id"]["has_cmb"] is True
    chunk = by_name["id"]["streams"][-1]["chunks"][0]
    assert chunk["min"] == 0 and chunk["max"] == 49


def test_inspect_projection(capsys: pytest.CaptureFixture[str], sample: Path) -> None:
    code, out, _ = run(capsys, "inspect", str(sample), "--json", "--columns", "score,id")
    assert code == 0
    assert sorted(c["name"] for c in json.loads(out)["columns"]) == ["id", "score"]
    code, out, _ = run(capsys, "inspect", str(sample), "--columns", "tags")
    assert code == 0
    assert "column tags " in out and "column id " not in out
    assert "(showing 1)" in out


# --------------------------------------------------------------------------------------
# cat


def test_cat_jsonl_round_trips_values(capsys: pytest.CaptureFixture[str], sample: Path) -> None:
    code, out, _ = run(capsys, "cat", str(sample), "--format", "jsonl")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows == sample_table().to_pylist()


def test_cat_csv_with_columns_and_limit(capsys: pytest.CaptureFixture[str], sample: Path) -> None:
    code, out, _ = run(
        capsys, "cat", str(sample), "--format", "csv", "--columns", "name,id", "--limit", "8"
    )
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["name", "id"]
    assert rows[1] == ["", "0"]  # null name -> empty cell
    assert rows[2] == ["n,1", "1"]  # the comma is quoted, not a separator
    assert len(rows) == 1 + 8


def test_cat_table(capsys: pytest.CaptureFixture[str], sample: Path) -> None:
    code, out, _ = run(capsys, "cat", str(sample), "--limit", "3")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["id", "score", "name", "tags", "empty"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert lines[2].split() == ["0", "0.0", "null", "null", "null"]
    assert lines[3].split() == ["1", str(np.float32(1 / 49).item()), "n,1", "[1,2]", "null"]
    assert len(lines) == 2 + 3


def test_cat_limit_zero_and_empty_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    fmt.write_table(sample_table(0), str(tmp_path / "empty.fermion"))
    code, out, _ = run(capsys, "cat", str(tmp_path / "empty.fermion"), "--format", "csv")
    assert code == 0
    assert out.splitlines() == ["id,score,name,tags,empty"]
    fmt.write_table(sample_table(), str(tmp_path / "full.fermion"))
    code, out, _ = run(
        capsys, "cat", str(tmp_path / "full.fermion"), "--limit", "0", "--format", "csv"
    )
    assert code == 0
    assert out.splitlines() == ["id,score,name,tags,empty"]


def test_cat_limit_stops_reading(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = pa.table({"x": np.arange(40_000, dtype=np.int64)})
    path = tmp_path / "big.fermion"
    fmt.write_table(table, str(path), max_stripe_rows=10_000)
    consumed: list[int] = []
    real_iter = fmt.FileReader.iter_batches

    def counting_iter(self: Any, *args: Any, **kwargs: Any) -> Any:
        for batch in real_iter(self, *args, **kwargs):
            consumed.append(batch.num_rows)
            yield batch

    monkeypatch.setattr(fmt.FileReader, "iter_batches", counting_iter)
    code, out, _ = run(capsys, "cat", str(path), "--limit", "5", "--format", "jsonl")
    assert code == 0
    assert [json.loads(line)["x"] for line in out.splitlines()] == [0, 1, 2, 3, 4]
    assert consumed == [10_000]  # the first stripe only


# --------------------------------------------------------------------------------------
# convert


def test_convert_both_directions(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    table = sample_table()
    pq.write_table(table, tmp_path / "in.parq")
    code, out, err = run(capsys, "convert", str(tmp_path / "in.parq"), str(tmp_path / "x.fermion"))
    assert code == 0, err
    assert "50 rows" in out and "5 columns" in out
    assert fmt.read_table(str(tmp_path / "x.fermion")).equals(table)

    code, out, _ = run(
        capsys, "convert", str(tmp_path / "x.fermion"), str(tmp_path / "back.PARQUET"), "--json"
    )
    assert code == 0
    summary = json.loads(out)
    assert summary["direction"] == "fermion->parquet" and summary["num_rows"] == 50
    assert pq.read_table(tmp_path / "back.PARQUET").equals(table)


# --------------------------------------------------------------------------------------
# every reader a command opens is closed, on success and on error


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["inspect", "{path}"], 0),
        (["inspect", "{path}", "--columns", "nope"], 1),
        (["cat", "{path}", "--limit", "3"], 0),
        (["cat", "{path}", "--limit", "0"], 0),
        (["cat", "{path}", "--columns", "nope"], 1),
    ],
)
def test_commands_close_their_readers(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    sample: Path,
    argv: list[str],
    code: int,
) -> None:
    opened: list[Any] = []

    class TrackedReader(fmt.FileReader):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            opened.append(self)

    monkeypatch.setattr(app, "FileReader", TrackedReader)
    assert run(capsys, *(a.format(path=sample) for a in argv))[0] == code
    assert len(opened) == 1
    with pytest.raises(fermion.InvalidArgumentError):
        opened[0].source.read(0, 1)  # a closed source refuses to read


def test_table_commands_are_registered(capsys: pytest.CaptureFixture[str]) -> None:
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert {"inspect", "convert", "cat", "log", "show"} <= set(commands)
    code, _, err = run(capsys, "log")
    assert code == 2
    assert_one_error_line(err)


def test_python_dash_m(tmp_path: Path) -> None:
    fmt.write_table(sample_table(), str(tmp_path / "s.fermion"))
    done = subprocess.run(
        [sys.executable, "-m", "fermion.cli", "cat", str(tmp_path / "s.fermion"), "--limit", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].split()[0] == "id"


# --------------------------------------------------------------------------------------
# the installed console script


def test_console_script(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "fermion"
    assert script.exists(), "the package is not installed with its console script"
    fmt.write_table(sample_table(), str(tmp_path / "s.fermion"))
    done = subprocess.run(
        [str(script), "cat", str(tmp_path / "s.fermion"), "--format", "jsonl", "--limit", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["id"] for line in done.stdout.splitlines()] == [0, 1]

    done = subprocess.run(
        [str(script), "inspect", str(tmp_path / "missing.fermion")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert_one_error_line(done.stderr)

    done = subprocess.run(
        [str(script), "convert", "a.txt", "b.fermion"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert_one_error_line(done.stderr)


def test_internal_error_is_one_line_unless_debug(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    sample: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An exception outside FermionError/OSError is a bug. No known input raises one any
    more, so the converter is replaced by one that fails (the only stand-in in this file)."""

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(app, "fermion_to_parquet", broken)
    monkeypatch.delenv(app.DEBUG_ENV_VAR, raising=False)
    code, _, err = run(capsys, "convert", str(sample), str(tmp_path / "o.parquet"))
    assert code == 3
    assert_one_error_line(err)
    assert "internal error: RuntimeError: boom" in err and "--debug" in err
    with pytest.raises(RuntimeError, match="boom"):
        main(["--debug", "convert", str(sample), str(tmp_path / "o.parquet")])
    monkeypatch.setenv(app.DEBUG_ENV_VAR, "1")
    with pytest.raises(RuntimeError, match="boom"):
        main(["convert", str(sample), str(tmp_path / "o.parquet")])
    monkeypatch.setenv(app.DEBUG_ENV_VAR, "0")
    assert main(["convert", str(sample), str(tmp_path / "o.parquet")]) == 3


# --------------------------------------------------------------------------------------
# cat on a table directory


def test_cat_table_versions_filters_and_limits(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    uri = str(tmp_path / "t")
    ds = fermion.write_dataset(pa.table({"id": [1, 2, 3], "s": ["a", "b", "c"]}), uri)
    ds.append(pa.table({"id": [4], "s": ["d"]}))
    ds.delete("id = 2")
    code, out, _ = run(capsys, "cat", uri, "--format", "jsonl")
    assert code == 0 and [json.loads(x)["id"] for x in out.splitlines()] == [1, 3, 4]
    code, out, _ = run(capsys, "cat", uri, "--version", "1", "--format", "csv", "--columns", "s")
    assert code == 0 and out.splitlines() == ["s", "a", "b", "c"]
    code, out, _ = run(capsys, "cat", uri, "--filter", "id >= 3 AND s <> 'c'", "--format", "csv")
    assert code == 0 and out.splitlines() == ["id,s", "4,d"]
    code, out, _ = run(capsys, "cat", uri, "--limit", "1", "--format", "csv")
    assert code == 0 and out.splitlines() == ["id,s", "1,a"]
    code, out, _ = run(capsys, "cat", uri, "--limit", "0", "--columns", "s", "--format", "csv")
    assert code == 0 and out.splitlines() == ["s"]
    for argv, needle in [
        (["cat", uri, "--version", "9"], "version 9"),
        (["cat", uri, "--filter", "nope = 1"], "nope"),
        (["cat", uri, "--filter", "id >"], "cannot parse"),
        (["cat", uri, "--columns", "nope"], "nope"),
    ]:
        code, out, err = run(capsys, *argv)
        assert code == 1 and out == "" and needle in err, (argv, err)
        assert_one_error_line(err)


def test_cat_file_filter_and_version_on_a_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = str(tmp_path / "f.fermion")
    fermion.write_table(pa.table({"id": [1, 2, 3]}), path)
    code, out, _ = run(capsys, "cat", path, "--filter", "id > 1", "--format", "csv")
    assert code == 0 and out.splitlines() == ["id", "2", "3"]
    code, out, err = run(capsys, "cat", path, "--version", "1")
    assert code == 2 and "table directories" in err
