"""Logs past memory: the Dask paths of the evaluation functions and the policies.

This package's ``__init__`` never imports Dask: :func:`is_dask` asks only whether
Dask is already imported and the object's type is one of its, so that ``import
skbandit`` stays free of Dask and a numpy call pays a dictionary look-up. The
submodules, which do import Dask, are imported only once a Dask collection has
been passed.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import functools
import sys

__all__ = ["NO_BOOTSTRAP_ON_DASK", "any_dask", "dask_dispatch", "is_dask"]

NO_BOOTSTRAP_ON_DASK = (
    "ci='bootstrap' resamples the logged rows in memory; on Dask collections use "
    "ci='analytic', whose interval is computed on the workers."
)


def is_dask(obj) -> bool:
    """Whether ``obj`` is a Dask collection (array, DataFrame, Series, ...).

    A Dask collection cannot exist before Dask is imported, so this never
    imports it; its type is then defined in one of Dask's modules.
    """
    return "dask" in sys.modules and type(obj).__module__.startswith("dask.")


def any_dask(*objs) -> bool:
    """Whether any of ``objs`` is a Dask collection."""
    return "dask" in sys.modules and any(is_dask(obj) for obj in objs)


def dask_dispatch(method):
    """Run a policy verb over Dask partitions when any of its arrays is a Dask one.

    Decorates ``fit``, ``select``, ``predict_scores`` and ``predict_action_proba``
    of the base: a numpy call pays one dictionary look-up (Dask not imported) or
    one type test per argument.
    """
    verb = method.__name__

    @functools.wraps(method)
    def dispatched(self, X, *args, **kwargs):
        if "dask" in sys.modules and any_dask(X, *args, *kwargs.values()):
            from skbandit._dask._dispatch import call  # imports Dask

            return call(self, verb, X, *args, **kwargs)
        return method(self, X, *args, **kwargs)

    return dispatched
