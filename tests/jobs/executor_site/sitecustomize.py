"""Run by every Python process the test cluster's executors start: their interpreter is
``node-python``, which puts this directory on ``PYTHONPATH`` (tests/jobs/standalone_cluster.py).

1. It makes the process a cluster node *without* Fermion installed: the development
   environment's editable install of Fermion is a finder on ``sys.meta_path`` (added by
   its ``.pth`` file, which ``site`` runs before this module); it is removed, so
   ``import fermion`` can only find what is on ``sys.path``, i.e. what ``--py-files``
   shipped.
2. It reports where ``fermion`` was imported from: one ``FERMION-IMPORT pid=... origin=...``
   line on stderr, which the executor copies to ``<work-dir>/<app>/<executor>/stderr``.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import ModuleSpec, PathFinder
from typing import Any

sys.meta_path[:] = [
    finder
    for finder in sys.meta_path
    if "__editable__" not in str(getattr(finder, "__module__", ""))
]


class _ReportFermionImport:
    """Finds ``fermion`` with the ordinary path finder and logs where it came from."""

    @classmethod
    def find_spec(cls, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if fullname != "fermion":
            return None
        spec = PathFinder.find_spec(fullname, path)
        origin = spec.origin if spec is not None else None
        sys.stderr.write(f"FERMION-IMPORT pid={os.getpid()} origin={origin}\n")
        sys.stderr.flush()
        return spec


sys.meta_path.insert(0, _ReportFermionImport)
