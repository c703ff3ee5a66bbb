"""A softmax policy network trained on an off-policy objective, on skorch.

The network maps a context to one logit per arm; the policy plays
``pi(a | x) = softmax(logits)_a``. With ``w_i = pi(a_i | x_i) / p_i`` (clipped at
``clip``), the training loss is minus one of these estimates of the policy's value
on the logs, each differentiable in the network's parameters:

==========  ======================================================================
``ipw``     ``mean(w_i r_i)`` (Swaminathan & Joachims, "Batch learning from logged
            bandit feedback through counterfactual risk minimization", 2015,
            without the variance penalty; with ``variance_penalty`` it is their
            POEM objective, ``mean - variance_penalty * sqrt(var / n)``)
``snipw``   ``mean(w_i (r_i - lambda))``, BanditNet's translated objective (Joachims,
            Swaminathan & de Rijke, "Deep learning with logged bandit feedback",
            2018): the Lagrangian of self-normalised IPS, whose multiplier
            ``lambda`` (``translation``) removes the propensity overfitting of
            plain IPW
``dr``      ``mean(sum_a pi(a | x_i) q(x_i, a) + w_i (r_i - q(x_i, a_i)))`` with a
            cross-fitted reward model ``q``
==========  ======================================================================
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import torch
from sklearn.linear_model import Ridge
from skorch import NeuralNet
from torch import nn

from skbandit._base._selection import draw_from
from skbandit._docstrings import Substitution
from skbandit.networks._threads import policy_threads
from skbandit.offpolicy._base import (
    LEARNER_TAIL,
    PROPENSITY_CONSTRAINTS,
    BaseOffPolicyLearner,
)
from skbandit.offpolicy._models import cross_fitted_rewards
from skbandit.utils._param_validation import HasMethods, Interval, StrOptions

__all__ = ["NeuralPolicyLearner"]


class _PolicyMLP(nn.Module):
    """Contexts to one logit per arm: ReLU layers of ``hidden_layer_sizes``."""

    def __init__(self, n_features=1, n_actions=2, hidden_layer_sizes=(64,)):
        super().__init__()
        layers, width = [], n_features
        for size in hidden_layer_sizes:
            layers += [nn.Linear(width, size), nn.ReLU()]
            width = size
        layers.append(nn.Linear(width, n_actions))
        self.layers = nn.Sequential(*layers)

    def forward(self, X):
        return self.layers(X)


class _OffPolicyLoss(nn.Module):
    """Minus an off-policy value estimate of the softmax policy of the logits.

    ``y`` packs each logged round as ``[action, reward, propensity, weight,
    q(x, .)...]``; a round of weight ``s`` counts as ``s`` rounds.
    """

    def __init__(self, objective="ipw", clip=None, translation=0.0,
                 variance_penalty=0.0):  # fmt: skip
        super().__init__()
        self.objective = objective
        self.clip = clip
        self.translation = translation
        self.variance_penalty = variance_penalty

    def forward(self, logits, y):
        actions, rewards, propensities = y[:, 0].long(), y[:, 1], y[:, 2]
        counts = y[:, 3] / y[:, 3].sum()
        proba = torch.softmax(logits, dim=1)
        chosen = proba.gather(1, actions[:, None])[:, 0]
        weights = chosen / propensities
        if self.clip is not None:
            weights = torch.clamp(weights, max=self.clip)
        if self.objective == "dr":
            q = y[:, 4:]
            q_logged = q.gather(1, actions[:, None])[:, 0]
            terms = (proba * q).sum(dim=1) + weights * (rewards - q_logged)
        elif self.objective == "snipw":
            terms = weights * (rewards - self.translation)
        else:
            terms = weights * rewards
        value = (counts * terms).sum()
        if self.variance_penalty and terms.shape[0] > 1:
            variance = (counts * (terms - value) ** 2).sum()
            value = value - self.variance_penalty * torch.sqrt(
                variance / terms.shape[0]
            )
        return -value


@Substitution(learner_tail=LEARNER_TAIL)
class NeuralPolicyLearner(BaseOffPolicyLearner):
    """A softmax policy network trained on logged bandit feedback.

    A ReLU network maps each (standardised) context to one logit per arm; its
    softmax is the policy, trained by minibatch Adam on minus the IPW, SNIPW
    (BanditNet) or DR estimate of its value on the logs (see
    :mod:`skbandit.offpolicy`). The network is a torch module trained through a
    skorch :class:`~skorch.NeuralNet` (``net_``), on ``device``.

    ``select`` draws from the softmax (mixed with a uniform arm with probability
    ``epsilon``); ``predict`` is its argmax; ``predict_scores`` are the logits.

    Parameters
    ----------
    objective : {"ipw", "snipw", "dr"}, default="dr"
        The off-policy estimate the training maximises. DR is the default: it
        learned best on the benchmark of the user guide, under uniform and
        skewed logging; BanditNet's SNIPW needs its ``translation`` tuned.
    hidden_layer_sizes : tuple of int, default=(64,)
        Widths of the hidden ReLU layers; ``()`` is a linear softmax policy.
    learning_rate : float, default=0.01
        Adam's step size.
    alpha : float, default=1e-4
        L2 penalty (Adam's weight decay).
    max_epochs : int, default=50
        Passes over the logs.
    batch_size : int, default=128
        Rounds per gradient step.
    clip : float or None, default=None
        Upper bound of the importance weights ``pi(a_i | x_i) / p_i``.
    translation : float or None, default=None
        BanditNet's ``lambda`` (``objective="snipw"``); None takes the logs' mean
        reward. BanditNet chooses it by a search, which ``GridSearchCV`` does.
    variance_penalty : float, default=0.0
        POEM's weight on the estimate's standard error (0: none).
    reward_model : regressor or None, default=None
        The reward model of ``objective="dr"``, per arm, cross-fitted over 2 folds.
        None: :class:`~sklearn.linear_model.Ridge`.
    device : str, default="cpu"
        Where torch trains and predicts (``"cuda"`` for a GPU). A learner fitted on
        a GPU loads with ``joblib.load`` on a machine without one.
    %(learner_tail)s

    Attributes
    ----------
    net_ : skorch.NeuralNet
        The trained network.
    n_actions_ : int
        Number of arms.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.offpolicy import NeuralPolicyLearner
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 2))
    >>> actions = rng.integers(2, size=500)
    >>> rewards = np.where(actions == (X[:, 0] > 0), 1.0, 0.0)
    >>> policy = NeuralPolicyLearner(random_state=0)
    >>> policy = policy.fit(X, actions, rewards, np.full(500, 0.5))
    >>> policy.predict([[2.0, 0.0], [-2.0, 0.0]]).tolist()
    [1, 0]
    """

    _parameter_constraints = {
        **BaseOffPolicyLearner._parameter_constraints,
        **PROPENSITY_CONSTRAINTS,
        "objective": [StrOptions({"ipw", "snipw", "dr"})],
        "hidden_layer_sizes": [tuple, list],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "clip": [Interval(Real, 0, None, closed="neither"), None],
        "translation": [Real, None],
        "variance_penalty": [Interval(Real, 0, None, closed="left")],
        "reward_model": [None, HasMethods(["fit", "predict"])],
        "device": [str],
    }

    def __init__(
        self,
        objective="dr",
        *,
        hidden_layer_sizes=(64,),
        learning_rate=0.01,
        alpha=1e-4,
        max_epochs=50,
        batch_size=128,
        clip=None,
        translation=None,
        variance_penalty=0.0,
        reward_model=None,
        device="cpu",
        epsilon=0.0,
        propensity_model=None,
        propensity_clip=0.01,
        n_actions=None,
        random_state=None,
    ):
        self.objective = objective
        self.hidden_layer_sizes = hidden_layer_sizes
        self.learning_rate = learning_rate
        self.alpha = alpha
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.clip = clip
        self.translation = translation
        self.variance_penalty = variance_penalty
        self.reward_model = reward_model
        self.device = device
        self.epsilon = epsilon
        self.propensity_model = propensity_model
        self.propensity_clip = propensity_clip
        self.n_actions = n_actions
        self.random_state = random_state

    def _work(self, n_rows):
        widths = [self.n_features_in_, *self.hidden_layer_sizes, self.n_actions_]
        return n_rows * sum(a * b for a, b in zip(widths[:-1], widths[1:], strict=True))

    def _standardised(self, X):
        return ((X - self.x_mean_) / self.x_scale_).astype(np.float32)

    def _learn(self, X, actions, rewards, propensities, sample_weight):
        weights = np.ones(X.shape[0]) if sample_weight is None else sample_weight
        columns = [actions, rewards, propensities, weights]
        if self.objective == "dr":
            q_hat = cross_fitted_rewards(
                Ridge() if self.reward_model is None else self.reward_model,
                X, actions, rewards, sample_weight, self.n_actions_, "per_arm", 2,
                self.random_state,
            )  # fmt: skip
            columns += list(np.clip(q_hat, rewards.min(), rewards.max()).T)
        y = np.column_stack(columns).astype(np.float32)
        translation = (
            float(rewards.mean()) if self.translation is None else self.translation
        )
        self.x_mean_ = X.mean(axis=0)
        scale = X.std(axis=0)
        self.x_scale_ = np.where(scale > 0, scale, 1.0)
        net = NeuralNet(
            _PolicyMLP,
            module__n_features=X.shape[1],
            module__n_actions=self.n_actions_,
            module__hidden_layer_sizes=tuple(self.hidden_layer_sizes),
            criterion=_OffPolicyLoss,
            criterion__objective=self.objective,
            criterion__clip=self.clip,
            criterion__translation=translation,
            criterion__variance_penalty=self.variance_penalty,
            optimizer=torch.optim.Adam,
            optimizer__weight_decay=self.alpha,
            lr=self.learning_rate,
            max_epochs=self.max_epochs,
            batch_size=self.batch_size,
            iterator_train__shuffle=True,
            train_split=None,
            device=self.device,
            verbose=0,
        )
        seed = int(self._rng.integers(np.iinfo(np.int32).max))
        with policy_threads(self._work(X.shape[0])), torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            net.fit(self._standardised(X), y)
        self.translation_ = translation
        self.net_ = net

    def _reward_scores(self, X):
        with policy_threads(self._work(X.shape[0])):
            logits = self.net_.forward(self._standardised(X), training=False)
        return logits.detach().cpu().numpy().astype(np.float64)

    def _softmax(self, X, mask):
        logits = self._reward_scores(X)
        if mask is not None:
            logits = np.where(mask, logits, -np.inf)
        logits = logits - logits.max(axis=1, keepdims=True)
        proba = np.exp(logits)
        return proba / proba.sum(axis=1, keepdims=True)

    def _action_proba_free(self, X, mask):
        proba = self._softmax(X, mask)
        if self.epsilon == 0:
            return proba
        available = np.ones_like(proba) if mask is None else mask.astype(np.float64)
        uniform = available / available.sum(axis=1, keepdims=True)
        return self.epsilon * uniform + (1 - self.epsilon) * proba

    def _decide_free(self, X, mask, with_proba):
        law = self._action_proba_free(X, mask)  # one pass for the arms and law
        return draw_from(law, self._rng), (law if with_proba else None), None

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.policy_tags.stochastic_select = True
        return tags
