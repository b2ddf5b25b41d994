"""Write the golden files of the current format version (run once per released version).

    python -m tests.format.golden.make_golden

Each ``NAME.fermion`` is stored with ``NAME.arrow`` (Arrow IPC) holding the table it must
read back as. Files of released versions are never regenerated or edited.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa

import fermion
from fermion.format.structs import FORMAT_VERSION_MAJOR, FORMAT_VERSION_MINOR
from tests.format.conftest import all_types_table


def golden_tables() -> dict[str, tuple[pa.Table, dict]]:
    rng = np.random.default_rng(7)
    wide = pa.table(
        {
            f"f{i:04d}": (
                pa.nulls(64, pa.float32())
                if i % 10 < 3
                else pa.array(rng.random(64, dtype=np.float32))
            )
            for i in range(300)
        }
    )
    return {
        "all_types": (all_types_table(n=40, seed=11), {}),
        "multi_stripe_pages": (
            all_types_table(n=200, seed=12),
            {"page_size": 128, "max_stripe_rows": 60},
        ),
        "uncompressed_no_crc": (
            all_types_table(n=20, seed=13),
            {"compression": "none", "page_crc": False},
        ),
        "wide_with_all_null_columns": (wide, {}),
        "empty": (all_types_table(n=5, seed=14).slice(0, 0), {}),
    }


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, (table, options) in golden_tables().items():
        fermion.write_table(table, out / f"{name}.fermion", **options)
        with pa.OSFile(str(out / f"{name}.arrow"), "wb") as sink:
            with pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)


if __name__ == "__main__":
    version = f"v{FORMAT_VERSION_MAJOR}_{FORMAT_VERSION_MINOR}"
    target = Path(__file__).parent / version
    if target.exists() and "--force" not in sys.argv:
        raise SystemExit(f"{target} exists: golden files of a released version are frozen")
    main(target)
