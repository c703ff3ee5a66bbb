"""Small torch work on one thread in every neural policy, unless the user chose."""
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skbandit.networks._threads as threads  # noqa: E402
from skbandit.policies import NeuralTS, NeuralUCB  # noqa: E402


@pytest.fixture
def two_default_threads(monkeypatch):
    """torch at two threads, as if that were its default (not the user's choice)."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    monkeypatch.setattr(threads, "_THREADS_AT_IMPORT", 2)
    for name in threads._THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    yield
    torch.set_num_threads(before)


def _threads_seen(policy, monkeypatch):
    """Fit, select and score once; the thread count inside each hook."""
    seen = {}
    cls = type(policy)
    for hook in ("_learn_rows", "_scores"):  # the training, inside the guard
        original = getattr(cls, hook)

        def spy(self, *args, _hook=hook, _original=original):
            seen[_hook] = torch.get_num_threads()
            return _original(self, *args)

        monkeypatch.setattr(cls, hook, spy)
    X = np.random.RandomState(0).normal(size=(6, 4)).astype(np.float32)
    policy.partial_fit(X, np.arange(6) % 3, np.ones(6))
    policy.predict_scores(X[:1])
    return seen


@pytest.mark.parametrize("cls", [NeuralTS, NeuralUCB])
def test_small_work_runs_on_one_thread_by_default(
    cls, two_default_threads, monkeypatch
):
    policy = cls(n_actions=3, hidden_layer_sizes=(8,), n_steps=2, random_state=0)
    assert _threads_seen(policy, monkeypatch) == {"_learn_rows": 1, "_scores": 1}
    assert torch.get_num_threads() == 2  # restored after each verb


def test_a_thread_count_the_user_set_is_obeyed(two_default_threads, monkeypatch):
    torch.set_num_threads(3)  # after skbandit was imported: the user's choice
    policy = NeuralTS(n_actions=3, hidden_layer_sizes=(8,), n_steps=2, random_state=0)
    assert _threads_seen(policy, monkeypatch) == {"_learn_rows": 3, "_scores": 3}


def test_the_environment_variable_is_the_users_choice(two_default_threads, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    policy = NeuralTS(n_actions=3, hidden_layer_sizes=(8,), n_steps=2, random_state=0)
    assert _threads_seen(policy, monkeypatch) == {"_learn_rows": 2, "_scores": 2}


def test_large_work_keeps_the_configured_threads(two_default_threads, monkeypatch):
    monkeypatch.setattr(threads, "SERIAL_WORK", 1)  # every block counts as large
    policy = NeuralTS(n_actions=3, hidden_layer_sizes=(8,), n_steps=2, random_state=0)
    assert _threads_seen(policy, monkeypatch) == {"_learn_rows": 2, "_scores": 2}
