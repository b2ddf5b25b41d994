"""Suite files: every key parsed, every mistake named with its key and file."""

from __future__ import annotations

from pathlib import Path

import pytest

from fermion.errors import InvalidArgumentError
from fermion.quality import RowCount, SuiteError, ValueRange, load_suite

REPO = Path(__file__).resolve().parents[2]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    return path


def test_every_key_is_read(tmp_path: Path) -> None:
    suite = load_suite(
        _write(
            tmp_path,
            "suite: s\nrow_count: {min: 1, max: 9}\nnot_null: [a, b]\n"
            "unique: [a, [b, c]]\nranges: {a: {min: 0.5}, b: {max: 3}}\n"
            "batch_integrity: {column: b}\n",
        )
    )
    assert suite.name == "s"
    assert suite.row_count == RowCount(1, 9)
    assert suite.not_null == ("a", "b")
    assert suite.unique == (("a",), ("b", "c"))
    assert suite.ranges == (ValueRange("a", 0.5, None), ValueRange("b", None, 3))
    assert suite.batch_id_column == "b"


def test_the_projects_suites_load() -> None:
    paths = sorted((REPO / "conf" / "quality").glob("*.yaml"))
    assert paths
    for path in paths:
        assert load_suite(path).name


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("suite: s\nnot_nul: [a]\n", "key 'not_nul': unknown key"),
        ("not_null: [a]\n", "key 'suite'"),
        ("suite: s\nrow_count: {min: 1.5}\n", "key 'row_count.min': expected an integer"),
        ("suite: s\nrow_count: {min: 5, max: 2}\n", "min 5 is above max 2"),
        ("suite: s\nranges: {a: {low: 1}}\n", "key 'ranges.a'"),
        ("suite: s\nranges: {a: {min: yes}}\n", "key 'ranges.a.min': expected a number"),
        ("suite: s\nnot_null: [1]\n", "key 'not_null'"),
        ("suite: s\nunique: a\n", "key 'unique'"),
        ("suite: s\nbatch_integrity: request_id\n", "key 'batch_integrity'"),
        ("- a\n- b\n", "a mapping of keys"),
        ("suite: [unclosed\n", "cannot read the suite file"),
    ],
)
def test_mistakes_are_named(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert str(info.value).startswith(str(path))
    assert message in str(info.value)
    assert isinstance(info.value, InvalidArgumentError)
