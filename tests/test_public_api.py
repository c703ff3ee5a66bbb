"""The public API: every ``__all__`` resolves, every policy is discovered."""
# SPDX-License-Identifier: BSD-3-Clause

import importlib
import inspect
import pkgutil

import pytest

import skbandit
import skbandit.policies
from skbandit.base import BasePolicy
from skbandit.utils.discovery import all_policies


def _modules():
    yield "skbandit"
    for info in pkgutil.walk_packages(skbandit.__path__, prefix="skbandit."):
        if info.name.split(".")[-1] != "__main__":
            yield info.name


def _public_modules():
    return [
        name
        for name in _modules()
        if not any(part.startswith("_") for part in name.split("."))
    ]


@pytest.mark.parametrize("module_name", list(_modules()))
def test_all_is_importable(module_name):
    module = importlib.import_module(module_name)
    for name in getattr(module, "__all__", []):
        assert hasattr(module, name), f"{module_name}.__all__ lists missing {name!r}"
    exported = getattr(module, "__all__", [])
    assert len(set(exported)) == len(exported), f"{module_name}.__all__ repeats"


@pytest.mark.parametrize("module_name", _public_modules())
def test_public_modules_declare_all(module_name):
    module = importlib.import_module(module_name)
    assert hasattr(module, "__all__"), f"{module_name} has no __all__"


def test_public_entry_points():
    from skbandit.evaluation import make_ope_scorer  # noqa: F401
    from skbandit.pipeline import BanditPipeline, make_bandit_pipeline  # noqa: F401
    from skbandit.utils.estimator_checks import (  # noqa: F401
        SupervisedViewMixin,
        check_policy,
        parametrize_with_policy_checks,
    )


def _policy_classes_defined_in_policies():
    """Concrete, public-named BasePolicy subclasses in skbandit.policies' modules."""
    found = {}
    for info in pkgutil.walk_packages(
        skbandit.policies.__path__, prefix="skbandit.policies."
    ):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BasePolicy)
                and obj.__module__ == info.name
                and not name.startswith("_")
                and not inspect.isabstract(obj)
            ):
                found[name] = obj
    return found


def test_all_policies_finds_every_public_policy():
    discovered = dict(all_policies())
    assert [name for name, _ in all_policies()] == sorted(discovered)
    assert {"LinUCB", "LinTS", "EpsilonGreedy", "RandomPolicy"} <= set(discovered)
    for name, cls in discovered.items():
        assert name in skbandit.policies.__all__
        assert issubclass(cls, BasePolicy) and cls.__name__ == name
    defined = _policy_classes_defined_in_policies()
    missing = set(defined) - set(discovered)
    assert not missing, f"policies not exported from skbandit.policies: {missing}"


#: Every name ``skbandit.policies`` exported before the policies moved into family
#: subpackages (issue 21): each must still import from there.
POLICY_NAMES_BEFORE_THE_FAMILIES = (
    "CNTS CNUCB CombLinTS CombLinUCB ECOLog EpsilonGreedy GLMES GLMUCB KernelTS "
    "KernelUCB LinES LinPHE LinTS LinUCB LogPHE LogTS LogisticUCB1 NCBFUCB "
    "NeuralBootstrap NeuralES NeuralEpsilonGreedy NeuralLinear NeuralLogTS "
    "NeuralLogUCB NeuralPHE NeuralTS NeuralUCB RandomPolicy UCBGLM optimistic_samples "
    "theoretical_n_draws"
).split()


@pytest.mark.parametrize("name", POLICY_NAMES_BEFORE_THE_FAMILIES)
def test_policy_names_still_import(name):
    exec(f"from skbandit.policies import {name}", {})
    assert name in skbandit.policies.__all__


def test_networks_export_what_a_user_plugs_in():
    """The modules, the losses, the skorch net and the tangent features: at most ten
    names; the training engine stays private."""
    import skbandit.networks

    assert sorted(skbandit.networks.__all__) == sorted(
        [
            "BanditMLP",
            "SquaredLoss",
            "LogisticLoss",
            "make_bandit_net",
            "initialize_net",
            "tangent_features",
            "tangent_features_autograd",
            "tangent_quadratic",
            "tangent_square_sum",
            "TangentPrecision",
        ]
    )
    for engine in ("NetworkCore", "ReplayBuffer", "StackedBanditMLP"):
        assert not hasattr(skbandit.networks, engine)


def test_every_policy_belongs_to_the_family_package_that_defines_it():
    from skbandit.utils.discovery import all_families, policy_family

    families = [name for name, _, _ in all_families()]
    packages = sorted(
        info.name.lstrip("_")
        for info in pkgutil.iter_modules(skbandit.policies.__path__)
        if info.name.startswith("_") and info.name != "_core"  # shared, no family
    )
    assert families == packages
    by_family = {f: dict(all_policies(family=f)) for f in families}
    for name, cls in all_policies():
        family = policy_family(cls)
        assert cls.__module__.startswith(f"skbandit.policies._{family}")
        assert [f for f in families if name in by_family[f]] == [family]
    with pytest.raises(ValueError, match="family must be one of"):
        all_policies(family="not a family")
    with pytest.raises(ValueError, match="outside skbandit.policies"):
        policy_family(BasePolicy)


def test_family_titles_come_from_their_docstrings():
    from skbandit.utils.discovery import all_families

    for name, title, text in all_families():
        doc = importlib.import_module(f"skbandit.policies._{name}").__doc__
        assert doc.startswith(title)
        assert ":class:" not in text and ":mod:" not in text  # literals, not roles


#: The family bases a policy writer builds on, and a policy of each family on it.
FAMILY_BASES = {
    "LinearPolicyMixin": ("LinUCB", "LinTS", "EpsilonGreedy"),
    "KernelPolicyMixin": ("KernelUCB", "KernelTS"),
    "LogisticGroupsMixin": ("GLMUCB", "UCBGLM", "LogTS", "LogPHE"),
    "EnsemblePolicyMixin": ("LinES", "GLMES"),
    "BaseEstimatorPolicy": ("SquareCB", "FALCON", "BootstrappedTS"),
    "NeuralPolicy": ("NeuralTS", "NeuralUCB", "CNUCB", "CNTS"),
    "SlatePolicyMixin": ("CNUCB", "CNTS", "CombLinUCB", "CombLinTS"),
}


def test_the_family_bases_are_public():
    """``skbandit.policies.base`` exports each family's base (and nothing a policy
    writer would have to import from a private module to build on it)."""
    import skbandit.policies.base as family_bases

    assert sorted(family_bases.__all__) == sorted(
        [
            *FAMILY_BASES,
            "LINEAR_CONSTRAINTS",
            "ENSEMBLE_CONSTRAINTS",
            "SLATE_CONSTRAINTS",
        ]
    )
    for base_name, policies in FAMILY_BASES.items():
        base = getattr(family_bases, base_name)
        for policy in policies:
            assert issubclass(getattr(skbandit.policies, policy), base), policy
    assert set(family_bases.LINEAR_CONSTRAINTS) >= {"alpha", "fit_intercept"}
    assert set(family_bases.SLATE_CONSTRAINTS) == {"slate_size", "oracle"}
    assert set(family_bases.ENSEMBLE_CONSTRAINTS) >= {"n_models", "horizon", "alpha"}


def test_the_parameter_constraints_are_public_and_scikit_learns():
    """``Interval``, ``StrOptions`` and ``HasMethods`` come from a public module, are
    the ones the policies' constraints use, and scikit-learn's validation takes
    them as its own."""
    from sklearn.utils import _param_validation as sklearn_constraints

    from skbandit.policies import FALCON, LinUCB, NeuralTS
    from skbandit.utils.validation import HasMethods, Interval, StrOptions

    assert isinstance(LinUCB._parameter_constraints["alpha"][0], Interval)
    assert isinstance(NeuralTS._parameter_constraints["covariance"][0], StrOptions)
    assert isinstance(FALCON._parameter_constraints["estimator"][0], HasMethods)
    for public, theirs in [
        (Interval, sklearn_constraints.Interval),
        (StrOptions, sklearn_constraints.StrOptions),
        (HasMethods, sklearn_constraints.HasMethods),
    ]:
        assert issubclass(public, theirs)
    with pytest.raises(sklearn_constraints.InvalidParameterError, match="alpha"):
        LinUCB(alpha=-1.0).fit([[0.0]], [0], [1.0])


def test_tag_mixins_are_public():
    from skbandit.base import DeterministicSelectMixin, ExactPartialFitMixin
    from skbandit.policies import LinTS, LinUCB

    assert issubclass(LinUCB, DeterministicSelectMixin)
    assert issubclass(LinTS, ExactPartialFitMixin)
    assert not issubclass(LinTS, DeterministicSelectMixin)
