"""Logs past memory: the Dask paths of the evaluation functions and the policies.

This package's ``__init__`` never imports Dask: :func:`is_dask` asks only whether
Dask is already imported and the object is one of its collections, so that
``import skbandit`` stays free of Dask and a numpy call pays one dictionary
look-up. The submodules, which do import Dask, are imported only once a Dask
collection has been passed.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import sys

__all__ = ["NO_BOOTSTRAP_ON_DASK", "any_dask", "is_dask"]

NO_BOOTSTRAP_ON_DASK = (
    "ci='bootstrap' resamples the logged rows in memory; on Dask collections use "
    "ci='analytic', whose interval is computed on the workers."
)


def is_dask(obj) -> bool:
    """Whether ``obj`` is a Dask collection (array, DataFrame, Series, ...).

    A Dask collection cannot exist before Dask is imported, so this never
    imports it.
    """
    if "dask" not in sys.modules or obj is None:
        return False
    from dask.base import is_dask_collection

    return is_dask_collection(obj)


def any_dask(*objs) -> bool:
    """Whether any of ``objs`` is a Dask collection."""
    return "dask" in sys.modules and any(is_dask(obj) for obj in objs)
