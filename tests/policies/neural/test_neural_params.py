"""The neural policies' parameters, declared once: signatures, docstrings and
constraints agree, and a custom skorch ``net=`` either takes effect or is refused."""
# SPDX-License-Identifier: BSD-3-Clause

import ast
import inspect
import re

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose
from skorch import NeuralNetRegressor
from skorch.callbacks import EpochScoring

from skbandit.policies import (
    CNTS,
    CNUCB,
    NeuralBootstrap,
    NeuralEpsilonGreedy,
    NeuralES,
    NeuralLinear,
    NeuralLogTS,
    NeuralLogUCB,
    NeuralPHE,
    NeuralTS,
    NeuralUCB,
)

POLICIES = [
    NeuralTS,
    NeuralUCB,
    NeuralEpsilonGreedy,
    NeuralLinear,
    NeuralBootstrap,
    NeuralLogUCB,
    NeuralLogTS,
    CNUCB,
    CNTS,
    NeuralES,
    NeuralPHE,
]
#: The policies that take a custom network.
CUSTOM = [
    NeuralTS,
    NeuralUCB,
    NeuralEpsilonGreedy,
    NeuralLinear,
    NeuralLogUCB,
    NeuralLogTS,
    NeuralPHE,
]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _signature(cls):
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return {p.name: p.default for p in params}


def _documented(cls):
    # numpydoc is a lint extra, not a test dependency: the docstring checks skip
    # without it, the rest of this module runs.
    docscrape = pytest.importorskip("numpydoc.docscrape")
    doc = docscrape.ClassDoc(cls, config={"show_class_members": False})
    return [(p.name, p.type, "\n".join(p.desc)) for p in doc["Parameters"]]


def _same(text_value, default):
    if isinstance(default, bool) or isinstance(text_value, bool):
        return type(text_value) is type(default) and text_value == default
    return text_value == default


@pytest.mark.parametrize("cls", POLICIES, ids=lambda c: c.__name__)
def test_every_parameter_is_documented_once_in_signature_order(cls):
    signature = _signature(cls)
    names = [name for name, _, _ in _documented(cls)]
    assert names == list(signature)  # each once, in order, and nothing else


@pytest.mark.parametrize("cls", POLICIES, ids=lambda c: c.__name__)
def test_documented_defaults_are_the_signature_defaults(cls):
    signature = _signature(cls)
    for name, kind, desc in _documented(cls):
        match = re.search(r"default=(.+)$", kind)
        assert match, f"{cls.__name__}.{name}: no default= in {kind!r}"
        text = match.group(1).strip()
        value = ast.literal_eval(text)  # "(100,)", '"mean"', "1e-3", "None", ...
        assert _same(value, signature[name]), (cls.__name__, name, text)
        assert desc.strip(), f"{cls.__name__}.{name} has no description"


@pytest.mark.parametrize("cls", POLICIES, ids=lambda c: c.__name__)
def test_constraints_cover_exactly_the_parameters(cls):
    assert set(cls._parameter_constraints) == set(_signature(cls))


def test_the_default_check_can_fail():
    # The parser reads what a wrong docstring would say.
    assert not _same(ast.literal_eval("1e-3"), 1e-2)
    assert not _same(ast.literal_eval("True"), 1)
    assert not _same(ast.literal_eval("(100,)"), (100, 100))
    assert _same(ast.literal_eval('"mean"'), "mean")


# ------------------------------------------------------------------ custom net
class _Small(torch.nn.Module):
    """One tower shared by the arms: every arm's score, shape (n, K), with a hidden
    vector per arm (what NeuralLinear regresses on)."""

    def __init__(self, n_features, n_actions, hidden=5):
        super().__init__()
        self.n_actions = n_actions
        self.body = torch.nn.Linear(n_features, hidden)
        self.out = torch.nn.Linear(hidden, 1)

    def forward(self, X):
        if X.ndim == 2:
            X = X[:, None, :].expand(-1, self.n_actions, -1)
        return self.out(torch.relu(self.body(X)))[..., 0]


def _data(n=12, d=3, K=3, seed=0):
    rng = np.random.RandomState(seed)
    # Rewards in [0, 1]: the logistic policies refuse others at the door.
    return rng.normal(size=(n, d)), rng.randint(K, size=n), rng.uniform(size=n)


#: Each ignored skorch setting, a value other than skorch's default, and the policy
#: parameter the error sends the user to (None: nothing replaces it).
IGNORED = [
    pytest.param("lr", 0.5, "learning_rate", id="lr"),
    pytest.param("max_epochs", 3, "n_steps", id="max_epochs"),
    pytest.param("batch_size", 16, "batch_size", id="batch_size"),
    pytest.param("callbacks", [EpochScoring("r2")], None, id="callbacks"),
    pytest.param("iterator_train__shuffle", True, None, id="iterator_train__shuffle"),
    pytest.param("criterion", torch.nn.L1Loss, None, id="criterion"),
    pytest.param("train_split", None, None, id="train_split"),
]


@pytest.mark.parametrize("cls", CUSTOM, ids=lambda c: c.__name__)
@pytest.mark.parametrize("key, value, replacement", IGNORED)
def test_ignored_net_settings_raise_naming_what_to_use(cls, key, value, replacement):
    X, a, r = _data()
    net = NeuralNetRegressor(module=_Small, **{key: value})
    policy = cls(n_actions=3, net=net, n_steps=2, random_state=0)
    with pytest.raises(ValueError, match=re.escape(f"{key} -> ")) as error:
        policy.fit(X, a, r)
    message = str(error.value)
    named = re.search(rf"{re.escape(key)} -> the policy's (\w+)", message)
    if replacement is None:
        assert re.search(rf"{re.escape(key)} -> nothing", message)
    else:
        assert named and named.group(1) == replacement, message
        assert replacement in policy.get_params()  # a real parameter of the policy


@pytest.mark.parametrize("cls", CUSTOM, ids=lambda c: c.__name__)
def test_a_net_at_skorch_defaults_is_accepted(cls):
    X, a, r = _data()
    net = NeuralNetRegressor(module=_Small, module__hidden=4)
    policy = cls(n_actions=3, net=net, n_steps=2, random_state=0).fit(X, a, r)
    assert policy.net_.module_.body.out_features == 4
    assert not hasattr(net, "module_")  # cloned, not fitted in place


def test_module_and_optimizer_settings_take_effect():
    X, a, r = _data()
    lr, alpha, n_steps, momentum = 0.1, 0.5, 4, 0.9
    net = NeuralNetRegressor(
        module=_Small,
        module__hidden=7,
        optimizer=torch.optim.SGD,
        optimizer__momentum=momentum,
    )
    policy = NeuralEpsilonGreedy(
        n_actions=3,
        net=net,
        n_steps=n_steps,
        learning_rate=lr,
        alpha=alpha,
        standardize=False,  # the steps below on the contexts as given
        random_state=0,
    ).fit(X, a, r)
    module = policy.net_.module_
    assert module.body.out_features == 7
    group = policy.net_.optimizer_.param_groups[0]
    assert group["momentum"] == momentum and group["lr"] == lr
    # The same steps written out: heavy-ball SGD on the mean loss plus the penalty
    # alpha ||theta - theta_0||^2 / 2 / n (a custom module has scale 1).
    ref = _Small(3, 3, hidden=7).double()
    with torch.no_grad():
        offset = 0
        for p in ref.parameters():
            chunk = policy.theta0_[offset : offset + p.numel()]
            p.copy_(torch.as_tensor(chunk).view_as(p))
            offset += p.numel()
    theta0 = [p.detach().clone() for p in ref.parameters()]
    Xt = torch.as_tensor(X.astype(np.float32)).double()
    rt = torch.as_tensor(r.astype(np.float32)).double()
    velocity = [torch.zeros_like(p) for p in ref.parameters()]
    n = X.shape[0]
    for _ in range(n_steps):
        f = ref(Xt)[np.arange(n), a]
        penalty = sum(
            ((p - p0) ** 2).sum()
            for p, p0 in zip(ref.parameters(), theta0, strict=True)
        )
        loss = ((f - rt) ** 2).sum() / 2 / n + alpha * penalty / 2 / n
        grads = torch.autograd.grad(loss, list(ref.parameters()))
        with torch.no_grad():
            for p, g, v in zip(ref.parameters(), grads, velocity, strict=True):
                v.mul_(momentum).add_(g)
                p.sub_(lr * v)
    got = torch.cat([p.detach().reshape(-1) for p in module.parameters()])
    want = torch.cat([p.detach().reshape(-1) for p in ref.parameters()])
    assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    # Without the momentum the steps differ: the comparison can fail.
    plain = NeuralEpsilonGreedy(
        n_actions=3,
        net=NeuralNetRegressor(module=_Small, module__hidden=7),
        n_steps=n_steps,
        learning_rate=lr,
        alpha=alpha,
        random_state=0,
    ).fit(X, a, r)
    other = torch.cat([p.detach().reshape(-1) for p in plain.net_.module_.parameters()])
    assert not np.allclose(other.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
