"""Every error typed and one line (issue 14, item 3): the Python API and the CLI.

Bad inputs tried, and what each now does:

- ``write_dataset`` of dictionary columns (a pandas Categorical; dictionaries inside a list
  and a struct): stored, and read back equal.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

import fermion


def assert_one_line(exc: BaseException) -> None:
    message = str(exc)
    assert message and "\n" not in message, repr(message)


# --------------------------------------------------------------------------------------
# dictionary columns in tables


def test_write_dataset_keeps_a_pandas_categorical(tmp_path: Path) -> None:
    frame = pd.DataFrame({"c": pd.Categorical(["a", "b", "a", None]), "x": [1, 2, 3, 4]})
    data = pa.Table.from_pandas(frame, preserve_index=False)
    fermion.write_dataset(data, tmp_path / "t")
    back = fermion.dataset(tmp_path / "t").to_table()
    assert back.equals(data.replace_schema_metadata(None))
    assert pa.types.is_dictionary(back.schema.field("c").type)


def test_write_dataset_keeps_nested_dictionaries(tmp_path: Path) -> None:
    words = pa.array(["a", "b", None, "a"]).dictionary_encode()
    data = pa.table(
        {
            "c": words,
            "l": pa.array(
                [["x"], ["y", "x"], None, []], pa.list_(pa.dictionary(pa.int8(), pa.string()))
            ),
            "s": pa.StructArray.from_arrays([words], ["d"]),
            "i": [1, 2, 3, 4],
        }
    )
    fermion.write_dataset(data, tmp_path / "t")
    ds = fermion.dataset(tmp_path / "t")
    assert ds.to_table().equals(data)
    assert ds.to_table(filter=pc.field("c") == "a").column("i").to_pylist() == [1, 4]
