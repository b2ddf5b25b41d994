"""Named points in the write path where a test makes a writer die or fail; inert otherwise.

A failpoint acts only after a test *armed* it, in the process that is to fail:

* in-process, with :func:`arm` (a test, or a child process the test started, calls it);
* in a child process that cannot call Python first (a job started by ``spark-submit``), with
  two environment variables read once at import: ``FERMION_TABLE_FAILPOINT`` names the
  point and action, and ``FERMION_FAILPOINTS_ENABLE`` must hold :data:`ENABLE_TOKEN`. Either
  variable alone does nothing, so a stray variable in production cannot kill a writer.

Actions:

* ``kill`` — the process sends itself SIGKILL at the point (no cleanup handlers run);
* ``raise`` — an ``OSError`` is raised at the point, once per process (a transient
  failure, e.g. a connection reset after a request already took effect).

An armed point may carry a ``match``: it then acts only when the ``detail`` the code passes
(a path) contains that string, e.g. ``arm("partial_write", "kill", match="_deletions/")``.

Points (:data:`POINTS`): ``after_data_write``, ``after_txn_write``, ``before_manifest_put``,
``after_manifest_put`` (table commit); ``partial_write`` (half of a data, deletion,
transaction or staged manifest file written); ``before_link`` (put-if-absent: the temp file
is written and synced, the final name not linked yet); and inside a commit through an
external manifest store (:data:`EXTERNAL_POINTS`) ``after_manifest_staged``,
``after_store_insert`` (the version is inserted, the staged manifest not copied yet) and
``after_manifest_copy``. Unarmed (the
default), :func:`hit` costs one truth test of an empty dict.

Example:
    >>> hit("after_data_write")  # nothing armed: nothing happens
    >>> arm("after_data_write", "raise")
    >>> try:
    ...     hit("after_data_write")
    ... except OSError as exc:
    ...     print(exc)
    injected failure at after_data_write
    >>> disarm()
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

__all__ = [
    "ACTIONS",
    "ENABLE_TOKEN",
    "ENABLE_VAR",
    "ENV_VAR",
    "EXTERNAL_POINTS",
    "POINTS",
    "arm",
    "armed",
    "disarm",
    "hit",
    "split_write",
]

ENV_VAR = "FERMION_TABLE_FAILPOINT"
ENABLE_VAR = "FERMION_FAILPOINTS_ENABLE"
ENABLE_TOKEN = "test-harness-only"
EXTERNAL_POINTS = ("after_manifest_staged", "after_store_insert", "after_manifest_copy")
POINTS = (
    "after_data_write",
    "after_txn_write",
    "before_manifest_put",
    "after_manifest_put",
    "partial_write",
    "before_link",
    *EXTERNAL_POINTS,
)
ACTIONS = ("kill", "raise")

_ARMED: dict[str, tuple[str, str]] = {}  # point -> (action, match)
_fired: set[str] = set()


def arm(point: str, action: str, *, match: str = "") -> None:
    """Make ``point`` act (``kill`` or ``raise``) in this process, when ``detail`` contains
    ``match``.

    Raises:
        ValueError: Unknown point or action (a test bug).
    """
    if point not in POINTS or action not in ACTIONS:
        raise ValueError(f"unknown failpoint {point!r} or action {action!r}")
    _ARMED[point] = (action, match)
    _fired.discard(point)


def disarm() -> None:
    """Disarm every failpoint of this process."""
    _ARMED.clear()
    _fired.clear()


def armed(point: str) -> bool:
    """Whether ``point`` is armed in this process."""
    return point in _ARMED


def hit(point: str, detail: str = "") -> None:
    """Act on ``point`` if a test armed it (see the module docstring)."""
    if not _ARMED:
        return
    spec = _ARMED.get(point)
    if spec is None:
        return
    action, match = spec
    if match and match not in detail.replace(os.sep, "/"):
        return
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif point not in _fired:
        _fired.add(point)
        raise OSError(f"injected failure at {point}")


def split_write(write: Callable[[memoryview], object], data: bytes, detail: str) -> None:
    """``write(data)``; with ``partial_write`` armed, write half, hit the point, write the
    rest (so a kill leaves a torn file behind)."""
    view = memoryview(data)
    if "partial_write" in _ARMED and len(view) > 1:
        half = len(view) // 2
        write(view[:half])
        hit("partial_write", detail)
        view = view[half:]
    write(view)


def _arm_from_environment() -> None:
    spec = os.environ.get(ENV_VAR)
    if not spec or os.environ.get(ENABLE_VAR) != ENABLE_TOKEN:
        return
    point, _, action = spec.partition(":")
    action, _, match = action.partition(":")
    if point in POINTS and action in ACTIONS:
        _ARMED[point] = (action, match)


_arm_from_environment()
