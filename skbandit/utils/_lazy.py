"""Names a package exports without importing their module until first use (PEP 562).

The torch-backed classes (the neural policies, the slate policies on a network, the
neural off-policy learner) live in modules that import torch and skorch, seconds of
import time. A package lists them here instead of importing them, so that
``import skbandit.policies``, and unpickling a LinUCB on a fresh Dask worker, do not
load torch; the first access to such a name imports its module.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import importlib
import sys

__all__ = ["lazy_exports"]


def lazy_exports(package, modules):
    """The module ``__getattr__`` and ``__dir__`` of ``package`` for deferred names.

    Parameters
    ----------
    package : str
        The importing module's ``__name__``.
    modules : dict of str to tuple of str
        Each defining module's full name and the names it gives ``package``.

    Returns
    -------
    getattr_, dir_ : callable
        To assign to the package's ``__getattr__`` and ``__dir__``. A name is looked
        up in its module at first access and then stored in the package, so later
        accesses are plain attribute reads.

    Examples
    --------
    >>> import skbandit.policies
    >>> "NeuralTS" in dir(skbandit.policies)
    True
    """
    where = {name: module for module, names in modules.items() for name in names}

    def getattr_(name):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    def dir_():
        return sorted(set(vars(sys.modules[package])) | set(where))

    return getattr_, dir_
