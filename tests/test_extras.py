"""Each optional feature without its extra: one line naming the ``pip install`` that brings
it (fermion.extras), checked in a child process where the library cannot be imported."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fermion.errors import FermionError, InvalidArgumentError, MissingExtraError
from fermion.extras import EXTRAS, install_hint, require

# (extra, the module made unimportable, code that needs it)
CASES = [
    ("spark", "pyspark", "import fermion.spark"),
    ("spark", "pyspark", "import fermion.spark.jobs.config"),
    (
        "quality",
        "great_expectations",
        "import fermion.quality as q; "
        "q.validate_dataframe(None, 'conf/quality/x.yaml', output_dir='.')",
    ),
    (
        "postgres",
        "psycopg",
        "from fermion.table.manifest_store import open_manifest_store as o; "
        "o('postgresql://u@127.0.0.1:1/d')",
    ),
    ("s3", "s3fs", "import fermion; fermion.read_table('s3://bucket/f.fermion')"),
    ("s3", "s3fs", "import fermion; fermion.dataset('s3://bucket/table')"),
]

_PROBE = """
import sys
sys.modules[{module!r}] = None  # `import {module}` now fails, as when it is not installed
from fermion.errors import MissingExtraError
try:
    {code}
except MissingExtraError as exc:
    print(repr(str(exc)))
else:
    print("no error")
"""


@pytest.mark.parametrize(("extra", "module", "code"), CASES, ids=lambda c: str(c)[:30])
def test_a_missing_extra_is_one_line_naming_its_pip_install(
    extra: str, module: str, code: str
) -> None:
    probe = _PROBE.format(module=module, code=code)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    message = done.stdout.strip()
    assert f"pip install 'fermion[{extra}]'" in message, message
    assert "\\n" not in message and len(done.stdout.splitlines()) == 1


def test_the_error_is_a_fermion_error_and_an_import_error() -> None:
    with pytest.raises(MissingExtraError) as caught:
        require("fermion_no_such_module", "quality")
    assert isinstance(caught.value, FermionError) and isinstance(caught.value, ImportError)
    assert caught.value.name == "fermion_no_such_module"
    assert str(caught.value) == (
        "data-quality checks (great_expectations) needs an extra: "
        "pip install 'fermion[quality]' (cannot import fermion_no_such_module)"
    )


def test_hints_name_only_known_extras() -> None:
    assert [install_hint(name) for name in sorted(EXTRAS)] == [  # type: ignore[arg-type]
        "pip install 'fermion[postgres]'",
        "pip install 'fermion[quality]'",
        "pip install 'fermion[s3]'",
        "pip install 'fermion[spark]'",
    ]
    with pytest.raises(InvalidArgumentError, match="unknown extra 'gpu'"):
        install_hint("gpu")  # type: ignore[arg-type]
