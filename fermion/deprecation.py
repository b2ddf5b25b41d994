"""Deprecated names: an old public name keeps working, with a ``DeprecationWarning``.

Example:
    >>> import warnings
    >>> def double(x: int) -> int:
    ...     return 2 * x
    >>> twice = deprecated_alias(double, "mod.twice", "mod.double")
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     twice(4), str(seen[0].message)
    (8, 'mod.twice is deprecated: use mod.double (same arguments)')
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

__all__ = ["deprecated_alias", "warn_deprecated"]

F = TypeVar("F", bound=Callable[..., Any])


def deprecated_alias(function: F, old: str, new: str) -> F:
    """``function`` under its old name ``old`` (dotted, as users import it): every call
    warns with a ``DeprecationWarning`` naming ``new``, then calls ``function``.

    Example:
        >>> alias = deprecated_alias(len, "pkg.size", "len")
        >>> alias.__name__, alias.__doc__
        ('size', 'Deprecated: use :func:`len` (same arguments).')
    """
    message = f"{old} is deprecated: use {new} (same arguments)"

    @functools.wraps(function)
    def alias(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return function(*args, **kwargs)

    name = old.rsplit(".", 1)[-1]
    alias.__name__ = alias.__qualname__ = name
    alias.__doc__ = f"Deprecated: use :func:`{new}` (same arguments)."
    return cast(F, alias)


def warn_deprecated(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` (a method or attribute, as users write it) is deprecated in
    favour of ``new``; for the deprecated methods of a class, which call it first.

    ``stacklevel`` 3 points the warning at the caller of the method that calls this.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as seen:
        ...     warnings.simplefilter("always")
        ...     warn_deprecated("Thing.old()", "new(thing)")
        ...     str(seen[0].message)
        'Thing.old() is deprecated: use new(thing)'
    """
    warnings.warn(f"{old} is deprecated: use {new}", DeprecationWarning, stacklevel=stacklevel)
