"""``python -m fermion.cli``: the ``fermion`` command line."""

from __future__ import annotations

from fermion.cli.app import main

if __name__ == "__main__":
    raise SystemExit(main())
