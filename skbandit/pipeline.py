"""A scikit-learn Pipeline that ends in a policy and exposes the bandit verbs.

Modelled on imbalanced-learn's ``Pipeline``: the transformers run as usual, and the
final policy's ``select``, ``predict_scores``, ``predict_action_proba`` and
``partial_fit`` become pipeline methods. ``rewards`` are data, like ``y``: they
always reach the final step, with or without metadata routing.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.utils import Bunch
from sklearn.utils.metadata_routing import UNUSED
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from skbandit._base._rollback import Rollback, checkpoint_attributes
from skbandit._dask import any_dask
from skbandit.utils._tags import is_policy

__all__ = ["BanditPipeline", "make_bandit_pipeline"]


def _final_step_has(attr):
    """``available_if`` condition: the final step has ``attr``."""

    def check(self):
        getattr(self.steps[-1][1], attr)  # raises the original AttributeError
        return True

    return check


def _is_passthrough(step):
    return step is None or (isinstance(step, str) and step == "passthrough")


class _AddFitParam:
    """Routed params (as from ``process_routing``) plus one ``fit`` param of a step."""

    def __init__(self, routed, step, param, value):
        self._routed, self._step, self._param, self._value = routed, step, param, value

    def __getitem__(self, name):
        params = self._routed[name]
        if name != self._step:
            return params
        params = Bunch(**params)
        params["fit"] = {**params.get("fit", {}), self._param: self._value}
        return params

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]

    def get(self, name, default=None):
        try:
            return self[name]
        except KeyError:
            return default


def _not_fitted(name, step):
    return NotFittedError(
        f"Step {name!r} ({type(step).__name__}) has no partial_fit and is not "
        "fitted, and its fit learns from the rows' values (fitting it on the first "
        "batch alone would freeze that batch's statistics). Fit it before streaming "
        "through BanditPipeline (e.g. fit the pipeline once on logged data), or use "
        "a transformer with partial_fit."
    )


#: Rows of another law for :func:`_fit_reads_shape_alone`'s probe.
_PROBE_ROWS = 16


def _dense(Z):
    return Z.toarray() if sparse.issparse(Z) else np.asarray(Z)


def _fit_reads_shape_alone(step, X):
    """Whether ``step``'s ``fit`` learns nothing from ``X`` but its shape.

    A clone fitted on ``X`` and a clone fitted on rows of another law (standard
    normal, a fixed seed) must transform ``X`` identically: ``PolynomialFeatures``
    does (its fit records the number of features), while ``PCA``, ``SplineTransformer``,
    ``KBinsDiscretizer`` or ``OneHotEncoder`` learn from the values and fail it, or
    refuse the other rows. Such a step is fitted on the first batch the pipeline
    sees, as ``Pipeline.fit`` would fit it on any batch.
    """
    try:
        rows = np.asarray(X, dtype=np.float64)
        other = np.random.default_rng(0).normal(size=(_PROBE_ROWS, *rows.shape[1:]))
        own = _dense(clone(step).fit(rows).transform(rows))
        probed = _dense(clone(step).fit(other).transform(rows))
    except (ValueError, TypeError):  # it learns values it then requires: not shape-only
        return False
    return own.shape == probed.shape and np.array_equal(own, probed, equal_nan=True)


def _is_fitted(step):
    try:
        check_is_fitted(step)
    except NotFittedError:
        return False
    return True


def _checkpoint_steps(pipeline, learner="fit"):
    """The undo of the pipeline's steps (the rollback protocol).

    A policy restores itself; every other step that has ``learner`` (the
    transformers, a final step that is not a policy) is deep-copied and restored in
    place, so that a rejected batch leaves the whole pipeline, and references to its
    steps, as they were.
    """
    steps = list(pipeline.steps)
    undos = [
        checkpoint_attributes(step, deep=True)
        for _, step in steps
        if hasattr(step, learner) and not is_policy(step)
    ]

    def undo():
        pipeline.steps = steps
        for undo_step in undos:
            undo_step()

    return undo


def _refuse_dask(verb, *arrays):
    """A clear error for Dask collections, which the steps would read into memory."""
    if any_dask(*arrays):
        raise TypeError(
            f"BanditPipeline.{verb} does not take Dask collections: it is one "
            "batch, which its steps would read into this process. On Dask "
            "collections, fit learns from every partition (the transformers by "
            "their partial_fit, then the policy), and a fitted pipeline scores them."
        )


class BanditPipeline(Pipeline):
    """Chain transformers and a final policy, with the bandit verbs.

    Every method of :class:`sklearn.pipeline.Pipeline` works as usual (``predict``
    reaches the policy's greedy ``predict``). On top of them:

    - ``fit(X, actions, rewards)`` fits the transformers on ``X`` and passes
      ``actions`` and ``rewards`` to the policy; ``rewards`` is data, like ``y``,
      and needs no routing;
    - ``partial_fit`` calls ``partial_fit`` then ``transform`` on each transformer
      that has ``partial_fit``; the others must already be fitted, or be
      stateless, or learn nothing but the shape of ``X`` (``PolynomialFeatures``),
      which the first batch fits;
    - ``select``, ``predict_scores`` and ``predict_action_proba`` transform ``X``
      and call the policy. Before any feedback, a transformer with
      ``partial_fit`` that has seen no data transforms ``X`` as if ``X`` were its
      first batch (a throw-away copy learns it), which is what ``partial_fit``
      will then do with the same rows: ``select`` works from cold start. On a
      Dask collection, a fitted pipeline transforms each partition on its worker
      and the policy returns a Dask array; ``fit`` on Dask collections fits each
      transformer by its ``partial_fit`` over the partitions (a shape-only one
      on the first partition's rows), then the policy by its Dask path, which it
      checks first (``partial_fit`` refuses them);
    - a call that raises (a rejected batch) leaves every step as it was;
    - ``score(X, actions, rewards, *, propensities)`` is the policy's off-policy
      value.

    Parameters
    ----------
    steps : list of tuples
        ``(name, transform)`` tuples, the last one ``(name, policy)``.
    transform_input : list of str, default=None
        See :class:`sklearn.pipeline.Pipeline`.
    memory : str or object with the joblib.Memory interface, default=None
        Caches the fitted transformers of ``fit``.
    verbose : bool, default=False
        Print the time elapsed fitting each step.

    Attributes
    ----------
    named_steps : :class:`~sklearn.utils.Bunch`
        The steps by name.

    See Also
    --------
    make_bandit_pipeline : Build a pipeline without naming the steps.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skbandit.pipeline import BanditPipeline
    >>> from skbandit.policies import LinUCB
    >>> rng = np.random.RandomState(0)
    >>> X, actions = rng.normal(size=(20, 3)), rng.randint(3, size=20)
    >>> rewards = rng.rand(20)
    >>> steps = [("scale", StandardScaler()), ("policy", LinUCB(n_actions=3))]
    >>> pipe = BanditPipeline(steps)
    >>> pipe = pipe.partial_fit(X, actions, rewards)
    >>> pipe.select(X[:4]).shape
    (4,)
    """

    # ``actions`` fills ``y``'s slot and ``rewards`` is data: neither is metadata,
    # so no ``set_*_request`` is generated for them (the policy requests its own).
    __metadata_request__fit = {"actions": UNUSED, "rewards": UNUSED}
    __metadata_request__partial_fit = {"actions": UNUSED, "rewards": UNUSED}
    __metadata_request__score = {
        "actions": UNUSED,
        "rewards": UNUSED,
        "propensities": UNUSED,
    }

    def fit(self, X, actions=None, rewards=None, **params):
        """Fit the transformers, then the policy on the transformed contexts.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts; must suit the first step.
        actions : array-like of shape (n_samples,), default=None
            Logged actions (``y`` for a final step that is not a policy).
        rewards : array-like of shape (n_samples,), default=None
            Logged rewards; passed to the final step's ``fit`` as its third
            argument.
        **params : dict
            Parameters of the steps: ``step__param`` without metadata routing,
            plain names (requested by the steps) with it, e.g. ``sample_weight``.

        Returns
        -------
        self : object
            Pipeline with fitted steps.
        """
        if any_dask(X, actions, rewards, *params.values()):
            return self._fit_dask(X, actions, rewards, params)
        self._rewards_for_fit = rewards
        try:
            with Rollback(_checkpoint_steps(self)):
                return super().fit(X, actions, **params)
        finally:
            del self._rewards_for_fit

    def _fit_dask(self, X, actions, rewards, params):
        """``fit`` on Dask collections: the transformers by their ``partial_fit``
        over the partitions (a shape-only one, ``PolynomialFeatures``, on the
        first partition's rows), then the policy's Dask fit; the steps are
        replaced only once both succeeded."""
        from skbandit._dask._fit import fit_path  # imports Dask
        from skbandit._dask._pipeline import fit_transformers

        self._validate_steps()
        final = self.steps[-1][0]
        kwargs = {}
        for key, value in params.items():
            step, routed, name = key.partition("__")
            if routed and step != final:
                raise TypeError(
                    "BanditPipeline.fit on Dask collections passes keyword "
                    f"arguments to the policy alone ({final}__sample_weight, "
                    f"{final}__action_mask); got {key!r}."
                )
            kwargs[name if routed else key] = value
        if not is_policy(self.steps[-1][1]):
            raise TypeError(
                "BanditPipeline.fit on Dask collections needs a policy as its final "
                "step (it fits on the transformed partitions by its Dask path)."
            )
        # The policy's own refusal (FALCON...) before the transformers' full pass.
        fit_path(self.steps[-1][1], rewards)
        steps = [(name, step) for _, name, step in self._iter(with_final=False)]
        fitted, Xt = fit_transformers(steps, X, _fit_reads_shape_alone)
        self.steps[-1][1].fit(Xt, actions, rewards, **kwargs)  # unchanged if it fails
        by_name = dict(fitted)
        for index, (name, step) in enumerate(self.steps[:-1]):
            self.steps[index] = (name, by_name.get(name, step))
        return self

    def _check_method_params(self, method, props, **kwargs):
        # Pipeline.fit routes the steps' params here; rewards join the final step's.
        routed = super()._check_method_params(method, props, **kwargs)
        rewards = getattr(self, "_rewards_for_fit", None)
        name, final = self.steps[-1]
        if method != "fit" or rewards is None or _is_passthrough(final):
            return routed
        return _AddFitParam(routed, name, "rewards", rewards)

    @available_if(_final_step_has("partial_fit"))
    def partial_fit(self, X, actions, rewards, **params):
        """Update each step with one batch of feedback.

        Transformers with ``partial_fit`` (``StandardScaler``, ``IncrementalPCA``...)
        are updated on ``X`` and then transform it; the others must already be
        fitted, or be stateless, or learn nothing from ``X`` but its shape
        (``PolynomialFeatures``: a probe fits two copies, on ``X`` and on other
        rows, and compares their transforms of ``X``), which this first batch fits.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        actions : array-like of shape (n_samples,)
            Pulled arms.
        rewards : array-like of shape (n_samples,)
            Observed rewards.
        **params : dict
            Keyword arguments of the policy's ``partial_fit`` (``sample_weight``,
            ``action_mask``).

        Returns
        -------
        self : object
            Pipeline with updated steps.
        """
        _refuse_dask("partial_fit", X, actions, rewards, *params.values())
        self._validate_steps()
        # The transformers learn first (the policy needs their output), so a batch
        # the policy rejects rolls them back.
        with Rollback(_checkpoint_steps(self, "partial_fit")) as rollback:
            for _, name, step in self._iter(with_final=False):
                if hasattr(step, "partial_fit"):
                    step.partial_fit(X)
                elif not _is_fitted(step):
                    if not _fit_reads_shape_alone(step, X):
                        raise _not_fitted(name, step)
                    rollback.undos.append(checkpoint_attributes(step, deep=True))
                    step.fit(X)  # its first batch: the shape it learns
                X = step.transform(X)
            self.steps[-1][1].partial_fit(X, actions, rewards, **params)
        return self

    def _transform_to_decide(self, X):
        """``X`` through the transformers, for ``select`` and the ``predict_*`` verbs.

        A transformer with ``partial_fit`` that has seen no data yet transforms
        ``X`` as if it were its first batch: a clone learns ``X`` and is thrown
        away. The next ``partial_fit`` of the same rows gives the policy the same
        transformed contexts, so a cold-start round is learned as it was decided.
        """
        if any_dask(X):  # the fitted transformers over the partitions, lazily
            from skbandit._dask._pipeline import transformed  # imports Dask

            steps = self._iter(with_final=False)
            return transformed([(name, step) for _, name, step in steps], X)
        for _, name, step in self._iter(with_final=False):
            try:
                X = step.transform(X)
            except NotFittedError as exc:
                if not hasattr(step, "partial_fit"):
                    if not _fit_reads_shape_alone(step, X):
                        raise _not_fitted(name, step) from exc
                    X = clone(step).fit(X).transform(X)  # as partial_fit will
                    continue
                try:
                    X = clone(step).partial_fit(X).transform(X)
                except ValueError as cold:
                    raise NotFittedError(
                        f"Step {name!r} ({type(step).__name__}) has seen no data "
                        f"and cannot learn from these contexts alone: {cold} "
                        "Give it a first batch with partial_fit or fit."
                    ) from cold
        return X

    @available_if(_final_step_has("select"))
    def select(self, X, **params):
        """Transform the contexts and let the policy choose an arm per round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        **params : dict
            Keyword arguments of the policy's ``select``, e.g. ``action_mask`` or
            ``return_propensities``.

        Returns
        -------
        actions : ndarray of shape (n_samples,), dtype int64
            The chosen arms.
        propensities : ndarray of shape (n_samples,)
            Probability of each chosen arm; only with ``return_propensities=True``.
        """
        return self.steps[-1][1].select(self._transform_to_decide(X), **params)

    @available_if(_final_step_has("predict_scores"))
    def predict_scores(self, X, **params):
        """Transform the contexts and return the policy's expected reward per arm.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        **params : dict
            Keyword arguments of the policy's ``predict_scores``, e.g.
            ``return_std=True``.

        Returns
        -------
        scores : ndarray of shape (n_samples, n_actions)
            Expected rewards; with ``return_std=True``, a ``(scores, std)`` tuple.
        """
        return self.steps[-1][1].predict_scores(self._transform_to_decide(X), **params)

    @available_if(_final_step_has("predict_action_proba"))
    def predict_action_proba(self, X, **params):
        """Transform the contexts and return the policy's action distribution.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Contexts.
        **params : dict
            Keyword arguments of the policy's ``predict_action_proba``, e.g.
            ``action_mask``.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_actions)
            Probability that ``select`` picks each arm.
        """
        return self.steps[-1][1].predict_action_proba(
            self._transform_to_decide(X), **params
        )

    @available_if(_final_step_has("score"))
    def score(self, X, actions=None, rewards=None, *, propensities=None, **params):
        """Off-policy value of the pipeline's policy on logged data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Logged contexts.
        actions : array-like of shape (n_samples,), default=None
            Logged actions.
        rewards : array-like of shape (n_samples,), default=None
            Logged rewards.
        propensities : array-like of shape (n_samples,), default=None
            Probability the logging policy gave each logged action.
        **params : dict
            Other keyword arguments of the final step's ``score``.

        Returns
        -------
        score : float
            The final step's score, by default the self-normalised IPS value.
        """
        check_is_fitted(self)
        final = self.steps[-1][1]
        for _, _, step in self._iter(with_final=False):
            X = step.transform(X)
        if rewards is None and propensities is None:  # a plain final estimator
            return final.score(X, actions, **params)
        return final.score(X, actions, rewards, propensities=propensities, **params)


def make_bandit_pipeline(*steps, memory=None, transform_input=None, verbose=False):
    """Build a :class:`BanditPipeline`, naming each step after its class.

    Parameters
    ----------
    *steps : list of estimators
        Transformers, then a policy.
    memory : str or object with the joblib.Memory interface, default=None
        Caches the fitted transformers of ``fit``.
    transform_input : list of str, default=None
        See :class:`sklearn.pipeline.Pipeline`.
    verbose : bool, default=False
        Print the time elapsed fitting each step.

    Returns
    -------
    pipeline : BanditPipeline
        The pipeline.

    See Also
    --------
    BanditPipeline : The pipeline class, with explicit step names.

    Examples
    --------
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skbandit.pipeline import make_bandit_pipeline
    >>> from skbandit.policies import LinUCB
    >>> make_bandit_pipeline(StandardScaler(), LinUCB(n_actions=3)).steps[1][0]
    'linucb'
    """
    return BanditPipeline(
        make_pipeline(*steps).steps,
        memory=memory,
        transform_input=transform_input,
        verbose=verbose,
    )
