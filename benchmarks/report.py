"""Ratios, machine facts, and the Markdown + JSON outputs of a benchmark run."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from benchmarks.config import REPO_ROOT

__all__ = [
    "MARKDOWN_NAME",
    "JSON_NAME",
    "RESULT_KEYS",
    "TABLE_COLUMNS",
    "add_ratios",
    "machine_facts",
    "render_markdown",
    "write_outputs",
]

MARKDOWN_NAME = "BENCHMARKS.md"
JSON_NAME = "benchmarks.json"

#: Keys of a result row (extra modules append rows with the same keys; missing ones = blank).
RESULT_KEYS = (
    "scenario",  # stable scenario id
    "variant",  # size / shape of this case
    "system",  # fermion | parquet | lance | lance-dataset | ...
    "status",  # ok | unavailable | error | wrong-result
    "value",  # median seconds (unit "s") or bytes (unit "bytes")
    "unit",
    "runs",  # every timed run, seconds
    "peak_rss_mb",  # ru_maxrss of the fresh worker process
    "size_bytes",  # size of the file the case reads, if any
    "io",  # dict: open/read requests and bytes, metadata sizes
    "note",
)

TABLE_COLUMNS = (
    "Scenario",
    "Variant",
    "System",
    "Median",
    "Min–max",
    "vs Parquet",
    "vs Lance",
    "Peak RSS (MB)",
    "File size",
    "IO / metadata",
    "Notes",
)


def _ok(row: dict[str, Any]) -> bool:
    return row.get("status") == "ok" and isinstance(row.get("value"), int | float)


def add_ratios(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copy of ``results`` with ``vs_parquet`` and ``vs_lance`` set per (scenario, variant).

    ``vs_lance`` divides by the best (smallest) value among the Lance APIs measured in the
    same case (file API ``lance`` and dataset API ``lance-dataset``).
    """
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in results:
        groups.setdefault((row.get("scenario", ""), row.get("variant", "")), []).append(row)
    out = []
    for row in results:
        group = groups[(row.get("scenario", ""), row.get("variant", ""))]
        parquet = [r["value"] for r in group if r.get("system") == "parquet" and _ok(r)]
        lance = [r["value"] for r in group if str(r.get("system", "")).startswith("lance")]
        lance_ok = [
            r["value"] for r in group if str(r.get("system", "")).startswith("lance") and _ok(r)
        ]
        new = dict(row)
        value = row.get("value") if _ok(row) else None
        new["vs_parquet"] = value / parquet[0] if value is not None and parquet else None
        new["vs_lance"] = value / min(lance_ok) if value is not None and lance_ok else None
        if not lance:
            new["vs_lance"] = None
        out.append(new)
    return out


def _git(*args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return done.stdout.strip()


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def machine_facts() -> dict[str, Any]:
    """Facts about this machine and the library versions measured."""
    return {
        "date_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": _cpu_model(),
        "logical_cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "ram_gib": _ram_gib(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "pyarrow": _version("pyarrow"),
        "pylance": _version("pylance"),
        "numpy": _version("numpy"),
        "fermion": _version("fermion"),
        "git_commit": _git("rev-parse", "--short", "HEAD"),
        "git_branch": _git("rev-parse", "--abbrev-ref", "HEAD"),
        "load_average_1_5_15min_at_end": [round(x, 2) for x in os.getloadavg()],
    }


def _fmt_seconds(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


def _fmt_bytes(n: float | None) -> str:
    if n is None:
        return ""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def _fmt_value(row: dict[str, Any]) -> str:
    if not _ok(row):
        return row.get("status", "")
    if row.get("unit") == "s":
        return _fmt_seconds(row["value"])
    if row.get("unit") == "bytes":
        return _fmt_bytes(row["value"])
    return f"{row['value']:.4g} {row.get('unit', '')}".strip()


def _fmt_spread(row: dict[str, Any]) -> str:
    runs = row.get("runs")
    if not _ok(row) or row.get("unit") != "s" or not runs:
        return ""
    return f"{_fmt_seconds(min(runs))} – {_fmt_seconds(max(runs))}"


def _fmt_ratio(r: float | None) -> str:
    if r is None:
        return ""
    return f"{r:.3f}×" if r < 0.1 else f"{r:.2f}×"


def _fmt_io(io: dict[str, Any] | None) -> str:
    if not io:
        return ""
    parts = []
    if "open_requests" in io:
        parts.append(f"open+schema: {io['open_requests']} req, {_fmt_bytes(io['open_bytes'])}")
    if "read_requests" in io:
        parts.append(f"open+read: {io['read_requests']} req, {_fmt_bytes(io['read_bytes'])}")
    if "take_requests" in io:
        parts.append(f"open+take: {io['take_requests']} req, {_fmt_bytes(io['take_bytes'])}")
    if "footer_bytes" in io:
        parts.append(f"footer {_fmt_bytes(io['footer_bytes'])}")
    if "metadata_bytes_in_file" in io:
        parts.append(f"metadata in file {_fmt_bytes(io['metadata_bytes_in_file'])}")
    return "; ".join(parts)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table_row(row: dict[str, Any]) -> str:
    rss = row.get("peak_rss_mb")
    cells = [
        row.get("scenario", ""),
        row.get("variant", ""),
        row.get("system", ""),
        _fmt_value(row),
        _fmt_spread(row),
        _fmt_ratio(row.get("vs_parquet")),
        _fmt_ratio(row.get("vs_lance")),
        "" if rss is None else f"{rss:.0f}",
        _fmt_bytes(row.get("size_bytes")),
        _fmt_io(row.get("io")),
        row.get("note", ""),
    ]
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _other_row(row: dict[str, Any]) -> str:
    """One extra-module row: its name first, then every other key = value."""
    name_keys = ("benchmark", "scenario", "system", "metric")
    name = " / ".join(str(row[k]) for k in name_keys if k in row)
    figures = ", ".join(
        f"{k} = {_cell(v)}" for k, v in row.items() if k not in name_keys and v is not None
    )
    return f"| {_cell(name)} | {figures} |"


def render_markdown(
    results: list[dict[str, Any]], facts: dict[str, Any], run: dict[str, Any]
) -> str:
    """The whole ``BENCHMARKS.md`` text."""
    standard = [r for r in results if "status" in r and "variant" in r]
    others = [r for r in results if not ("status" in r and "variant" in r)]
    rows = add_ratios(standard)
    lines = [
        "# Fermion benchmarks",
        "",
        "Generated by `make bench` (`python -m benchmarks.run`); regenerated wholesale on every",
        "run, do not edit by hand. Raw results: `" + JSON_NAME + "` next to this file.",
        "",
        "## Machine and versions",
        "",
    ]
    lines += [f"- {key}: {value}" for key, value in facts.items()]
    lines += [
        "",
        "## Run",
        "",
        f"- mode: {run['mode']}; timed repetitions per case: {run['repeat']} "
        f"(after {run['warmup']} untimed warm-up run); wall time of the whole run: "
        f"{run['wall_seconds']:.0f} s",
        f"- command: `{run['command']}`",
        f"- load average (1, 5, 15 min) at start: {run.get('load_average_1_5_15min_at_start')}",
        "",
        "## Method",
        "",
        "- All systems read and write the same generated data in the same run. Times are the",
        "  median of the timed repetitions (`Min–max`: fastest and slowest of them); every",
        "  open is a fresh reader object (open cost is included); the OS page cache is warm",
        "  (files were just written or read). Systems run one after the other, each in its",
        "  own process, so a burst of load from other processes can hit one system only.",
        "- Ratios: `vs Parquet` = this value / pyarrow.parquet's value in the same case; `vs",
        "  Lance` = this value / the best Lance value in the same case (file API `lance` or",
        "  dataset API `lance-dataset`). Below 1.00× means smaller or faster.",
        "- Peak RSS: `resource.getrusage(RUSAGE_SELF).ru_maxrss` of a fresh worker process per",
        "  (case, system), read right after the timed runs. It includes the interpreter and",
        "  imported libraries (about 100-200 MB) and, for writes, the source table in memory.",
        "  The JSON also has the pyarrow default memory pool's peak (Lance's Rust allocations",
        "  are not in that pool).",
        "- IO: Fermion's requests and bytes come from `FileReader(...).source.stats`; Parquet's",
        "  from a counting Python file object handed to `pq.ParquetFile` (one untimed pass);",
        "  for Lance the file API only exposes the metadata sizes stored in the file.",
        "- Correctness: every written copy is read back once and compared with the source",
        "  table (types and values; wide tables: the 10 projected columns; lineitem: also",
        "  the 1,000 taken rows), and every timed result is checked for shape. A failure is",
        "  reported as `wrong-result` instead of a value (the time stays in the JSON).",
        "- The machine is shared: the load average is recorded with the machine facts, and",
        "  other processes running at the same time make the absolute times noisy.",
    ]
    for key, text in run.get("method_notes", []):
        lines.append(f"- {key}: {text}")
    lines += ["", "## Results", ""]
    lines.append("| " + " | ".join(TABLE_COLUMNS) + " |")
    lines.append("|" + "---|" * len(TABLE_COLUMNS))
    lines += [_table_row(row) for row in rows]
    if others:
        lines += [
            "",
            "## Other measurements",
            "",
            "Rows from the extra modules (`benchmarks/*_bench.py`), as they report them.",
            "",
            "| Measurement | Figures |",
            "|---|---|",
        ]
        lines += [_other_row(row) for row in others]
    problems = [r for r in rows if r.get("status") not in ("ok", None)]
    if problems:
        lines += ["", "## Not measured", ""]
        seen = set()
        for row in problems:
            key = (row.get("system"), row.get("status"), row.get("note"))
            if key not in seen:
                seen.add(key)
                lines.append(f"- {row.get('system')}: {row.get('status')} — {row.get('note')}")
    return "\n".join(lines) + "\n"


def write_outputs(
    results: list[dict[str, Any]], facts: dict[str, Any], run: dict[str, Any], out_dir: Path
) -> tuple[Path, Path]:
    """Write ``BENCHMARKS.md`` and ``benchmarks.json`` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    md = out_dir / MARKDOWN_NAME
    js = out_dir / JSON_NAME
    md.write_text(render_markdown(results, facts, run), encoding="utf-8")
    payload = {"machine": facts, "run": run, "results": add_ratios(results)}
    js.write_text(json.dumps(payload, indent=1, default=str) + "\n", encoding="utf-8")
    return md, js
