"""Discovery of the public policies, like sklearn's ``all_estimators``."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import inspect

__all__ = ["all_policies"]


def all_policies() -> list[tuple[str, type]]:
    """Return the public policy classes of :mod:`skbandit.policies`.

    A class counts when it is exported by ``skbandit.policies``, is a subclass of
    :class:`~skbandit.base.BasePolicy` and is not abstract. Names resolved lazily
    by the package (neural policies) are included.

    Returns
    -------
    policies : list of (str, type)
        ``(name, class)`` pairs sorted by name.

    Examples
    --------
    >>> from skbandit.utils.discovery import all_policies
    >>> dict(all_policies())["LinUCB"].__name__
    'LinUCB'
    """
    import skbandit.policies as policies
    from skbandit.base import BasePolicy

    found = {}
    for name in getattr(policies, "__all__", dir(policies)):
        if name.startswith("_"):
            continue
        obj = getattr(policies, name)
        if (
            inspect.isclass(obj)
            and issubclass(obj, BasePolicy)
            and not inspect.isabstract(obj)
        ):
            found[name] = obj
    return sorted(found.items())
