"""Job configuration: typed dataclasses loaded from YAML, environment overlays, ``--set``.

A job's settings come from four places; later ones win (``conf/README.md``):

1. the defaults declared here (one dataclass per job, every key documented in its
   field's ``metadata["doc"]``);
2. ``defaults:`` of the environment file ``conf/env/<env>.yaml`` (keys of any job; a job
   takes the ones it declares);
3. the job file ``conf/<job>.yaml`` (top-level keys);
4. ``jobs: {<job>: {...}}`` of the environment file;
5. ``--set key=value`` on the command line (the value is parsed by the key's type).

Spark settings live under ``spark:`` in the job file and the environment file (the
environment's win) and in ``--set spark.x=y`` (wins over both).

Every value is checked against its declared type; an unknown key, a wrong type, a missing
required key or a missing file is a :class:`ConfigError` that names the key and the file.

Example:
    >>> import os, pathlib, tempfile
    >>> d = tempfile.mkdtemp()
    >>> path = os.path.join(d, "vacuum.yaml")
    >>> _ = pathlib.Path(path).write_text("table: /data/t\\nretention_hours: 24\\n")
    >>> loaded = load_config(VacuumConfig, path, overrides=["retention_hours=48"])
    >>> loaded.job.table, loaded.job.retention_hours
    ('/data/t', 48.0)
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import yaml

from fermion.errors import InvalidArgumentError
from fermion.table.commit import MAX_RETRIES_DEFAULT
from fermion.table.fragments import MAX_ROWS_PER_FILE_DEFAULT
from fermion.table.ref import TableRef
from fermion.table.write_properties import WriteProperties

__all__ = [
    "BackfillColumnsConfig",
    "CompactConfig",
    "ConfigError",
    "DeleteConfig",
    "IngestConfig",
    "JobConfig",
    "LoadedConfig",
    "MaterializeDeletionsConfig",
    "MergeConfig",
    "MigrateParquetConfig",
    "RebuildIndexConfig",
    "VacuumConfig",
    "ValidateConfig",
    "config_keys",
    "env_path",
    "load_config",
]

SPARK_SECTION = "spark"
QUALITY_DIR_DEFAULT = "/tmp/fermion/quality"
ENV_SECTIONS = ("spark", "defaults", "jobs")


class ConfigError(InvalidArgumentError):
    """A job's configuration or arguments are invalid (jobs exit with code 2)."""


def _key(doc: str, default: Any = dataclasses.MISSING) -> Any:
    """A config field with its documentation (``conf/README.md`` lists the same text)."""
    if isinstance(default, list | dict):
        frozen = default
        return field(default_factory=lambda: frozen.copy(), metadata={"doc": doc})
    return field(default=default, metadata={"doc": doc})


# -- the jobs' configurations ------------------------------------------------------------------


@dataclass(kw_only=True)
class JobConfig:
    """Keys every job has."""

    table: str = _key("Table URI: local path or fsspec URL (required).")
    max_retries: int = _key(
        "Commit attempts before the job fails with CommitConflictError.", MAX_RETRIES_DEFAULT
    )
    storage_options: dict[str, Any] = _key(
        "Options of the table's fsspec filesystem, e.g. {endpoint_url: 'http://minio:9000', "
        "key: ..., secret: ...} for s3:// (never logged; they reach the executors inside "
        "the tasks). {}: the filesystem's defaults (AWS_* variables, ...).",
        {},
    )
    manifest_store: str | None = _key(
        "The table's external manifest store: postgresql://user@host:5432/db or an SQLite "
        "file path (filesystems without an atomic create). null: FERMION_MANIFEST_STORE "
        "of the driver, if set.",
        None,
    )

    def check(self) -> None:
        """Range checks beyond the types (raise :class:`ConfigError` naming the key)."""
        _positive(self, "max_retries")
        if self.manifest_store is not None and not self.manifest_store.strip():
            raise ConfigError("key 'manifest_store': must not be empty (null: none)")

    @property
    def ref(self) -> TableRef:
        """The table's handle (:class:`~fermion.table.ref.TableRef`), made on the driver."""
        return TableRef.of(
            self.table, storage_options=self.storage_options, manifest_store=self.manifest_store
        )


@dataclass(kw_only=True)
class IngestConfig(JobConfig):
    """``ingest``: append a source to the table, batch by batch, once per input."""

    source: str = _key("Input: a path (file, directory or glob) or a Spark table name.")
    source_format: Literal["parquet", "json", "csv", "table"] = _key(
        "parquet | json | csv (paths) or table (a Spark catalog table).", "parquet"
    )
    source_options: dict[str, str] = _key("Spark reader options, e.g. {header: true} for CSV.", {})
    batch_id_column: str | None = _key(
        "Column whose equal values form one append_batch (never split across tasks, "
        "files or pages); null: plain appends.",
        None,
    )
    max_rows_per_file: int = _key("Rows per data file.", MAX_ROWS_PER_FILE_DEFAULT)
    partitions: int = _key("Spark tasks writing the data (0: keep the source's).", 0)
    file_reader: Literal["auto", "spark"] = _key(
        "auto: Parquet files that Spark would read unchanged are read by the tasks with "
        "pyarrow (no row crosses the JVM); spark: always through Spark's reader.",
        "auto",
    )
    input_key: str | None = _key(
        "What identifies this input for idempotency (e.g. a partition key 'dt=2026-11-23'); "
        "null: the source files' paths, sizes and modification times (required for "
        "source_format: table).",
        None,
    )
    suite: str | None = _key(
        "Quality suite (conf/quality/<name>.yaml) the input must pass before anything is "
        "written; a failed check commits nothing (null: no check).",
        None,
    )
    quality_dir: str = _key(
        "Where quality results (JSON) and great_expectations data docs (HTML) go.",
        QUALITY_DIR_DEFAULT,
    )
    write_properties: dict[str, str] = _key(
        "Table write properties recorded when the ingest creates the table, e.g. "
        "{bloom_filter_columns: '[\"id\"]', compression: zstd} (docs/TABLE_FORMAT.md, "
        "'Write properties'); an existing table must record the same values.",
        {},
    )
    replace_where: str | None = _key(
        "Replace mode (a corrected day): the input replaces the table's rows matching this "
        "Spark SQL condition, in one version; every input row must match it, or nothing is "
        "committed. A replace is not recorded as an input (running it again replaces the "
        "same rows by the same data). null: append.",
        None,
    )

    def check(self) -> None:
        super().check()
        _positive(self, "max_rows_per_file")
        _non_negative(self, "partitions")
        if self.source_format == "table" and self.input_key is None:
            raise ConfigError("key 'input_key': required when source_format is table")
        if self.replace_where is not None and not self.replace_where.strip():
            raise ConfigError("key 'replace_where': must not be empty (null: append)")
        _check_write_properties(self.write_properties)


@dataclass(kw_only=True)
class MergeConfig(JobConfig):
    """``merge``: upsert a source into the table on key columns, once per input."""

    source: str = _key("Input: a path (file, directory or glob) or a Spark table name.")
    source_format: Literal["parquet", "json", "csv", "table"] = _key(
        "parquet | json | csv (paths) or table (a Spark catalog table).", "parquet"
    )
    source_options: dict[str, str] = _key("Spark reader options, e.g. {header: true} for CSV.", {})
    key_columns: list[str] = _key(
        "Key columns (required): a table row whose keys equal a source row's is replaced by "
        "it, a source row matching no table row is inserted."
    )
    max_rows_per_file: int = _key("Rows per data file of the new rows.", MAX_ROWS_PER_FILE_DEFAULT)
    partitions: int = _key(
        "Spark tasks writing the new rows and reading the table's keys (0: the source's "
        "partitions, one task per fragment).",
        0,
    )
    input_key: str | None = _key(
        "What identifies this input for idempotency (e.g. 'labels dt=2026-11-23'); null: "
        "the source files' paths, sizes and modification times (required for "
        "source_format: table).",
        None,
    )
    when_not_matched_by_source: Literal["keep", "delete"] = _key(
        "keep: table rows whose keys the source lacks stay; delete: they are deleted in the "
        "same version (every fragment is read). An empty source commits nothing either way.",
        "keep",
    )
    delete_predicate: str | None = _key(
        "With when_not_matched_by_source: delete, a Spark SQL condition: only the unmatched "
        "rows matching it are deleted (null: all of them).",
        None,
    )

    def check(self) -> None:
        super().check()
        _positive(self, "max_rows_per_file")
        _non_negative(self, "partitions")
        if self.delete_predicate is not None:
            if self.when_not_matched_by_source != "delete":
                raise ConfigError(
                    "key 'delete_predicate': only with when_not_matched_by_source: delete"
                )
            if not self.delete_predicate.strip():
                raise ConfigError("key 'delete_predicate': empty condition (null: all rows)")
        keys = self.key_columns
        if not keys or not all(k.strip() for k in keys) or len(set(keys)) != len(keys):
            raise ConfigError(f"key 'key_columns': needs distinct column names, got {keys}")
        if self.source_format == "table" and self.input_key is None:
            raise ConfigError("key 'input_key': required when source_format is table")


@dataclass(kw_only=True)
class BackfillColumnsConfig(JobConfig):
    """``backfill_columns``: add columns computed from the existing ones, one column-only
    data file per fragment (no existing file is rewritten)."""

    columns: dict[str, str] = _key(
        "New columns (required), {name: SQL expression over existing columns} in Spark "
        "syntax (columns, literals, arithmetic, comparisons: the subset "
        "fermion.table.predicate reads), e.g. {revenue: 'l_extendedprice * (1 - l_discount)'}."
    )
    fragments_per_task: int = _key("Fragments one Spark task computes.", 1)
    partitions: int = _key("Spark tasks (0: one per task of fragments_per_task fragments).", 0)

    def check(self) -> None:
        super().check()
        _positive(self, "fragments_per_task")
        _non_negative(self, "partitions")
        if not self.columns:
            raise ConfigError("key 'columns': needs at least one {name: expression}")
        for name, text in self.columns.items():
            if not name.strip() or not text.strip():
                raise ConfigError(f"key 'columns': empty name or expression in {name!r}")


@dataclass(kw_only=True)
class CompactConfig(JobConfig):
    """``compact``: bin-pack small fragments into bigger ones."""

    target_rows_per_fragment: int = _key(
        "Rows per rewritten fragment; fragments below it are merged.", MAX_ROWS_PER_FILE_DEFAULT
    )
    partitions: int = _key(
        "Spark tasks rewriting groups (0: one per group); a batch-mode table is split into "
        "up to this many batch-id ranges (0: Spark's default parallelism).",
        0,
    )

    def check(self) -> None:
        super().check()
        _positive(self, "target_rows_per_fragment")
        _non_negative(self, "partitions")


@dataclass(kw_only=True)
class MaterializeDeletionsConfig(JobConfig):
    """``materialize_deletions``: rewrite fragments with many deleted rows."""

    threshold: float = _key(
        "Rewrite a fragment when its deleted fraction is above this (0..1).", 0.1
    )
    partitions: int = _key("Spark tasks rewriting fragments (0: one per fragment).", 0)

    def check(self) -> None:
        super().check()
        if not 0.0 <= self.threshold <= 1.0:
            raise ConfigError(f"key 'threshold': {self.threshold} is not within [0, 1]")
        _non_negative(self, "partitions")


@dataclass(kw_only=True)
class MigrateParquetConfig(JobConfig):
    """``migrate_parquet``: a Parquet dataset -> a Fermion table (or back with reverse)."""

    source: str = _key(
        "Parquet dataset path (Hive-style key=value directories become columns); with "
        "reverse: true, unused (the table is the source).",
        "",
    )
    reverse: bool = _key("Export the table to Parquet at `target` instead.", False)
    target: str = _key("Parquet output directory (reverse: true only).", "")
    mode: Literal["create", "overwrite"] = _key(
        "create: the table must not exist yet (or hold this very migration: then nothing "
        "is done); overwrite: replace its rows.",
        "create",
    )
    max_rows_per_file: int = _key("Rows per data file.", MAX_ROWS_PER_FILE_DEFAULT)
    partitions: int = _key("Spark tasks writing the data (0: keep the source's).", 0)
    file_reader: Literal["auto", "spark"] = _key(
        "auto: Parquet files that Spark would read unchanged are read by the tasks with "
        "pyarrow (no row crosses the JVM); spark: always through Spark's reader.",
        "auto",
    )
    verify: bool = _key(
        "Compare row counts and per-column checksums of source and written data before "
        "committing (a mismatch aborts the write).",
        True,
    )
    write_properties: dict[str, str] = _key(
        "Table write properties recorded by the migration (it creates or overwrites the "
        "table), e.g. {bloom_filter_columns: '[\"id\"]', compression: zstd} "
        "(docs/TABLE_FORMAT.md, 'Write properties').",
        {},
    )

    def check(self) -> None:
        super().check()
        _check_write_properties(self.write_properties)
        if self.reverse and not self.target:
            raise ConfigError("key 'target': required when reverse is true")
        if not self.reverse and not self.source:
            raise ConfigError("key 'source': required unless reverse is true")
        _positive(self, "max_rows_per_file")
        _non_negative(self, "partitions")


@dataclass(kw_only=True)
class RebuildIndexConfig(JobConfig):
    """``rebuild_index``: recompute fragment statistics where missing or stale, and build
    or refresh the declared scalar indices."""

    columns: list[str] = _key("Columns whose statistics to rebuild ([]: all).", [])
    partitions: int = _key("Spark tasks (0: one per fragment).", 0)
    indices: list[dict[str, str]] = _key(
        "Scalar indices to build or refresh, each {column: c, kind: BTREE|BITMAP|LABEL_LIST, "
        "name: n} "
        "(name optional, default c_idx); only fragments an index does not cover yet are "
        "indexed.",
        [],
    )
    rebuild: bool = _key("Rebuild the declared indices over every fragment.", False)

    def check(self) -> None:
        super().check()
        _non_negative(self, "partitions")
        for n, spec in enumerate(self.indices):
            unknown = sorted(set(spec) - {"column", "kind", "name"})
            if unknown or not spec.get("column"):
                raise ConfigError(
                    f"key 'indices' entry {n}: needs 'column' (and optionally 'kind', "
                    f"'name'); unknown keys {unknown}"
                )
            if spec.get("kind", "BTREE").upper() not in ("BTREE", "BITMAP", "LABEL_LIST"):
                raise ConfigError(
                    f"key 'indices' entry {n}: kind must be BTREE, BITMAP or LABEL_LIST"
                )


@dataclass(kw_only=True)
class DeleteConfig(JobConfig):
    """``delete``: mark the rows matching a predicate deleted."""

    predicate: str = _key("Rows to delete, a Spark SQL boolean expression (required).")

    def check(self) -> None:
        super().check()
        if not self.predicate.strip():
            raise ConfigError("key 'predicate': must not be empty")


@dataclass(kw_only=True)
class VacuumConfig(JobConfig):
    """``vacuum``: remove old versions and unreferenced (orphan) files."""

    retention_hours: float = _key(
        "Versions older than this are removed (the latest and tagged ones are kept).", 168.0
    )
    orphan_retention_hours: float | None = _key(
        "Unreferenced files older than this are removed (null: retention_hours); keep it "
        "above the longest write job so in-flight files survive.",
        None,
    )
    keep_tags: bool = _key("Keep tagged versions.", True)

    def check(self) -> None:
        super().check()
        _non_negative(self, "retention_hours")
        if self.orphan_retention_hours is not None:
            _non_negative(self, "orphan_retention_hours")


@dataclass(kw_only=True)
class ValidateConfig(JobConfig):
    """``validate``: run a data-quality suite against the table."""

    suite: str = _key("Path of the suite, conf/quality/<name>.yaml (required).")
    version: int | None = _key("Table version to check (null: the latest).", None)
    fail_on_error: bool = _key("Exit non-zero when an expectation fails.", True)
    batch_id_column: str | None = _key(
        "Batch-id column of the batch integrity check (null: the suite's).", None
    )
    quality_dir: str = _key(
        "Where quality results (JSON) and great_expectations data docs (HTML) go.",
        QUALITY_DIR_DEFAULT,
    )


def _check_write_properties(properties: Mapping[str, str]) -> None:
    """Refuse unknown write properties and bad values (key ``write_properties``)."""
    try:
        WriteProperties.parse(properties)
    except InvalidArgumentError as exc:
        raise ConfigError(f"key 'write_properties': {exc}") from None


def _positive(config: JobConfig, name: str) -> None:
    if getattr(config, name) <= 0:
        raise ConfigError(f"key {name!r}: {getattr(config, name)} must be > 0")


def _non_negative(config: JobConfig, name: str) -> None:
    if getattr(config, name) < 0:
        raise ConfigError(f"key {name!r}: {getattr(config, name)} must be >= 0")


# -- loading ----------------------------------------------------------------------------------

C = TypeVar("C", bound=JobConfig)


@dataclass(frozen=True)
class LoadedConfig(typing.Generic[C]):
    """A validated job configuration, its Spark settings and the files it came from."""

    job: C
    spark_conf: dict[str, str]
    files: tuple[str, ...]


def config_keys(cls: type[JobConfig]) -> dict[str, tuple[Any, Any, str]]:
    """Every key of a config class: ``{name: (type, default or MISSING, doc)}``.

    Example:
        >>> config_keys(VacuumConfig)["retention_hours"][1:]
        (168.0, 'Versions older than this are removed (the latest and tagged ones are kept).')
    """
    hints = typing.get_type_hints(cls)
    keys = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        keys[f.name] = (hints[f.name], default, f.metadata.get("doc", ""))
    return keys


def env_path(config_path: str, env: str) -> str:
    """Where ``--env`` finds its overlay: a ``.yaml`` path as given, else a name looked up
    in ``env/`` beside the job's config file.

    Example:
        >>> env_path("conf/ingest.yaml", "local")
        'conf/env/local.yaml'
    """
    if env.endswith((".yaml", ".yml")):
        return env
    return os.path.join(os.path.dirname(config_path), "env", f"{env}.yaml")


def load_config(
    cls: type[C],
    path: str,
    *,
    env: str | None = None,
    overrides: Sequence[str] = (),
    job_name: str | None = None,
) -> LoadedConfig[C]:
    """Load and validate a job configuration (see the module docstring for precedence).

    Args:
        cls: The job's config class.
        path: The job's YAML file.
        env: Environment name (``conf/env/<env>.yaml`` beside ``path``) or overlay path.
        overrides: ``key=value`` strings; ``spark.*`` keys go to the Spark settings.
        job_name: The job's name in the overlay's ``jobs:`` section (default: the file's
            stem).

    Raises:
        ConfigError: Missing or unparsable file, unknown key, wrong type or value, missing
            required key: the message names the file and the key.
    """
    keys = config_keys(cls)
    name = job_name or os.path.splitext(os.path.basename(path))[0]
    values: dict[str, tuple[Any, str]] = {}  # key -> (value, where it came from)
    spark_conf: dict[str, str] = {}
    files = [path]

    job_doc = _read_yaml(path)
    env_doc: dict[str, Any] = {}
    overlay = None
    if env is not None:
        overlay = env_path(path, env)
        files.append(overlay)
        env_doc = _read_yaml(overlay)
        for section in env_doc:
            if section not in ENV_SECTIONS:
                raise ConfigError(
                    f"{overlay}: key {section!r}: unknown section (expected one of "
                    f"{', '.join(ENV_SECTIONS)})"
                )
        for key, value in _mapping(env_doc, "defaults", overlay).items():
            if key in keys:
                values[key] = (value, overlay)
            elif not _any_job_has(key):
                raise ConfigError(f"{overlay}: key 'defaults.{key}': no job has this key")
    spark_conf.update(_spark_section(job_doc.get(SPARK_SECTION), path))
    for key, value in job_doc.items():
        if key == SPARK_SECTION:
            continue
        values[key] = (value, path)
    if overlay is not None:
        spark_conf.update(_spark_section(env_doc.get(SPARK_SECTION), overlay))
        jobs = _mapping(env_doc, "jobs", overlay)
        for job in jobs:
            if job not in JOB_CONFIGS:
                raise ConfigError(f"{overlay}: key 'jobs.{job}': unknown job")
            if job == name:
                for key, value in _mapping(jobs, job, overlay, prefix="jobs.").items():
                    values[key] = (value, overlay)
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set {item!r}: expected key=value")
        if key.startswith("spark."):
            spark_conf[key] = raw
        elif key in keys:
            values[key] = (_parse_cli(keys[key][0], raw), "--set")
        else:
            raise ConfigError(f"--set: key {key!r}: unknown key for {name} ({_known(keys)})")
    return LoadedConfig(_build(cls, keys, values, files[0]), spark_conf, tuple(files))


def _build(
    cls: type[C], keys: Mapping[str, tuple[Any, Any, str]], values: dict[str, Any], path: str
) -> C:
    kwargs = {}
    for key, (value, where) in values.items():
        if key not in keys:
            raise ConfigError(f"{where}: key {key!r}: unknown key ({_known(keys)})")
        kwargs[key] = _coerce(keys[key][0], value, key, where)
    for key, (_, default, _) in keys.items():
        if default is dataclasses.MISSING and key not in kwargs:
            raise ConfigError(f"{path}: key {key!r}: required key is missing")
    config = cls(**kwargs)
    try:
        config.check()
    except ConfigError as error:
        raise ConfigError(f"{_where_of(str(error), values, path)}: {error}") from None
    return config


def _where_of(message: str, values: dict[str, tuple[Any, str]], path: str) -> str:
    for key, (_, where) in values.items():
        if message.startswith(f"key {key!r}"):
            return where
    return path


def _known(keys: Mapping[str, Any]) -> str:
    return "known keys: " + ", ".join(sorted(keys))


def _any_job_has(key: str) -> bool:
    return any(key in config_keys(cls) for cls in JOB_CONFIGS.values())


def _read_yaml(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except yaml.YAMLError as error:
        line = str(error).replace("\n", " ")
        raise ConfigError(f"{path}: not valid YAML: {line}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: expected a mapping of keys, got {type(doc).__name__}")
    for key in doc:
        if not isinstance(key, str):
            raise ConfigError(f"{path}: key {key!r}: keys must be strings")
    return doc


def _mapping(doc: Mapping[str, Any], key: str, path: str, prefix: str = "") -> dict[str, Any]:
    value = doc.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: key {prefix}{key!r}: expected a mapping")
    return value


def _spark_section(section: Any, path: str) -> dict[str, str]:
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: key 'spark': expected a mapping of Spark settings")
    conf = {}
    for key, value in section.items():
        if not isinstance(key, str) or not key.startswith("spark."):
            raise ConfigError(f"{path}: key 'spark.{key}': Spark settings start with 'spark.'")
        if isinstance(value, dict | list) or value is None:
            raise ConfigError(f"{path}: key {key!r}: expected a scalar value")
        conf[key] = _as_text(value)
    return conf


def _as_text(value: Any) -> str:
    """A YAML scalar as Spark wants it (booleans lower-case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


# -- types ------------------------------------------------------------------------------------


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return " | ".join(repr(a) for a in typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if tp is type(None):
        return "null"
    if origin is not None:
        return str(tp).replace("typing.", "")
    return str(tp.__name__)


def _coerce(tp: Any, value: Any, key: str, where: str) -> Any:
    """``value`` checked against ``tp`` (ints are accepted where floats are declared)."""
    ok, converted = _convert(tp, value)
    if not ok:
        raise ConfigError(
            f"{where}: key {key!r}: expected {_type_name(tp)}, got {value!r} "
            f"({type(value).__name__})"
        )
    return converted


def _convert(tp: Any, value: Any) -> tuple[bool, Any]:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(tp):
            ok, converted = _convert(arg, value)
            if ok:
                return True, converted
        return False, None
    if origin is Literal:
        return value in typing.get_args(tp), value
    if origin is list:
        (item,) = typing.get_args(tp)
        if not isinstance(value, list):
            return False, None
        pairs = [_convert(item, v) for v in value]
        return all(ok for ok, _ in pairs), [v for _, v in pairs]
    if origin is dict:
        if not isinstance(value, dict):
            return False, None
        if typing.get_args(tp)[1] is Any:  # kept as given (storage options: nested, typed)
            return all(isinstance(k, str) for k in value), dict(value)
        if not all(isinstance(k, str) and _scalar(v) for k, v in value.items()):
            return False, None
        return True, {k: _as_text(v) for k, v in value.items()}
    if tp is type(None):
        return value is None, None
    if tp is bool:
        return isinstance(value, bool), value
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    if tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return ok, float(value) if ok else None
    if tp is str:
        return isinstance(value, str), value
    raise TypeError(f"config type {tp!r} is not supported")  # a bug in a config class


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _parse_cli(tp: Any, raw: str) -> Any:
    """A ``--set`` value read by the key's type: strings as given, lists comma-separated
    (or a YAML list), everything else as a YAML scalar (``true``, ``12``, ``null``)."""
    if tp is str:
        return raw
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType) and str in args and raw not in ("null", "~"):
        return raw
    if origin is list and not raw.lstrip().startswith("["):
        return [part.strip() for part in raw.split(",") if part.strip()]
    try:
        return yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError:
        return raw


JOB_CONFIGS: dict[str, type[JobConfig]] = {
    "ingest": IngestConfig,
    "merge": MergeConfig,
    "backfill_columns": BackfillColumnsConfig,
    "compact": CompactConfig,
    "materialize_deletions": MaterializeDeletionsConfig,
    "migrate_parquet": MigrateParquetConfig,
    "rebuild_index": RebuildIndexConfig,
    "delete": DeleteConfig,
    "vacuum": VacuumConfig,
    "validate": ValidateConfig,
}
