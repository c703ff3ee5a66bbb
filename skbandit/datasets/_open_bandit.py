"""The Open Bandit Dataset as the neural logistic bandits paper replays it.

Bae and Lee, "Neural logistic bandits" (ICML 2025, arXiv:2505.02069), appendix J.1:
each logged event of the OBD ``random/all`` sample gets a reduced action set, the
logged item plus the four other items of highest user-item affinity (``K = 5``), and
a feature vector per (event, candidate item) built from:

* the user features, one-hot encoded and compressed by a truncated SVD to 16 dims;
* the item features (``item_context.csv``), one-hot, SVD to 8 dims;
* the display position;
* the user-item affinity, log-transformed and scaled to ``[-1, 1]``;
* the user's 16 SVD features times the affinity.

That is ``16 + 8 + 1 + 1 + 16 = 42`` features. A replay (Li et al.'s rejection
method) then learns only from the events where the policy picks the logged item.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from sklearn.decomposition import TruncatedSVD
from sklearn.utils import Bunch, check_random_state

from skbandit.datasets._loaders import OBP_INSTALL, _find_obd

__all__ = ["make_open_bandit_replay"]


def _scaled(values):
    """Each column min-max scaled to ``[-1, 1]`` (constant columns give 0)."""
    lo, hi = values.min(axis=0), values.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return 2.0 * (values - lo) / span - 1.0


def _svd(one_hot, n_components, random_state):
    """Truncated SVD of a one-hot table, scaled to ``[-1, 1]``; fewer columns if
    the table has fewer (an SVD keeps at most ``n_columns - 1``)."""
    k = min(n_components, one_hot.shape[1] - 1)
    if k < 1:
        return np.zeros((one_hot.shape[0], 0))
    svd = TruncatedSVD(n_components=k, random_state=random_state)
    return _scaled(svd.fit_transform(one_hot))


def _candidate_sets(affinity, logged_item, n_candidates, rng):
    """Each event's candidate items, in a random order, and the logged one's slot.

    The logged item, then the others of highest affinity (ties broken at random).
    """
    n, n_items = affinity.shape
    noise = rng.uniform(size=affinity.shape) * 1e-9
    ranked = np.argsort(-(affinity + noise), axis=1, kind="stable")
    others = ranked[ranked != logged_item[:, None]].reshape(n, n_items - 1)
    items = np.c_[logged_item, others[:, : n_candidates - 1]]
    order = np.argsort(rng.uniform(size=items.shape), axis=1)
    items = np.take_along_axis(items, order, axis=1)
    return items, np.argmax(items == logged_item[:, None], axis=1)


def make_open_bandit_replay(
    *,
    data_home=None,
    n_candidates=5,
    n_user_components=16,
    n_item_components=8,
    random_state=0,
):
    """The Open Bandit Dataset sample as per-arm contexts for a replay.

    Builds the neural logistic paper's reduced action sets and features (appendix
    J.1 of Bae and Lee, ICML 2025) from ``random/all``: each event's candidates are
    the logged item and the ``n_candidates - 1`` others of highest user-item
    affinity (ties, which are most of them, broken at random), in a random order.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder searched first for ``random/all/all.csv`` (or ``all.csv``) and
        ``item_context.csv`` beside it; then ``$SKBANDIT_DATA``, then the
        installed ``obp`` package. Without ``item_context.csv`` the item features
        are left out.
    n_candidates : int, default=5
        Size ``K`` of the reduced action sets.
    n_user_components, n_item_components : int, default=16, 8
        Dimensions of the user and item SVD features.
    random_state : int, RandomState instance or None, default=0
        Seeds the SVDs, the affinity ties and the candidates' order.

    Returns
    -------
    replay : :class:`~sklearn.utils.Bunch`
        ``X`` of shape ``(n_events, K, n_features)``, ``logged`` (the logged
        item's index among the candidates), ``rewards`` (clicks), ``item_ids`` (the
        candidates' item ids, ``(n_events, K)``) and ``feature_names``.

    Raises
    ------
    FileNotFoundError
        When the sample is missing; the message gives the install command.

    Examples
    --------
    >>> from skbandit.datasets import make_open_bandit_replay
    >>> try:
    ...     replay = make_open_bandit_replay()
    ... except FileNotFoundError:  # obp's sample is not installed here
    ...     replay = None
    >>> replay is None or replay.X.shape == (10000, 5, 42)
    True
    """
    import pandas as pd

    rng = check_random_state(random_state)
    path = _find_obd(data_home, "random", "all")
    if path is None:
        raise FileNotFoundError(
            "The Open Bandit Dataset sample random/all was not found under data_home "
            "or $SKBANDIT_DATA, and the obp package is not installed. Install it "
            f"without its (torch) dependencies: `{OBP_INSTALL}`."
        )
    df = pd.read_csv(path, index_col=0)
    n = len(df)
    aff_cols = [c for c in df.columns if "affinity" in c]
    affinity = df[aff_cols].to_numpy(np.float64)  # (n, n_items)
    n_items = affinity.shape[1]
    if n_candidates > n_items:
        raise ValueError(f"n_candidates={n_candidates} > the {n_items} items.")
    logged_item = df["item_id"].to_numpy(np.int64)

    items, logged = _candidate_sets(affinity, logged_item, n_candidates, rng)

    user_cols = [c for c in df.columns if c.startswith("user_feature")]
    users = _svd(
        pd.get_dummies(df[user_cols].astype(str), dtype=np.float64).to_numpy(),
        n_user_components,
        rng,
    )
    item_table = path.parent / "item_context.csv"
    if item_table.is_file():
        ctx = pd.read_csv(item_table, index_col=0).set_index("item_id")
        ctx = ctx.reindex(range(n_items))
        numeric = ctx.select_dtypes("number").fillna(0.0)
        parts = [_scaled(numeric.to_numpy(np.float64))] if numeric.shape[1] else []
        text = ctx.drop(columns=numeric.columns)
        if text.shape[1]:
            parts.append(pd.get_dummies(text.astype(str), dtype=np.float64).to_numpy())
        item_features = _svd(np.hstack(parts), n_item_components, rng)
    else:
        item_features = np.zeros((n_items, 0))

    cand_affinity = np.take_along_axis(affinity, items, axis=1)
    log_aff = np.log1p(np.maximum(cand_affinity, 0.0))
    span = log_aff.max() - log_aff.min()
    aff = 2.0 * (log_aff - log_aff.min()) / span - 1.0 if span > 0 else log_aff * 0
    position = df["position"].to_numpy(np.float64)
    position = _scaled(position[:, None])[:, 0]
    K = n_candidates
    X = np.concatenate(
        [
            np.broadcast_to(users[:, None], (n, K, users.shape[1])),
            item_features[items],
            np.broadcast_to(position[:, None, None], (n, K, 1)),
            aff[:, :, None],
            users[:, None, :] * aff[:, :, None],
        ],
        axis=2,
    )
    names = (
        [f"user_svd{j}" for j in range(users.shape[1])]
        + [f"item_svd{j}" for j in range(item_features.shape[1])]
        + ["position", "affinity"]
        + [f"user_svd{j}_x_affinity" for j in range(users.shape[1])]
    )
    return Bunch(
        X=X,
        logged=logged,
        rewards=df["click"].to_numpy(np.float64),
        item_ids=items,
        feature_names=names,
    )
