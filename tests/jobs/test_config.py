"""Job configuration: the shipped conf/ files, validation errors, overlays and --set."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fermion.spark.jobs.config import (
    JOB_CONFIGS,
    ConfigError,
    IngestConfig,
    MaterializeDeletionsConfig,
    MigrateParquetConfig,
    RebuildIndexConfig,
    VacuumConfig,
    config_keys,
    env_path,
    load_config,
)

CONF = Path(__file__).resolve().parents[2] / "conf"


@pytest.mark.parametrize("job", sorted(JOB_CONFIGS))
@pytest.mark.parametrize("env", [None, "local", "cluster"])
def test_every_shipped_config_loads_with_every_environment(job: str, env: str | None) -> None:
    loaded = load_config(JOB_CONFIGS[job], str(CONF / f"{job}.yaml"), env=env)
    assert isinstance(loaded.job, JOB_CONFIGS[job])
    assert loaded.job.table
    if env == "local":
        assert loaded.spark_conf["spark.master"] == "local[2]"


@pytest.mark.parametrize("job", sorted(JOB_CONFIGS))
def test_every_key_is_in_its_conf_file_and_in_the_readme(job: str) -> None:
    import yaml

    doc = yaml.safe_load((CONF / f"{job}.yaml").read_text())
    keys = config_keys(JOB_CONFIGS[job])
    assert set(doc) == set(keys), f"conf/{job}.yaml should list every key"
    readme = (CONF / "README.md").read_text()
    section = readme.split(f"### {job}\n", 1)[1].split("\n### ", 1)[0]
    for key, (_, _, meaning) in keys.items():
        assert meaning, f"{job}.{key} has no documentation"
        assert f"| `{key}` |" in section and meaning.replace("|", "\\|") in section


def test_every_config_file_states_each_keys_default() -> None:
    text = (CONF / "vacuum.yaml").read_text()
    loaded = load_config(VacuumConfig, str(CONF / "vacuum.yaml")).job
    assert loaded.retention_hours == 168.0 and "Default 168" in text


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def test_unknown_key_names_the_key_and_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "vacuum.yaml", "table: t\nretention_hour: 5\n")
    with pytest.raises(ConfigError, match=rf"{path}: key 'retention_hour': unknown key"):
        load_config(VacuumConfig, path)


def test_wrong_type_names_the_key_and_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "ingest.yaml", "table: t\nsource: s\nmax_rows_per_file: many\n")
    with pytest.raises(ConfigError, match=rf"{path}: key 'max_rows_per_file': expected int"):
        load_config(IngestConfig, path)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("table: t\nsource: s\nmax_rows_per_file: 1.5\n", "max_rows_per_file"),
        ("table: t\nsource: s\npartitions: true\n", "partitions"),
        ("table: t\nsource: s\nsource_format: avro\n", "source_format"),
        ("table: t\nsource: s\nsource_options: [a]\n", "source_options"),
        ("table: 12\nsource: s\n", "table"),
    ],
)
def test_mistyped_values(tmp_path: Path, text: str, key: str) -> None:
    path = _write(tmp_path, "ingest.yaml", text)
    with pytest.raises(ConfigError, match=rf"{path}: key '{key}': expected"):
        load_config(IngestConfig, path)


def test_missing_required_key(tmp_path: Path) -> None:
    path = _write(tmp_path, "ingest.yaml", "table: t\n")
    with pytest.raises(ConfigError, match=rf"{path}: key 'source': required key is missing"):
        load_config(IngestConfig, path)


def test_out_of_range_value_names_where_it_was_set(tmp_path: Path) -> None:
    path = _write(tmp_path, "m.yaml", "table: t\nthreshold: 0.5\n")
    with pytest.raises(ConfigError, match=r"--set: key 'threshold': 1.5 is not within"):
        load_config(MaterializeDeletionsConfig, path, overrides=["threshold=1.5"])
    bad = _write(tmp_path, "m2.yaml", "table: t\nthreshold: 2\n")
    with pytest.raises(ConfigError, match=rf"{bad}: key 'threshold'"):
        load_config(MaterializeDeletionsConfig, bad)


def test_missing_and_broken_files(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match=rf"{missing}: config file not found"):
        load_config(VacuumConfig, missing)
    broken = _write(tmp_path, "broken.yaml", "table: [unclosed\n")
    with pytest.raises(ConfigError, match=rf"{broken}: not valid YAML"):
        load_config(VacuumConfig, broken)
    listing = _write(tmp_path, "list.yaml", "- a\n- b\n")
    with pytest.raises(ConfigError, match=rf"{listing}: expected a mapping"):
        load_config(VacuumConfig, listing)
    path = _write(tmp_path, "vacuum.yaml", "table: t\n")
    with pytest.raises(ConfigError, match=r"env/prod.yaml: config file not found"):
        load_config(VacuumConfig, path, env="prod")


def test_precedence_defaults_env_file_job_section_and_set(tmp_path: Path) -> None:
    path = _write(tmp_path, "ingest.yaml", "table: t\nsource: s\nmax_rows_per_file: 100\n")
    _write(
        tmp_path,
        "env/test.yaml",
        "defaults:\n  max_retries: 7\n  max_rows_per_file: 5\n  retention_hours: 1\n"
        "jobs:\n  ingest:\n    partitions: 3\n    source_format: json\n"
        "  vacuum:\n    retention_hours: 2\n",
    )
    job = load_config(IngestConfig, path).job
    assert (job.max_retries, job.max_rows_per_file, job.partitions) == (20, 100, 0)
    job = load_config(IngestConfig, path, env="test").job
    # env defaults < job file < env jobs.<job>
    assert (job.max_retries, job.max_rows_per_file, job.partitions) == (7, 100, 3)
    assert job.source_format == "json"
    job = load_config(
        IngestConfig, path, env="test", overrides=["partitions=9", "source_format=csv"]
    ).job
    assert (job.partitions, job.source_format) == (9, "csv")
    vacuum = load_config(VacuumConfig, _write(tmp_path, "vacuum.yaml", "table: t\n"), env="test")
    assert vacuum.job.retention_hours == 2.0


def test_env_overlay_errors_name_the_key_and_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "ingest.yaml", "table: t\nsource: s\n")
    overlay = _write(tmp_path, "env/a.yaml", "sparks: {}\n")
    with pytest.raises(ConfigError, match=rf"{overlay}: key 'sparks': unknown section"):
        load_config(IngestConfig, path, env="a")
    overlay = _write(tmp_path, "env/b.yaml", "defaults:\n  no_such_key: 1\n")
    with pytest.raises(ConfigError, match=rf"{overlay}: key 'defaults.no_such_key'"):
        load_config(IngestConfig, path, env="b")
    overlay = _write(tmp_path, "env/c.yaml", "jobs:\n  ingestion: {partitions: 1}\n")
    with pytest.raises(ConfigError, match=rf"{overlay}: key 'jobs.ingestion': unknown job"):
        load_config(IngestConfig, path, env="c")
    overlay = _write(tmp_path, "env/d.yaml", "jobs:\n  ingest: {partitionz: 1}\n")
    with pytest.raises(ConfigError, match=rf"{overlay}: key 'partitionz': unknown key"):
        load_config(IngestConfig, path, env="d")
    overlay = _write(tmp_path, "env/e.yaml", "spark:\n  executor.memory: 1g\n")
    with pytest.raises(ConfigError, match=rf"{overlay}: key 'spark.executor.memory'"):
        load_config(IngestConfig, path, env="e")


def test_spark_settings_merge_in_order(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "vacuum.yaml",
        "table: t\nspark:\n  spark.a: job\n  spark.b: job\n  spark.c: job\n",
    )
    _write(tmp_path, "env/x.yaml", "spark:\n  spark.b: env\n  spark.c: env\n  spark.d: false\n")
    loaded = load_config(VacuumConfig, path, env="x", overrides=["spark.c=cli"])
    assert loaded.spark_conf == {"spark.a": "job", "spark.b": "env", "spark.c": "cli",
                                 "spark.d": "false"}  # fmt: skip
    assert loaded.files == (path, str(tmp_path / "env" / "x.yaml"))


def test_set_values_are_parsed_by_the_declared_type(tmp_path: Path) -> None:
    path = _write(tmp_path, "rebuild_index.yaml", "table: t\n")
    job = load_config(RebuildIndexConfig, path, overrides=["columns=a, b", "max_retries=3"]).job
    assert (job.columns, job.max_retries) == (["a", "b"], 3)
    job = load_config(RebuildIndexConfig, path, overrides=["columns=[x]"]).job
    assert job.columns == ["x"]
    migrate = _write(tmp_path, "migrate_parquet.yaml", "table: t\nsource: s\n")
    job2 = load_config(
        MigrateParquetConfig, migrate, overrides=["reverse=true", "target=out", "table=007"]
    ).job
    assert (job2.reverse, job2.target, job2.table) == (True, "out", "007")
    vac = _write(tmp_path, "vacuum.yaml", "table: t\norphan_retention_hours: 3\n")
    assert load_config(VacuumConfig, vac, overrides=["orphan_retention_hours=null"]).job == (
        VacuumConfig(table="t")
    )
    ingest = _write(tmp_path, "ingest.yaml", "table: t\nsource: s\n")
    job3 = load_config(IngestConfig, ingest, overrides=["input_key=2026", "batch_id_column=b"])
    assert (job3.job.input_key, job3.job.batch_id_column) == ("2026", "b")
    for bad in ["max_retries=x", "nokey=1", "noequals"]:
        with pytest.raises(ConfigError, match=r"--set"):
            load_config(RebuildIndexConfig, path, overrides=[bad])


def test_reverse_migration_needs_a_target(tmp_path: Path) -> None:
    path = _write(tmp_path, "migrate_parquet.yaml", "table: t\nreverse: true\n")
    with pytest.raises(ConfigError, match=rf"{path}: key 'target': required"):
        load_config(MigrateParquetConfig, path)


def test_defaults_are_fresh_objects() -> None:
    a, b = RebuildIndexConfig(table="a"), RebuildIndexConfig(table="b")
    a.columns.append("x")
    assert b.columns == [] and config_keys(RebuildIndexConfig)["columns"][1] == []
    assert all(dataclasses.is_dataclass(c) for c in JOB_CONFIGS.values())


def test_env_path() -> None:
    assert env_path("conf/x.yaml", "local") == "conf/env/local.yaml"
    assert env_path("conf/x.yaml", "/etc/fermion/prod.yml") == "/etc/fermion/prod.yml"


def test_rebuild_index_kinds(tmp_path: Path) -> None:
    good = _write(tmp_path, "r.yaml", "table: t\nindices: [{column: tags, kind: LABEL_LIST}]\n")
    assert load_config(RebuildIndexConfig, good).job.indices == [
        {"column": "tags", "kind": "LABEL_LIST"}
    ]
    bad = _write(tmp_path, "r2.yaml", "table: t\nindices: [{column: tags, kind: LABELS}]\n")
    with pytest.raises(ConfigError, match="BTREE, BITMAP or LABEL_LIST"):
        load_config(RebuildIndexConfig, bad)


def test_table_keys_storage_options_and_manifest_store(tmp_path: Path) -> None:
    from fermion.table.ref import TableRef

    path = _write(
        tmp_path,
        "compact.yaml",
        "table: s3://b/t\nstorage_options: {endpoint_url: 'http://minio:9000', anon: false,"
        " client_kwargs: {region_name: eu}}\nmanifest_store: /tmp/m.db\n",
    )
    job = load_config(JOB_CONFIGS["compact"], path).job
    assert job.storage_options == {
        "endpoint_url": "http://minio:9000",
        "anon": False,  # kept typed: s3fs wants a bool
        "client_kwargs": {"region_name": "eu"},
    }
    ref = job.ref
    assert isinstance(ref, TableRef) and ref.manifest_store == "/tmp/m.db"
    assert "minio" not in repr(ref)  # options are shown by name only
    with pytest.raises(ConfigError, match="manifest_store"):
        load_config(
            JOB_CONFIGS["compact"], _write(tmp_path, "e.yaml", "table: t\nmanifest_store: ' '\n")
        )
    with pytest.raises(ConfigError, match="write_properties"):
        load_config(
            MigrateParquetConfig,
            _write(tmp_path, "m.yaml", "table: t\nsource: s\nwrite_properties: {nope: '1'}\n"),
        )
