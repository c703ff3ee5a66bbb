"""Bandit simulators: environments whose expected rewards are known, so regret is exact.

The environment protocol
------------------------
An environment is a stream of rounds, drawn in batches::

    env.reset(random_state)          # seed and start over; returns env
    X = env.contexts(n_rounds)       # the next rounds' contexts
    env.action_mask                  # (n_rounds, n_actions) bool, or None
    env.expected_rewards             # (n_rounds, n_actions), for those rounds
    r = env.rewards(actions)         # realised rewards of the chosen arms
    env.step(n_rounds)               # Bunch(X, action_mask, expected_rewards)

plus ``n_actions``, ``n_features`` (the last axis of a context) and
``per_arm_contexts`` (contexts of shape ``(n, n_actions, n_features)`` rather than
``(n, n_features)``). Contexts come before any choice, so a policy never sees the
rewards of the round it decides. Rewards of Bernoulli environments use one uniform
per round shared by all arms, so two policies run on the same seed face common
random numbers.

To add a simulator, subclass :class:`BaseEnvironment` and implement ``n_actions``,
``n_features``, ``_setup(rng)`` (what is fixed for a run: an instance, an order)
and ``_draw(n_rounds, rng)`` returning ``(X, expected_rewards, action_mask)``;
override ``_realise(actions)`` for rewards other than Bernoulli draws of the
expected rewards.

Simulators
----------
:class:`ClassificationBandit`
    a labelled data set, arms are classes, reward 1 for the true class;
:class:`LinearBandit`, :class:`LogisticBandit`
    the fixed-arm Bernoulli problems of Kveton et al. (UAI 2019), sections 5.1 and 5.2;
:class:`NeuralLogisticBandit`
    Bernoulli rewards through the logistic link of the nonlinear latent functions
    of Bae and Lee, "Neural Logistic Bandits" (ICML 2025), with its pool of
    context-arm vectors;
:class:`SyntheticBandit`
    the nonlinear per-arm problems of the neural bandit papers (Zhang et al., ICLR
    2021; Hwang, Chai, Oh, ICML 2023; Sun, Wang, Xu);
:class:`TopKBandit`
    the combinatorial top-K semi-bandit of Hwang, Chai and Oh, "Combinatorial Neural
    Bandits" (ICML 2023);
:class:`CascadeBandit`
    the same contexts under the cascade click model (Kveton et al., ICML 2015): the
    user clicks the first attractive arm of the slate and sees nothing after it.
"""
# SPDX-License-Identifier: BSD-3-Clause

from skbandit.environments._base import BaseEnvironment
from skbandit.environments._cascade import CascadeBandit, cascade_value
from skbandit.environments._classification import ClassificationBandit
from skbandit.environments._linear import LinearBandit, LogisticBandit
from skbandit.environments._logistic import NeuralLogisticBandit
from skbandit.environments._synthetic import SyntheticBandit
from skbandit.environments._topk import TopKBandit

__all__ = [
    "BaseEnvironment",
    "CascadeBandit",
    "ClassificationBandit",
    "LinearBandit",
    "LogisticBandit",
    "NeuralLogisticBandit",
    "SyntheticBandit",
    "TopKBandit",
    "cascade_value",
]
