"""The policy verbs' Dask paths, reached through ``_dask.dask_dispatch``."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from skbandit._dask._fit import dask_fit
from skbandit._dask._predict import dask_predict

__all__ = ["call"]


def call(policy, verb, X, *args, **kwargs):
    """``policy.<verb>(X, ...)`` with Dask collections among its arguments."""
    from skbandit.utils._tags import is_slate_policy

    if verb == "fit":
        from skbandit.offpolicy import BaseOffPolicyLearner

        if isinstance(policy, BaseOffPolicyLearner):
            from skbandit._dask._offpolicy import learner_fit

            return learner_fit(policy, X, *args, **kwargs)
        return dask_fit(policy, X, *args, **kwargs)
    if is_slate_policy(policy):
        raise TypeError(
            f"{type(policy).__name__}.{verb} does not take Dask collections: slate "
            "policies fit from Dask logs, but score in memory (map their verbs over "
            "partitions with dask.array.map_blocks)."
        )
    if args:
        raise TypeError(f"{verb} takes its options as keywords on Dask collections.")
    return dask_predict(policy, verb, X, **kwargs)
