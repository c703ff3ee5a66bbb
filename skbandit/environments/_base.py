"""The environment protocol every simulator implements, and its base class."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from abc import ABCMeta, abstractmethod

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils import Bunch, check_random_state

__all__ = ["BaseEnvironment"]


class BaseEnvironment(metaclass=ABCMeta):
    """Base class of the bandit simulators.

    An environment produces rounds in batches. :meth:`contexts` draws the next
    ``n_rounds`` rounds and returns their contexts; until the next call,
    :attr:`expected_rewards` and :attr:`action_mask` describe those rounds and
    :meth:`rewards` realises the reward of the arms a policy chose in them.
    :meth:`reset` seeds the environment and starts it over.

    A subclass implements two hooks:

    ``_setup(rng)``
        draw whatever is fixed for a whole run (a problem instance, a row order);
    ``_draw(n_rounds, rng)``
        return ``(X, expected_rewards, action_mask or None)`` of the next rounds;

    and, unless rewards are Bernoulli draws of the expected rewards,
    ``_realise(actions)``. The default Bernoulli rewards use one uniform per round
    shared by all arms (``reward = uniform < expected_reward``), so that policies
    run on the same seed face common random numbers, and a 0/1 expected reward is
    realised exactly.

    Parameters
    ----------
    random_state : int, RandomState instance or None, default=None
        Used by :meth:`reset` when it is called without a seed.

    See Also
    --------
    ClassificationBandit : A labelled data set as a bandit.
    LinearBandit : A fixed arm set with Bernoulli rewards.

    Examples
    --------
    A constant two-armed bandit: arm 1 pays with probability 0.9, arm 0 with 0.1.

    >>> import numpy as np
    >>> from skbandit.environments import BaseEnvironment
    >>> class TwoArms(BaseEnvironment):
    ...     n_actions = 2
    ...     n_features = 1
    ...     def _setup(self, rng):
    ...         pass
    ...     def _draw(self, n_rounds, rng):
    ...         X = np.ones((n_rounds, 1))
    ...         return X, np.tile([0.1, 0.9], (n_rounds, 1)), None
    >>> env = TwoArms().reset(0)
    >>> env.contexts(3).shape
    (3, 1)
    >>> env.expected_rewards
    array([[0.1, 0.9],
           [0.1, 0.9],
           [0.1, 0.9]])
    >>> env.rewards(np.array([1, 1, 0])).shape
    (3,)
    """

    #: Whether contexts are per arm, (n, K, d), rather than shared, (n, d).
    per_arm_contexts: bool = False

    def __init__(self, *, random_state=None):
        self.random_state = random_state

    # --------------------------------------------------------------- protocol
    @property
    @abstractmethod
    def n_actions(self) -> int:
        """Number of arms."""

    @property
    @abstractmethod
    def n_features(self) -> int:
        """Length of a context vector (the last axis of the contexts)."""

    def reset(self, random_state=None):
        """Seed the environment and start it over.

        Parameters
        ----------
        random_state : int, RandomState instance or None, default=None
            Seed of the run; ``None`` uses the environment's own ``random_state``.

        Returns
        -------
        self : object
            The reset environment.
        """
        seed = self.random_state if random_state is None else random_state
        self._rng = check_random_state(seed)
        self.n_rounds_drawn_ = 0
        self._current = None
        self._setup(self._rng)
        return self

    def contexts(self, n_rounds: int = 1) -> NDArray:
        """Draw the next rounds and return their contexts.

        Parameters
        ----------
        n_rounds : int, default=1
            Number of rounds to draw.

        Returns
        -------
        X : ndarray of shape (n_rounds, n_features) or \
                (n_rounds, n_actions, n_features)
            Shared or per-arm contexts, as :attr:`per_arm_contexts` says.
        """
        if not hasattr(self, "_rng"):
            self.reset()
        n_rounds = int(n_rounds)
        if n_rounds < 1:
            raise ValueError(f"n_rounds must be a positive integer, got {n_rounds}.")
        X, expected, mask = self._draw(n_rounds, self._rng)
        # One uniform per round, shared by all arms: common random numbers.
        uniforms = self._rng.random_sample(n_rounds)
        self._current = Bunch(
            X=X, expected_rewards=expected, action_mask=mask, uniforms=uniforms
        )
        self.n_rounds_drawn_ += n_rounds
        return X

    def step(self, n_rounds: int = 1) -> Bunch:
        """Draw the next rounds and return everything known about them.

        Parameters
        ----------
        n_rounds : int, default=1
            Number of rounds to draw.

        Returns
        -------
        rounds : Bunch
            ``X``, ``action_mask`` (or None) and ``expected_rewards``.
        """
        self.contexts(n_rounds)
        current = self._current
        return Bunch(
            X=current.X,
            action_mask=current.action_mask,
            expected_rewards=current.expected_rewards,
        )

    @property
    def expected_rewards(self) -> NDArray:
        """Expected reward of every arm in the current rounds, (n_rounds, n_actions)."""
        return self._rounds().expected_rewards

    @property
    def action_mask(self) -> NDArray | None:
        """Arms available in the current rounds, or None when all are.

        A boolean array of shape ``(n_rounds, n_actions)``.
        """
        return self._rounds().action_mask

    def rewards(self, actions: ArrayLike) -> NDArray:
        """Realised rewards of the chosen arms in the current rounds.

        Parameters
        ----------
        actions : array-like of shape (n_rounds,)
            One arm per current round.

        Returns
        -------
        rewards : ndarray of shape (n_rounds,)
            Observed rewards.
        """
        current = self._rounds()
        actions = np.asarray(actions)
        n = current.expected_rewards.shape[0]
        if actions.shape != (n,):
            raise ValueError(
                f"actions must have shape ({n},), one arm per current round; "
                f"got shape {actions.shape}."
            )
        if actions.size and (actions.min() < 0 or actions.max() >= self.n_actions):
            raise ValueError(
                f"actions must be in [0, {self.n_actions}); got values in "
                f"[{actions.min()}, {actions.max()}]."
            )
        return self._realise(actions.astype(np.intp))

    # ------------------------------------------------------------------ hooks
    @abstractmethod
    def _setup(self, rng: np.random.RandomState) -> None:
        """Draw what is fixed for a run."""

    @abstractmethod
    def _draw(
        self, n_rounds: int, rng: np.random.RandomState
    ) -> tuple[NDArray, NDArray, NDArray | None]:
        """Return contexts, expected rewards and mask of the next rounds."""

    def _realise(self, actions: NDArray) -> NDArray:
        """Bernoulli rewards from the uniforms drawn with the rounds."""
        current = self._current
        mean = current.expected_rewards[np.arange(actions.size), actions]
        return (current.uniforms < mean).astype(np.float64)

    # ---------------------------------------------------------------- helpers
    def _rounds(self) -> Bunch:
        if getattr(self, "_current", None) is None:
            raise RuntimeError(
                f"{type(self).__name__} has no current rounds; call contexts(n_rounds) "
                "(after reset(random_state)) first."
            )
        return self._current

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_actions={self.n_actions})"


class _GivenSizes:
    """``n_actions`` and ``n_features`` as the simulator's constructor stored them.

    A mixin, left of :class:`BaseEnvironment`, for simulators whose sizes are
    constructor arguments kept read-only in ``_n_actions`` and ``_n_features``.
    """

    @property
    def n_actions(self) -> int:
        """Number of arms."""
        return self._n_actions

    @property
    def n_features(self) -> int:
        """Length of a context vector (the last axis of the contexts)."""
        return self._n_features
