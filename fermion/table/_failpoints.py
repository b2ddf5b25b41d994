"""Named points in the write path where tests make a writer die or fail.

Set ``FERMION_TABLE_FAILPOINT`` to ``"{point}:{action}"`` in a writer process:

* ``kill`` — the process sends itself SIGKILL at the point (no cleanup handlers run);
* ``raise`` — an ``OSError`` is raised at the point, once per process (a transient
  failure, e.g. a connection reset after a request already took effect).

Points: ``after_data_write``, ``after_txn_write``, ``before_manifest_put``,
``after_manifest_put``, and inside a commit through an external manifest store
(:func:`fermion.table.manifest_store.commit_external`) ``after_manifest_staged``,
``after_store_insert`` and ``after_manifest_copy``. Unset (the default), :func:`hit` costs
one dict lookup.

Example:
    >>> hit("after_data_write")  # no failpoint configured: nothing happens
"""

from __future__ import annotations

import os
import signal

__all__ = ["ENV_VAR", "EXTERNAL_POINTS", "POINTS", "hit"]

ENV_VAR = "FERMION_TABLE_FAILPOINT"
POINTS = ("after_data_write", "after_txn_write", "before_manifest_put", "after_manifest_put")
EXTERNAL_POINTS = ("after_manifest_staged", "after_store_insert", "after_manifest_copy")
_fired: set[str] = set()


def hit(point: str) -> None:
    """Act on ``point`` if the environment names it (see the module docstring)."""
    spec = os.environ.get(ENV_VAR)
    if not spec:
        return
    name, _, action = spec.partition(":")
    if name != point:
        return
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif action == "raise" and point not in _fired:
        _fired.add(point)
        raise OSError(f"injected failure at {point}")
