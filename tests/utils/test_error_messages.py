"""Errors a new user meets first: each is a ValueError that says what to do."""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest

from skbandit.policies import LinUCB
from skbandit.utils.discovery import all_policies

X = np.random.default_rng(0).normal(size=(4, 3))
X.setflags(write=False)  # shared by the module's tests: none may write into it


@pytest.mark.parametrize("actions", [["a", "b", "a", "b"], [b"a", b"b", b"a", b"b"]])
@pytest.mark.parametrize("n_actions", [None, 2])
def test_label_actions_say_to_encode_them(actions, n_actions):
    policy = LinUCB(n_actions=n_actions)
    with pytest.raises(ValueError, match="LabelEncoder"):
        policy.fit(X, np.array(actions), np.ones(4))
    assert not hasattr(policy, "n_actions_")


def test_numeric_strings_are_labels_too():
    with pytest.raises(ValueError, match="integer arm indices.*'0'"):
        LinUCB(n_actions=2).partial_fit(X, np.array(["0", "1", "0", "1"]), np.ones(4))


def test_object_actions_of_integers_still_work():
    actions = np.array([0, 1, 0, 1], dtype=object)
    policy = LinUCB(n_actions=2).partial_fit(X, actions, np.ones(4))
    assert policy.action_counts_.tolist() == [2, 2]


def test_device_gpu_names_cuda():
    torch = pytest.importorskip("torch")
    from skbandit.policies import NeuralTS

    policy = NeuralTS(n_actions=2, device="gpu")
    with pytest.raises(ValueError, match="device='gpu' is not a torch device.*'cuda'"):
        policy.partial_fit(X, np.array([0, 1, 0, 1]), np.ones(4))
    assert not hasattr(policy, "n_actions_")
    # set_params on a fitted policy: the same message, and the policy is unchanged
    policy = NeuralTS(n_actions=2, random_state=0).partial_fit(
        X, [0, 1, 0, 1], [1.0] * 4
    )
    before = policy.predict_scores(X)
    policy.set_params(device="gpu")
    with pytest.raises(ValueError, match="not a torch device"):
        policy.select(X)
    policy.set_params(device="cpu")
    np.testing.assert_array_equal(policy.predict_scores(X), before)
    assert torch.device("cpu") == next(policy.net_.module_.parameters()).device


def test_device_cuda_without_cuda_says_to_use_cpu(monkeypatch):
    torch = pytest.importorskip("torch")
    from skbandit.policies import NeuralUCB

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    policy = NeuralUCB(n_actions=2, device="cuda")
    with pytest.raises(ValueError, match="no CUDA device.*device='cpu'"):
        policy.select(X)
    assert not hasattr(policy, "n_actions_")


# -- what tests/test_fuzz.py found, pinned ------------------------------------------


def test_sample_weight_of_zero_dimensions_is_a_value_error():
    policy = LinUCB(n_actions=2)
    with pytest.raises(ValueError, match="sample_weight must be a number or 1-D"):
        policy.fit(X, [0, 1, 0, 1], np.ones(4), sample_weight=np.array(0.5))
    assert not hasattr(policy, "n_actions_")
    policy.fit(X, [0, 1, 0, 1], np.ones(4), sample_weight=2.0)  # a number broadcasts


@pytest.mark.parametrize("huge", [1e308, 1e154])
def test_kernel_policies_refuse_contexts_whose_kernel_overflows(huge):
    from skbandit.exceptions import NumericalError
    from skbandit.policies import KernelTS, KernelUCB

    for cls in (KernelTS, KernelUCB):
        # the kernel's own guard, on contexts as given (standardised, 1e154 is a
        # row like the others)
        policy = cls(n_actions=2, standardize=False, random_state=0)
        policy.fit(X, [0, 1, 0, 1], np.ones(4))
        before = policy.predict_scores(X)
        bad = X[:1].copy()
        bad[0, 0] = huge
        with pytest.raises(NumericalError, match="non-finite.*left unchanged"):
            policy.partial_fit(bad, [1], [1.0])
        np.testing.assert_array_equal(policy.predict_scores(X), before)
        assert np.isfinite(before).all()


def test_cold_pipeline_with_scalar_contexts_is_a_value_error():
    from sklearn.preprocessing import StandardScaler

    from skbandit.pipeline import make_bandit_pipeline

    pipe = make_bandit_pipeline(StandardScaler(), LinUCB(n_actions=2))
    with pytest.raises(ValueError, match="cannot learn from these contexts alone"):
        pipe.select(0.5)


#: The neural policies on the squared loss (one network, the ensembles' stacked ones,
#: the combinatorial ones): every one with a paper's schedule but the three on the
#: cross-entropy, which refuse a reward outside [0, 1] before training (a
#: ValueError, checked in tests/policies/test_door_validation.py).
SQUARED_LOSS_NEURAL = [
    name
    for name, cls in all_policies()
    if hasattr(cls, "PAPER_SCHEDULE")
    and name not in {"NeuralLogTS", "NeuralLogUCB", "NCBFUCB"}
]


def test_every_squared_loss_neural_policy_is_checked():
    assert len(SQUARED_LOSS_NEURAL) == 9  # 7 single-arm, CN-UCB, CN-TS


@pytest.mark.parametrize("name", SQUARED_LOSS_NEURAL)
def test_diverged_training_rolls_back_to_the_same_pickle(name):
    # NeuralBootstrap's and NeuralES's message said the parameters "were left
    # where the steps took them" while the policy was in fact unchanged: every
    # one says what happened, and it did.
    pytest.importorskip("torch")
    from skbandit import policies
    from skbandit.exceptions import NumericalError
    from skbandit.utils._checks._policy_checks import _state

    cls = getattr(policies, name)
    params = dict(hidden_layer_sizes=(4,), n_steps=2, train_every=1, random_state=0)
    slate = "slate_size" in cls().get_params()
    if slate:  # a slate of one arm: the rows of a single-arm policy, as columns
        params["slate_size"] = 1
    column = (lambda v: np.reshape(v, (-1, 1))) if slate else np.asarray
    policy = cls(n_actions=2, **params).fit(X, column([0, 1, 0, 1]), column(np.ones(4)))
    policy.predict_scores(X), policy.predict_action_proba(X)
    before = _state(policy)
    with pytest.raises(NumericalError, match="left unchanged"):
        policy.partial_fit(X[:1], column([1]), column([1e308]))
    assert _state(policy) == before  # torch's load_state_dict reorders param_groups
