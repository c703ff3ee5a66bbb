"""Write ``docs/api.rst`` from the ``__all__`` of skbandit's public modules.

The page is grouped as scikit-learn's reference is: one section per public module,
the policies split by family, the families read from the package's layout. The
grouping below names the objects we know of; a
name that a module exports and the grouping does not know still gets a page, under
the module's last section, so the reference always covers every public object.
``api_coverage`` (beside this file) checks that at the end of the build.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import importlib
from pathlib import Path


def _policy_sections():
    """One section per policy family, read from the layout of ``skbandit.policies``
    (:func:`skbandit.utils.discovery.all_families`): a new family package gets its
    section without an edit here."""
    from skbandit.utils.discovery import all_families

    return [
        (title, text, [f"skbandit.policies._{name}"])
        for name, title, text in all_families()
    ]


#: (module, title, description, [(section title, section text, [names, a public
#: module, or the private module or package that defines them]), ...])
MODULES = [
    (
        "skbandit.policies",
        "Policies",
        "Contextual bandit policies. Every policy shares the verbs of "
        ":class:`~skbandit.base.BasePolicy` and is a scikit-learn estimator.",
        _policy_sections(),
    ),
    (
        "skbandit.oracles",
        "Slate oracles",
        "From per-arm scores to a slate of distinct arms: the ``oracle`` of the "
        "slate policies.",
        [("Oracles", "", [])],
    ),
    (
        "skbandit.networks",
        "Networks",
        "What a neural policy plugs in: the papers' network and its losses, its skorch "
        "wrapping, and the tangent features and their precision. The training engine "
        "is private: the policies drive it through their parameters.",
        [
            ("Modules and losses", "", ["BanditMLP", "SquaredLoss", "LogisticLoss"]),
            ("The skorch net", "", ["make_bandit_net", "initialize_net"]),
            (
                "Tangent features",
                "",
                [
                    "tangent_features",
                    "tangent_features_autograd",
                    "tangent_quadratic",
                    "tangent_square_sum",
                    "TangentPrecision",
                ],
            ),
        ],
    ),
    (
        "skbandit.evaluation",
        "Evaluation",
        "Running policies on simulators, and estimating a policy's value from "
        "logged data.",
        [
            (
                "Simulation",
                "",
                [
                    "simulate",
                    "SimulationResult",
                    "compare",
                    "ComparisonResult",
                    "collect_logged_data",
                    "chosen_propensities",
                    "online_replay",
                ],
            ),
            (
                "Off-policy estimators",
                "",
                [
                    "estimate_value",
                    "PolicyValue",
                    "ips_value",
                    "snips_value",
                    "dm_value",
                    "dr_value",
                    "sndr_value",
                    "switch_dr_value",
                    "replay_value",
                ],
            ),
            (
                "Estimators beyond Open Bandit Pipeline 0.4",
                "",
                [
                    "dros_value",
                    "subgaussian_ips_value",
                    "subgaussian_dr_value",
                    "mips_value",
                    "balanced_ipw_value",
                    "slope_value",
                    "betting_interval",
                    "empirical_likelihood_interval",
                    "cascade_dr_value",
                ],
            ),
            (
                "Slate off-policy estimators",
                "",
                ["estimate_slate_value", "uniform_slate_propensities"],
            ),
            ("Model selection", "", ["make_ope_scorer"]),
        ],
    ),
    (
        "skbandit.offpolicy",
        "Learning from logs",
        "Policies learned from logged bandit feedback, by reduction to supervised "
        "learning or by a softmax network trained on an off-policy objective.",
        [
            (
                "Learners",
                "",
                ["DMLearner", "IPWLearner", "DRLearner", "NeuralPolicyLearner"],
            ),
            ("Logs without propensities", "", ["estimate_propensities"]),
            (
                "Warm-starting online policies",
                "",
                ["warm_start_from_logs", "warm_start_weights"],
            ),
            ("Base class", "", ["BaseOffPolicyLearner"]),
        ],
    ),
    (
        "skbandit.serving",
        "Serving",
        "The production loop: the decision log, the learner, the gate and the HTTP "
        "face (the extra ``skbandit[serve]``).",
        [
            (
                "Decisions and learning",
                "",
                ["DecisionLog", "Event", "Learner"],
            ),
            (
                "Evaluation on the log",
                "",
                ["Gate", "GateResult", "apprentice_report", "ApprenticeReport"],
            ),
            ("HTTP", "", ["make_app"]),
            ("Errors", "", ["DuplicateEventError", "UnknownEventError"]),
        ],
    ),
    (
        "skbandit.environments",
        "Environments",
        "Simulated bandits whose expected rewards are known, so that regret is exact.",
        [("Environments", "", [])],
    ),
    (
        "skbandit.datasets",
        "Datasets",
        "Loaders of classification data sets used as bandits. Nothing is downloaded "
        "at run time.",
        [("Loaders", "", [])],
    ),
    (
        "skbandit.pipeline",
        "Pipeline",
        "Pipelines whose last step is a policy.",
        [("Pipeline", "", [])],
    ),
    (
        "skbandit.preprocessing",
        "Preprocessing",
        "Transformers of contexts.",
        [("Transformers", "", [])],
    ),
    (
        "skbandit.base",
        "Base classes",
        "The base class of every policy, its tags and the mixins that set them.",
        [("Base classes", "", [])],
    ),
    (
        "skbandit.policies.base",
        "Family bases",
        "What a new policy builds on: the base of each policy family and its "
        "parameter constraints. A policy is ``class P(FamilyBase, BasePolicy)``; "
        ':doc:`design`\'s "Adding a policy" walks through one.',
        [
            (
                "Family bases",
                "",
                [
                    "LinearPolicyMixin",
                    "KernelPolicyMixin",
                    "LogisticGroupsMixin",
                    "EnsemblePolicyMixin",
                    "BaseEstimatorPolicy",
                    "NeuralPolicy",
                    "SlatePolicyMixin",
                ],
            ),
            (
                "Parameter constraints",
                "",
                ["LINEAR_CONSTRAINTS", "ENSEMBLE_CONSTRAINTS", "SLATE_CONSTRAINTS"],
            ),
        ],
    ),
    (
        "skbandit.exceptions",
        "Exceptions and warnings",
        "",
        [("Exceptions and warnings", "", [])],
    ),
    (
        "skbandit.utils",
        "Utilities",
        "Validation, discovery, the policy checks and the BLAS threads of small work.",
        [
            (
                "Parameter constraints",
                "The types a policy's ``_parameter_constraints`` is written with.",
                ["Interval", "StrOptions", "HasMethods"],
            ),
            ("Validation", "", ["skbandit.utils.validation"]),
            ("Discovery", "", ["skbandit.utils.discovery"]),
            ("Policy checks", "", ["skbandit.utils.estimator_checks"]),
            ("Threads", "", ["skbandit.utils.threads"]),
        ],
    ),
]

#: Public modules whose ``__all__`` the reference covers.
PUBLIC_MODULES = [
    "skbandit.policies",
    "skbandit.networks",
    "skbandit.oracles",
    "skbandit.evaluation",
    "skbandit.offpolicy",
    "skbandit.serving",
    "skbandit.environments",
    "skbandit.datasets",
    "skbandit.pipeline",
    "skbandit.preprocessing",
    "skbandit.base",
    "skbandit.policies.base",
    "skbandit.exceptions",
    "skbandit.utils.validation",
    "skbandit.utils.discovery",
    "skbandit.utils.estimator_checks",
    "skbandit.utils.threads",
]


def public_objects(modname):
    """Return the ``(name, object)`` pairs of a module's ``__all__``."""
    module = importlib.import_module(modname)
    return [(name, getattr(module, name)) for name in module.__all__]


def _entries(modname):
    """The documented ``(qualified name, object)`` pairs under a section module."""
    if modname == "skbandit.utils":
        return [
            (f"{sub}.{name}", obj)
            for sub in PUBLIC_MODULES
            if sub.startswith("skbandit.utils.")
            for name, obj in public_objects(sub)
        ]
    return [(f"{modname}.{name}", obj) for name, obj in public_objects(modname)]


def _matches(rule, qualname, obj):
    name = qualname.rsplit(".", 1)[1]
    if rule == name:
        return True
    if rule.startswith("skbandit.") and qualname.rsplit(".", 1)[0] == rule:
        return True
    if rule.startswith("skbandit.policies._"):  # a family: where the object is defined
        defined = getattr(obj, "__module__", "") or ""
        return defined == rule or defined.startswith(rule + ".")
    if rule.startswith("_"):
        defined = getattr(obj, "__module__", "") or ""
        return defined.rsplit(".", 1)[-1].startswith(rule)
    return False


def render():
    """Return the text of ``api.rst``."""
    out = [
        ".. _api_ref:",
        "",
        "=============",
        "API Reference",
        "=============",
        "",
        "Every public class and function of skbandit, generated from its docstring.",
        "",
    ]
    data = {}
    for modname, title, text, sections in MODULES:
        entries = _entries(modname)
        placed = {q: None for q, _ in entries}
        groups = []
        for section, section_text, rules in sections:
            members = []
            for rule in rules:
                for qual, obj in entries:
                    if placed[qual] is None and _matches(rule, qual, obj):
                        placed[qual] = section
                        members.append((qual, obj))
            groups.append([section, section_text, members])
        rest = [(q, o) for q, o in entries if placed[q] is None]
        if rest and len(groups) > 1:
            groups.append(["More", "", sorted(rest, key=lambda e: e[0])])
        else:
            groups[-1][2].extend(sorted(rest, key=lambda e: e[0]))
        data[modname] = groups
        out += [
            f".. _api_{modname.replace('.', '_')}:",
            "",
            f":mod:`{modname}`: {title}",
            "=" * (len(modname) + len(title) + 9),
            "",
        ]
        out += [f".. py:module:: {modname}", ""]
        if modname == "skbandit.utils":
            out += [
                f".. py:module:: {sub}"
                for sub in PUBLIC_MODULES
                if sub.startswith("skbandit.utils.")
            ] + [""]
        if text:
            out += [text, ""]
        for section, section_text, members in groups:
            if not members:
                continue
            if len(groups) > 1:
                out += [section, "-" * len(section), ""]
            if section_text:
                out += [section_text, ""]
            runs = []
            for qual, _obj in members:
                key = qual.rsplit(".", 1)[0]
                if not runs or runs[-1][0] != key:
                    runs.append((key, []))
                runs[-1][1].append(qual.rsplit(".", 1)[1])
            for module, names in runs:
                out += [
                    f".. currentmodule:: {module}",
                    "",
                    ".. autosummary::",
                    "   :toctree: modules/generated/",
                    "   :nosignatures:",
                    "   :template: object.rst",
                    "",
                ]
                out += [f"   {n}" for n in names] + [""]
    return "\n".join(out) + "\n"


def write(path):
    """Write the page to ``path`` unless it already holds the same text."""
    path = Path(path)
    text = render()
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
