"""README.md snippets marked ``<!-- readme-test: NAME -->`` run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _snippets() -> dict[str, str]:
    text = README.read_text()
    found = re.findall(r"<!-- readme-test: (\S+) -->\n```python\n(.*?)```", text, re.S)
    return dict(found)


def test_readme_has_tested_snippets() -> None:
    assert "ecosystem" in _snippets()


@pytest.mark.parametrize("name", sorted(_snippets()))
def test_readme_snippet_runs(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(_snippets()[name], f"README.md:{name}", "exec"), namespace)  # noqa: S102
    if name == "ecosystem":  # the results the snippet prints in a REPL
        ds = namespace["ds"]
        duckdb = namespace["duckdb"]
        assert ds.count_rows() == 10_001  # type: ignore[attr-defined]
        # the snippet's relations are lazy: the reader is first consumed here
        reader = namespace["reader"]  # noqa: F841 - DuckDB finds it by its name
        total = duckdb.sql("select sum(score) from reader").fetchall()  # type: ignore[attr-defined]
        assert total == [(sum(i / 2 for i in range(10_000) if i % 7 == 3) + 0.5,)]
