"""The test loop (tests/conftest.py, Makefile): markers given by path and fixture, and the
markers ``make test-fast`` deselects are the registered ones."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import markers_for

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("relative", "fixtures", "node_id", "expected"),
    [
        ("format/test_roundtrip.py", {"tmp_path"}, "t", set()),
        ("spark/test_spark_read.py", set(), "t", {"spark"}),
        ("jobs/test_runner.py", set(), "t", {"spark"}),
        ("jobs/test_standalone_cluster.py", {"spark"}, "t", {"spark", "cluster"}),
        ("quality/test_validate.py", {"spark", "tmp_path"}, "t", {"spark"}),
        ("quality/test_suite.py", {"tmp_path"}, "t", set()),
        ("benchmarks/test_tpch_bench.py", set(), "t", {"spark"}),
        ("benchmarks/test_point_bench.py", set(), "t", set()),
        ("airflow_dags/test_dagbag.py", set(), "t", {"airflow"}),
        ("test_scripts.py", {"airflow"}, "t", {"airflow"}),
        ("test_packaging.py", {"dist", "tmp_path"}, "t", {"slow"}),
        ("test_public_api.py", set(), "t[fermion.spark.sql]", {"spark"}),
        ("test_public_api.py", set(), "t[fermion.table.dataset]", set()),
    ],
)
def test_markers_by_path_and_fixture(
    relative: str, fixtures: set[str], node_id: str, expected: set[str]
) -> None:
    assert markers_for(relative, fixtures, node_id) == expected


def test_test_fast_deselects_exactly_the_registered_markers() -> None:
    makefile = (ROOT / "Makefile").read_text()
    expression = re.search(r"^FAST_MARKERS := (.+)$", makefile, re.MULTILINE)
    assert expression is not None
    deselected = set(re.findall(r"not (\w+)", expression.group(1)))
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    registered = {line.split(":", 1)[0] for line in ini["markers"]}
    assert deselected == registered == {"spark", "airflow", "cluster", "slow"}


def test_the_collection_hook_marks_the_real_suite() -> None:
    """``-m spark`` over a Spark module and a format module keeps only the Spark one."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
         "-m", "spark", "tests/spark/test_spark_types.py", "tests/format/test_offsets.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    collected = [line for line in done.stdout.splitlines() if "::" in line]
    assert collected, done.stdout
    assert all(line.startswith("tests/spark/test_spark_types.py::") for line in collected)
    assert "deselected" in done.stdout  # the format module's tests were collected, then not


def test_heavy_files_first_keeps_each_group_in_order() -> None:
    """Under xdist the files with a heavy test go first (the order loadfile hands them out)."""
    from types import SimpleNamespace

    from tests.conftest import heavy_files_first

    def item(path: str, *markers: str) -> Any:
        return SimpleNamespace(path=Path(path), get_closest_marker=lambda m: m in markers or None)

    items = [
        item("a.py"), item("b.py"), item("b.py", "spark"), item("c.py"),
        item("d.py", "airflow"), item("e.py", "slow"), item("e.py"),
    ]  # fmt: skip
    ordered = heavy_files_first(items)
    assert [i.path.stem for i in ordered] == ["b", "b", "d", "e", "e", "a", "c"]
    assert ordered[:2] == items[1:3] and ordered[-2:] == [items[0], items[3]]


def test_built_once_is_shared_by_the_xdist_workers(tmp_path: Path) -> None:
    """Two workers, two files asking for one session product: one build, one path for both
    (``make test``'s ``dist`` and Airflow template); without xdist, a build per session."""
    builds = tmp_path / "builds.log"
    (tmp_path / "conftest.py").write_text(
        "import pytest\n"
        "from tests.support.once import built_once\n\n"
        "def _build(folder):\n"
        f"    with open({str(builds)!r}, 'a') as log:\n"
        "        log.write(f'{folder}\\n')\n"
        "    (folder / 'product').write_text('built')\n"
        "    return folder / 'product'\n\n"
        "@pytest.fixture(scope='session')\n"
        "def product(tmp_path_factory):\n"
        "    return built_once(tmp_path_factory, 'product', _build)\n"
    )
    for name in ("test_one.py", "test_two.py"):
        (tmp_path / name).write_text(
            "def test_product(product):\n    assert product.read_text() == 'built'\n"
        )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env["PYTHONPATH"] = str(ROOT)
    for workers, expected_builds in (("2", 1), ("0", 1)):
        builds.unlink(missing_ok=True)
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", workers,
             "--dist", "loadfile", str(tmp_path)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert "2 passed" in done.stdout
        assert len(builds.read_text().splitlines()) == expected_builds, workers


def test_spark_drivers_start_from_the_class_archive_once_it_is_built(tmp_path: Path) -> None:
    from tests.support.spark_cds import JVM_OPTS, jvm_options

    archive = tmp_path / "spark-classes.jsa"
    assert jvm_options(str(archive)) == JVM_OPTS  # not built (yet): the JIT and GC flags only
    archive.write_bytes(b"")
    options = jvm_options(str(archive)).split()
    assert options[:2] == JVM_OPTS.split()
    assert f"-XX:SharedArchiveFile={archive.resolve()}" in options
    assert options[-2:] == ["-Xlog:disable", "-Xlog:all=warning:stderr"]  # never on stdout
    makefile = (ROOT / "Makefile").read_text()
    assert "FERMION_TEST_SPARK_CDS=$(SPARK_CDS) $(PY) -m pytest" in makefile


def test_a_class_archive_that_cannot_be_built_does_not_stop_make_test(tmp_path: Path) -> None:
    """Bad input tried: an archive path whose directory cannot be made. The build says why
    on stderr and exits 0, so ``make test`` runs with drivers that start without it."""
    target = tmp_path / "a-file"
    target.write_text("not a directory")
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.spark_cds", str(target / "spark-classes.jsa")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "no class archive" in done.stderr and done.stdout == ""
    assert not (target / "spark-classes.jsa").exists()


def test_the_timeline_plugin_records_each_file_once_where_it_ran(tmp_path: Path) -> None:
    """``-p tests.support.timeline --timeline=F``: one line per file from the process that ran
    it (an xdist worker, or ``main`` without xdist), none from the xdist controller, and the
    per-worker summary at the end."""
    from tests.support.timeline import read

    for name, tests in (("test_one.py", 3), ("test_two.py", 1)):
        body = "".join(f"def test_{i}():\n    assert True\n\n" for i in range(tests))
        (tmp_path / name).write_text(body)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env["PYTHONPATH"] = str(ROOT)
    for workers in ("2", "0"):
        timeline = tmp_path / f"timeline-{workers}.tsv"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", workers,
             "--dist", "loadfile", "-p", "tests.support.timeline", f"--timeline={timeline}",
             str(tmp_path)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        spans = read(timeline)
        assert sorted((Path(s[1]).name, s[4]) for s in spans) == [
            ("test_one.py", 3), ("test_two.py", 1)
        ]  # fmt: skip
        assert all(s[2] <= s[3] for s in spans)
        workers_seen = {s[0] for s in spans}
        assert workers_seen <= ({"gw0", "gw1"} if workers == "2" else {"main"}) and workers_seen
        assert "timeline: " in done.stdout
        assert all(f"{w}: busy " in done.stdout for w in workers_seen)
