"""A policy written outside the package, from public imports only, passes the public
policy checks: the end of design.md's "Adding a policy".

The module below is written to a temporary folder and imported from there, as a user's
own file would be; it imports nothing private of skbandit.
"""
# SPDX-License-Identifier: BSD-3-Clause

import importlib
import sys
import textwrap

import numpy as np

#: The whole user module: a greedy policy on running reward means per arm.
SOURCE = textwrap.dedent(
    '''
    from numbers import Real

    import numpy as np

    from skbandit.base import BasePolicy


    class MeanGreedy(BasePolicy):
        """Greedy on each arm's running mean reward, from a prior mean ``prior``."""

        _parameter_constraints = {**BasePolicy._parameter_constraints, "prior": [Real]}

        def __init__(self, n_actions=None, *, prior=0.0, random_state=None):
            self.n_actions = n_actions
            self.prior = prior
            self.random_state = random_state

        def _init_state(self):
            self.sums_ = np.zeros(self.n_actions_)
            self.weights_ = np.zeros(self.n_actions_)

        def _update(self, X, actions, rewards, sample_weight):
            w = np.ones(len(rewards)) if sample_weight is None else sample_weight
            sums = self.sums_ + np.bincount(actions, w * rewards, self.n_actions_)
            weights = self.weights_ + np.bincount(actions, w, self.n_actions_)
            if not np.all(np.isfinite(sums)):
                raise ValueError("rewards must be finite")
            self.sums_, self.weights_ = sums, weights  # rebound once nothing can fail

        def _scores(self, X, return_std):
            means = (self.prior + self.sums_) / (1.0 + self.weights_)
            return np.broadcast_to(means, (X.shape[0], self.n_actions_)).copy(), None

        def _add_arms(self, n_new):
            self.sums_ = np.r_[self.sums_, np.zeros(n_new)]
            self.weights_ = np.r_[self.weights_, np.zeros(n_new)]

        @classmethod
        def _get_test_params(cls):
            return [{"n_actions": 3, "random_state": 0}]
    '''
)


def _import_user_module(folder, monkeypatch):
    """The user's file on the user's path (pickles name its module)."""
    (folder / "my_policies.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "my_policies", raising=False)
    return importlib.import_module("my_policies")


def test_the_user_module_imports_nothing_private():
    imports = [line for line in SOURCE.splitlines() if "import" in line]
    assert imports and not any("._" in line or " _" in line for line in imports)


def test_a_policy_written_outside_passes_the_public_checks(tmp_path, monkeypatch):
    from skbandit.utils.estimator_checks import check_policy

    MeanGreedy = _import_user_module(tmp_path, monkeypatch).MeanGreedy
    assert MeanGreedy.__module__ == "my_policies"
    check_policy(MeanGreedy(n_actions=3, random_state=0))
    # and it learns: the arm whose rewards are 1 becomes the greedy one
    policy = MeanGreedy(n_actions=3).fit(np.zeros((6, 2)), [0, 1, 2] * 2, [0, 1, 0] * 2)
    assert policy.predict(np.zeros((1, 2)))[0] == 1
