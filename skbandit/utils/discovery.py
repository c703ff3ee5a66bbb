"""Discovery of the public policies, like sklearn's ``all_estimators``, and of their
families.

A family is a private subpackage of :mod:`skbandit.policies` (``_linear``, ``_glm``,
...; a lone module such as ``_random`` is a family of its own): the policies that share
its machinery. ``_core``, the machinery the families share, is no family. A
policy's family is read from the module that defines it, so a new family package is
found without a list to update.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

__all__ = ["all_families", "all_policies", "policy_family"]

_PREFIX = "skbandit.policies."


def policy_family(policy) -> str:
    """Return the family of a policy (class or instance) of :mod:`skbandit.policies`.

    Parameters
    ----------
    policy : type or BasePolicy
        A policy class, or an instance of one.

    Returns
    -------
    family : str
        The name of the family subpackage that defines it, without its underscore
        (``"linear"`` for :class:`~skbandit.policies.LinUCB`).

    Raises
    ------
    ValueError
        When the class is not defined inside :mod:`skbandit.policies`.

    Examples
    --------
    >>> from skbandit.policies import GLMES, LinUCB
    >>> from skbandit.utils.discovery import policy_family
    >>> policy_family(LinUCB), policy_family(GLMES())
    ('linear', 'ensemble')
    """
    cls = policy if inspect.isclass(policy) else type(policy)
    module = cls.__module__
    if not module.startswith(_PREFIX):
        raise ValueError(
            f"{cls.__name__} is defined in {module}, outside skbandit.policies: it "
            "belongs to no family."
        )
    return module[len(_PREFIX) :].split(".")[0].lstrip("_")


def all_families() -> list[tuple[str, str, str]]:
    """Return the policy families, from the subpackages of :mod:`skbandit.policies`.

    Returns
    -------
    families : list of (str, str, str)
        ``(name, title, description)`` sorted by name: the family's name (its
        module without the underscore), the first line of its docstring up to the
        colon, and its second paragraph (what a policy of the family implements),
        with cross-references turned into literals.

    Examples
    --------
    >>> from skbandit.utils.discovery import all_families
    >>> [name for name, _, _ in all_families()][:3]
    ['ensemble', 'estimator', 'glm']
    """
    import skbandit.policies as policies

    found = []
    for info in pkgutil.iter_modules(policies.__path__):
        if not info.name.startswith("_") or info.name == "_core":
            continue
        doc = inspect.getdoc(importlib.import_module(_PREFIX + info.name)) or ""
        paragraphs = [" ".join(p.split()) for p in doc.split("\n\n") if p.strip()]
        title = paragraphs[0].split(":")[0].rstrip(".") if paragraphs else info.name
        text = paragraphs[1] if len(paragraphs) > 1 else ""
        # Relative roles (:mod:`._newton`) resolve only inside the package.
        text = re.sub(r":\w+:`~?\.?([^`]+)`", r"``\1``", text)
        found.append((info.name.lstrip("_"), title, text))
    return sorted(found)


def all_policies(family: str | None = None) -> list[tuple[str, type]]:
    """Return the public policy classes of :mod:`skbandit.policies`.

    A class counts when it is exported by ``skbandit.policies``, is a subclass of
    :class:`~skbandit.base.BasePolicy` and is not abstract. Names resolved lazily
    by the package (neural policies) are included.

    Parameters
    ----------
    family : str, default=None
        Only the policies of this family (see :func:`all_families`).

    Returns
    -------
    policies : list of (str, type)
        ``(name, class)`` pairs sorted by name.

    Examples
    --------
    >>> from skbandit.utils.discovery import all_policies
    >>> dict(all_policies())["LinUCB"].__name__
    'LinUCB'
    >>> [name for name, _ in all_policies(family="slate")]
    ['CNTS', 'CNUCB']
    """
    import skbandit.policies as policies
    from skbandit.base import BasePolicy

    if family is not None and family not in {name for name, _, _ in all_families()}:
        raise ValueError(
            f"family must be one of {[n for n, _, _ in all_families()]}, got "
            f"{family!r}."
        )
    found = {}
    for name in getattr(policies, "__all__", dir(policies)):
        if name.startswith("_"):
            continue
        obj = getattr(policies, name)
        if (
            inspect.isclass(obj)
            and issubclass(obj, BasePolicy)
            and not inspect.isabstract(obj)
            and (family is None or policy_family(obj) == family)
        ):
            found[name] = obj
    return sorted(found.items())
