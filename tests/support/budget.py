"""How many examples a property test runs: its budget under the ``ci`` profile, scaled by
the profile loaded (tests/conftest.py: ``dev`` runs a tenth).

Example:
    >>> from hypothesis import settings
    >>> examples(300) == 300 * settings.default.max_examples // 100
    True
"""

from __future__ import annotations

from hypothesis import settings

#: The ``ci`` profile's examples per test (hypothesis's default), the unit of every budget.
CI_EXAMPLES = 100


def examples(ci: int) -> int:
    """``ci`` examples under the ``ci`` profile, proportionally fewer under ``dev``."""
    return max(1, ci * settings.default.max_examples // CI_EXAMPLES)
