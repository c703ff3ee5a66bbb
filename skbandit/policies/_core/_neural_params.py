"""The parameters of the neural policies, declared once: constraint and description.

scikit-learn needs every policy's ``__init__`` signature written out; the text of
each parameter, its constraint, and the fitted attributes every neural policy has
live here, and each policy's docstring and ``_parameter_constraints`` are filled
from them (``tests/policies/test_neural_params.py`` checks that every signature's
defaults match the text).
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral, Real
from types import MappingProxyType

import torch
from skorch import NeuralNet

from skbandit._docstrings import Substitution, parameter_block
from skbandit.utils._param_validation import Interval, StrOptions

__all__ = [
    "ENSEMBLE_PARAMETERS",
    "LOGISTIC_PARAMETERS",
    "LOGISTIC_TEXTS",
    "NETWORK_PARAMETERS",
    "LOGISTIC_PAPER_SCHEDULE",
    "PAPER_SCHEDULE",
    "neural_constraints",
    "neural_docstring",
]

#: The network, its training and its schedule: every neural policy has these, in
#: this order, after its own parameters.
NETWORK_PARAMETERS = (
    "hidden_layer_sizes",
    "alpha",
    "n_steps",
    "learning_rate",
    "batch_size",
    "reduction",
    "init",
    "mirror_inputs",
    "standardize",
    "module",
    "net",
    "train_every",
    "max_train_rounds",
    "max_buffer_size",
    "warm_start",
    "device",
    "random_state",
    "verbose",
)

#: The same for a batch of networks of the papers' architecture (no custom module).
ENSEMBLE_PARAMETERS = tuple(p for p in NETWORK_PARAMETERS if p not in ("module", "net"))

#: The neural bandit papers' training schedule: after every round, ``n_steps=100``
#: full-batch gradient steps over the whole history, whose cost per round grows
#: with the history (issue 33: 17-89 CPU-seconds per 1,000 rounds). The defaults
#: train ``n_steps`` mini-batches of ``batch_size`` rows drawn from the latest
#: ``max_buffer_size`` rows, every ``train_every`` rounds: a round's cost stays flat.
#: ``NeuralTS(**NeuralTS.PAPER_SCHEDULE)`` runs the papers' schedule (each policy's
#: ``PAPER_SCHEDULE`` is its own paper's).
PAPER_SCHEDULE = MappingProxyType(
    {"train_every": 1, "n_steps": 100, "batch_size": None, "max_buffer_size": None}
)

#: The neural logistic bandits' experiments (and NCBF-UCB's): ``n_steps=100``
#: full-batch steps over the whole history every 50 rounds.
LOGISTIC_PAPER_SCHEDULE = MappingProxyType(
    {"train_every": 50, "n_steps": 100, "batch_size": None, "max_buffer_size": None}
)

_POSITIVE = Interval(Real, 0, None, closed="neither")
_NON_NEGATIVE = Interval(Real, 0, None, closed="left")

CONSTRAINTS = {
    "n_actions": [Interval(Integral, 1, None, closed="left"), None],
    "hidden_layer_sizes": ["array-like", Interval(Integral, 1, None, closed="left")],
    "alpha": [_POSITIVE],
    "n_steps": [Interval(Integral, 0, None, closed="left")],
    "learning_rate": [_NON_NEGATIVE],
    "batch_size": [Interval(Integral, 1, None, closed="left"), None],
    "reduction": [StrOptions({"mean", "sum"})],
    "init": [StrOptions({"ntk", "default", "uniform"})],
    "mirror_inputs": ["boolean", StrOptions({"auto"})],
    "standardize": ["boolean", StrOptions({"auto"})],
    "module": [None, callable, torch.nn.Module],
    "net": [None, NeuralNet],
    "train_every": [Interval(Integral, 1, None, closed="left")],
    "max_train_rounds": [Interval(Integral, 0, None, closed="left"), None],
    "max_buffer_size": [Interval(Integral, 1, None, closed="left"), None],
    "warm_start": ["boolean"],
    "device": [str, torch.device],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
    "nu": [_NON_NEGATIVE],
    "beta": [_NON_NEGATIVE],
    "epsilon": [Interval(Real, 0, 1, closed="both")],
    "covariance": [StrOptions({"diag", "full"})],
    "n_models": [Interval(Integral, 1, None, closed="left")],
    "bootstrap_prob": [Interval(Real, 0, 1, closed="both")],
    "variant": [Interval(Integral, 1, 2, closed="both")],
    "kappa": [Interval(Real, 1, None, closed="left")],
    "norm_bound": [_POSITIVE],
    "delta": [Interval(Real, 0, 1, closed="neither")],
    "confidence": [StrOptions({"practical", "theory"})],
    "gradient": [StrOptions({"current", "init"})],
    "normalize_gradient": ["boolean"],
    "mean": [StrOptions({"network", "linearized"})],
    "variance_weights": [StrOptions({"insertion", "block"})],
    "penalty_center": [StrOptions({"init", "zero"})],
    "perturbation_scale": [_NON_NEGATIVE],
}

#: The parameters of the neural logistic bandits (Bae and Lee, ICML 2025), after
#: ``n_actions`` and before :data:`NETWORK_PARAMETERS`.
LOGISTIC_PARAMETERS = (
    "variant",
    "nu",
    "kappa",
    "norm_bound",
    "delta",
    "confidence",
    "gradient",
    "normalize_gradient",
    "mean",
    "variance_weights",
    "penalty_center",
    "covariance",
)

TEXTS = {
    "n_actions": """
        n_actions : int or None, default=None
            Number of arms; ``None`` infers it in ``fit``.""",
    "hidden_layer_sizes": """
        hidden_layer_sizes : tuple of int, default=(100,)
            Hidden widths ``m`` (depth ``L = len + 1``). The papers use ``(100,)``.""",
    "alpha": """
        alpha : float, default=1.0
            The strength lambda of the proximal penalty
            ``m alpha ||theta - theta_0||^2 / 2`` and, for a policy that keeps the
            tangent-feature precision ``U``, its prior ``U_0 = alpha I`` and the factor
            of ``sigma^2``. Neural Thompson Sampling's grid: 1, 0.1, 0.01, 0.001.""",
    "n_steps": """
        n_steps : int, default=50
            Gradient steps J per training. The papers: 100.""",
    "learning_rate": """
        learning_rate : float, default=1e-3
            The SGD step eta (on the mean loss, see ``reduction``).""",
    "batch_size": """
        batch_size : int or None, default=64
            Rows per gradient step, drawn from the replay buffer without
            replacement (a buffer of at most this many rows trains in full);
            ``None`` is full-batch gradient descent (the papers), whose cost
            grows with the buffer.""",
    "reduction": """
        reduction : {"mean", "sum"}, default="mean"
            ``"sum"`` is the papers' objective (2.3) as printed; ``"mean"`` divides it
            by the number of buffered rows (same minimiser, stable with a fixed
            ``learning_rate``).""",
    "init": """
        init : {"ntk", "default", "uniform"}, default="ntk"
            ``"ntk"``: the papers' network (no biases, ``sqrt(m)`` output scale,
            mirrored init; ``f(x; theta_0) = 0`` on mirrored inputs, see
            ``mirror_inputs``). ``"default"``:
            PyTorch's ``nn.Linear`` layers; then ``phi = g`` and the penalty is
            ``alpha ||theta - theta_0||^2 / 2``. ``"uniform"``: the same without
            biases (the combinatorial neural bandits' code).""",
    "mirror_inputs": """
        mirror_inputs : bool or "auto", default="auto"
            Feed the network ``[x; x] / sqrt(2)`` instead of ``x`` (each context
            vector, each arm's under per-arm contexts), as the papers' analysis
            assumes: with the mirrored initialisation of ``init="ntk"`` the
            network then starts from ``f(x; theta_0) = 0`` for every input,
            unit-norm or not, and the first layer has ``2 d`` inputs. ``"auto"``:
            mirror under ``init="ntk"`` with the papers' network (no ``module`` or
            ``net``), unless the first contexts arrive mirrored already (equal
            halves, as from :class:`~skbandit.preprocessing.MirrorNormalizer`,
            which also normalises). ``False``: ``x`` as it is, the behaviour of
            earlier versions.""",
    "standardize": """
        standardize : bool or "auto", default="auto"
            Standardise the contexts online, before any mirroring, so that raw
            features need no scaler: each feature by the running mean and
            standard deviation of the contexts learned from so far (a learning
            row by those up to its own round). Unscaled features otherwise make
            the first trainings diverge. ``"auto"`` does so; ``False`` reads the
            contexts as given, as the papers' normalised inputs are. See
            :ref:`raw_features`.""",
    "module": """
        module : torch.nn.Module class or instance, default=None
            Your own network instead of the papers' (``hidden_layer_sizes`` and
            ``init`` are then ignored): ``module(X)`` must return every arm's score,
            shape ``(n, K)``, for contexts ``(n, d)`` or ``(n, K, d)``; a class gets
            whichever of ``n_features``, ``n_actions`` its ``__init__`` takes. Its
            tangent features come from ``torch.func`` (slower than the closed form).""",
    "net": """
        net : skorch.NeuralNet, default=None
            A whole skorch net: the policy uses its module (same contract as
            ``module``, with its ``module__*`` settings) and its optimizer (e.g.
            Adam, with its ``optimizer__*`` settings), and nothing else. The policy
            drives the gradient steps over its replay buffer itself, so the net's
            ``lr``, ``max_epochs``, ``batch_size``, ``criterion``, ``callbacks``,
            data loaders, dataset, ``train_split``, ``warm_start`` and ``device``
            would never take effect: setting any of them raises ``ValueError``
            (set ``learning_rate``, ``n_steps``, ``batch_size``, ``warm_start`` and
            ``device`` on the policy). Cloned, never fitted in place.""",
    "train_every": """
        train_every : int, default=10
            Train only when the rounds seen cross a multiple of this (the papers:
            1); the rest of the state (``U``, a posterior) is still updated on
            every feedback. With ``n_steps``, ``batch_size`` and
            ``max_buffer_size``, the defaults keep a round's cost flat as the
            history grows; the class attribute ``PAPER_SCHEDULE`` holds the
            paper's schedule, e.g. ``NeuralTS(**NeuralTS.PAPER_SCHEDULE)``, whose
            cost per round grows with the history.""",
    "max_train_rounds": """
        max_train_rounds : int or None, default=None
            Ignore feedback after this many rounds: the network and the rest of the
            state freeze (Neural Thompson Sampling's experiments stop at 1000).
            ``None`` learns forever.""",
    "max_buffer_size": """
        max_buffer_size : int or None, default=1000
            Keep only the most recent rows in the replay buffer (the network keeps
            what it learnt from older rows through its warm start); ``None`` keeps
            all (the papers), and a round's cost then grows with the history.""",
    "warm_start": """
        warm_start : bool, default=True
            Start each training from the current parameters (practice, and the
            authors' code); ``False`` restarts from ``theta_0`` every time (the
            theory).""",
    "device": """
        device : str, default="cpu"
            Torch device of the network, e.g. ``"cuda"``. Every fitted attribute but
            ``net_`` is a numpy array, so a policy fitted on a GPU loads on a CPU.""",
    "random_state": """
        random_state : int, RandomState instance or None, default=None
            Seeds ``theta_0``, the mini-batches and the policy's draws. Pass an int
            for reproducible output across multiple function calls.""",
    "verbose": """
        verbose : int, default=0
            Print the objective after each training.""",
    "nu": """
        nu : float, default=0.1
            Posterior scale: the sample variance is ``nu^2 sigma^2``. ``nu=0`` is
            greedy.""",
    "beta": """
        beta : float, default=0.1
            The width multiplier gamma of the upper confidence bound. ``beta=0`` is
            greedy.""",
    "epsilon": """
        epsilon : float, default=0.05
            Exploration probability. Neural Thompson Sampling's grid: 0.01, 0.05,
            0.1.""",
    "covariance": """
        covariance : {"diag", "full"}, default="diag"
            ``"diag"``: the inverse of ``U``'s diagonal, what the experiments used.
            ``"full"``: the exact ``U^{-1}`` (``p x p``; small networks only).""",
    "n_models": """
        n_models : int, default=10
            Number of networks. Neural Thompson Sampling's BootstrapNN: 10.""",
    "bootstrap_prob": """
        bootstrap_prob : float, default=0.8
            Probability that a network keeps a round. Neural Thompson Sampling's
            BootstrapNN: 0.8.""",
}

#: The neural logistic bandits' texts: their own parameters, and the network
#: parameters whose defaults are the experiments' (m = 20, lr 0.01, every 50 rounds).
LOGISTIC_TEXTS = {
    **TEXTS,
    "variant": """
        variant : {1, 2}, default=2
            ``1``: NeuralLog-UCB-1 / TS-1, the unweighted design matrix
            ``V = sum g g^T + kappa lambda I`` and (UCB) a bonus in probability
            space, ``mu(f) + nu R sqrt(kappa) w ||g||_{V^-1}``. ``2``: NeuralLog-UCB-2
            / TS-2, the variance-weighted ``W = sum mu'(f(x_i; theta_i)) g g^T +
            lambda I`` (each weight frozen when its round is added) and a bonus in
            logit space, ``f + nu w ||g||_{W^-1}``, free of ``kappa``.""",
    "nu": """
        nu : float or None, default=None
            The exploration multiplier of the experiments: the width ``w_t`` of the
            confidence set is multiplied by it. ``None``: 1e-3 (UCB) or 1e-4 (TS),
            where the defaults learn: ``w_t`` with absolute constants 1 is in the
            hundreds (the diagonal effective dimension of every parameter, and
            ``log(4 t^2 / delta)``), so the paper's grid 0.01, 0.1, 1, 10, 100
            explores for thousands of rounds. ``nu=0`` is greedy.""",
    "kappa": """
        kappa : float, default=10.0
            ``kappa``, the inverse of the smallest reward variance ``mu'``, a
            hyperparameter as in the experiments (10; 50 on the Open Bandit
            Dataset). Variant 2 does not use it.""",
    "norm_bound": """
        norm_bound : float, default=1.0
            ``S``, the bound on ``sqrt(m) ||theta* - theta_0||``; it enters the
            width through ``1 + sqrt(L) S + L S^2`` (and ``lambda_t`` under
            ``confidence="theory"``). The experiments: 1.""",
    "delta": """
        delta : float, default=0.05
            Confidence level ``delta`` of the width's ``log(4 t^2 / delta)`` (not
            reported for the experiments).""",
    "confidence": """
        confidence : {"practical", "theory"}, default="practical"
            ``"practical"``, what the experiments ran: a fixed ``lambda = alpha``,
            absolute constants 1, ``w_t = (1 + sqrt(L) S + L S^2) iota_t + 1`` with
            ``iota_t = sqrt(d_t l_t) + sqrt(L / lambda) l_t``,
            ``l_t = log(4 max(t, 1)^2 / delta)`` and the effective dimension
            ``d_t = log det(I + R sum g g^T / lambda)``. ``"theory"``: Eqs. (1)-(4)
            with ``C_1 = C_6 = C_7 = 1``: ``lambda_0 = 8 sqrt(2 L) log(4 / delta) /
            S``, the adaptive ``lambda_t`` of Eq. (3) (kept non-decreasing and at
            least ``lambda_0``) as the penalty and the matrices' regulariser,
            ``A_t = log det(I + R sum g g^T / lambda_0)`` and
            ``iota_t = 16 sqrt(A_t l_t) + 8 sqrt(L / lambda_0) l_t``. It is a
            preset: ``gradient``, ``normalize_gradient``, ``mean`` and
            ``warm_start`` left at None take its values (``"theory"``: ``"init"``,
            True, ``"linearized"``, False, i.e. Algorithms 1-2 restarted from
            ``theta_0`` at every training; ``"practical"``: ``"current"``, True,
            ``"network"``, True); set one to mix the two forms.""",
    "gradient": """
        gradient : {"current", "init"} or None, default=None
            The gradient features ``g(x; theta)`` of the bonus and the matrices:
            at the current parameters (the experiments) or at ``theta_0`` (the
            theory; None follows ``confidence``). A round enters the matrices with
            the gradient it was selected with.""",
    "normalize_gradient": """
        normalize_gradient : bool or None, default=None
            Use ``g / sqrt(m)`` rather than ``g`` in the bonus, the matrices and the
            effective dimension (None: True). The theory divides by ``sqrt(m)``; the
            experiments drop it on a network without the ``sqrt(m)`` output scale,
            whose gradients are those of this ``init="ntk"`` network divided by
            ``sqrt(m)``, so True is the experiments' units too (and keeps ``nu``'s
            scale when ``m`` changes). ``False`` multiplies the bonus by about
            ``sqrt(m)``, what this package ran before 0.3.""",
    "mean": """
        mean : {"network", "linearized"} or None, default=None
            Variant 2's estimate of the logit: the network ``f(x; theta)`` (the
            experiments' natural reading) or the theory's linearisation
            ``g(x; theta_0)^T (theta - theta_0)``; None follows ``confidence``.
            Variant 1 always uses ``f``.""",
    "variance_weights": """
        variance_weights : {"insertion", "block"}, default="block"
            When variant 2 weighs a round by ``mu'(f(x_i; theta_i))``: with those
            of the training that closes the round's block of ``train_every``
            rounds (the round waits outside ``W`` until then; the estimate has
            seen the round, as ECOLog's weights have), or, ``"insertion"``, with
            the parameters in force after that round's update (the algorithm box
            read literally: under ``train_every=50``, the last training's, stale
            for 49 rounds of 50). Never recomputed later.""",
    "penalty_center": """
        penalty_center : {"init", "zero"} or None, default=None
            Centre of the training's penalty ``m lambda ||theta - c||^2 / 2``:
            ``"init"``, ``c = theta_0`` (TrainNN's proximal term, the theory), or
            ``"zero"``, weight decay towards the origin (Section 7's practical
            ``lambda ||theta||^2``, what the experiments ran; the strength keeps
            ``alpha``'s units). None follows ``confidence`` (``"practical"``:
            ``"zero"``; ``"theory"``: ``"init"``). A restart
            (``warm_start=False``) starts from ``theta_0`` either way.""",
    "hidden_layer_sizes": """
        hidden_layer_sizes : tuple of int, default=(20,)
            Hidden widths ``m`` (depth ``L = len + 1``). The experiments: one layer
            of ``m = 20``.""",
    "learning_rate": """
        learning_rate : float, default=0.01
            The gradient-descent step eta (on the mean loss, see ``reduction``).
            The experiments: 0.01.""",
    "train_every": """
        train_every : int, default=50
            Train only when the rounds seen cross a multiple of this (the
            experiments: every 50 rounds); the matrices and the width are updated
            on every feedback. The defaults train on mini-batches of a bounded
            buffer (``batch_size``, ``max_buffer_size``), so that a round's cost
            stays flat as the history grows; the class attribute
            ``PAPER_SCHEDULE`` holds the experiments' full-batch schedule over the
            whole history, e.g. ``NeuralLogUCB(**NeuralLogUCB.PAPER_SCHEDULE)``.""",
    "n_steps": """
        n_steps : int, default=100
            Gradient steps per training. The experiments: 100.""",
    "warm_start": """
        warm_start : bool or None, default=None
            Start each training from the current parameters (practice) or, False,
            from ``theta_0`` (the theory's TrainNN); None follows
            ``confidence``.""",
    "alpha": """
        alpha : float, default=1.0
            ``lambda``: the penalty ``m lambda ||theta - theta_0||^2 / 2`` (for
            the papers' network; ``lambda ||theta - theta_0||^2 / 2`` under
            ``init="default"``) and the matrices' regulariser (``kappa lambda`` for
            variant 1). The paper's grid: 0.01, 0.1, 1, 10, 100. Replaced by
            ``lambda_t`` under ``confidence="theory"``.""",
}

ATTRIBUTES = """
net_ : skorch.NeuralNetRegressor
    The network (``net_.module_``), its optimizer and device.
theta0_ : ndarray of shape (n_parameters_,)
    The initial parameters, centre of the penalty.
n_parameters_ : int
    ``p``, the number of network parameters.
n_trainings_ : int
    Trainings run so far.
n_actions_ : int
    Number of arms.
n_features_in_ : int
    Number of context features.
n_samples_seen_ : int
    Rounds of feedback seen.
action_counts_ : ndarray of shape (n_actions_,)
    Feedback rounds per arm.
"""


def estimator_check_params(**params):
    """Parameters of the estimator checks: ``params`` on a network the checks can run.

    Two gradient steps of a four-unit layer unless ``params`` say otherwise; a tiny
    learning rate, since scikit-learn's checks feed contexts near ``N(100, 1)``; no
    mirroring, since an untrained mirrored network scores float32 rounding noise
    around 0, which the checks' batch invariances cannot compare (the mirrored path
    has its own tests, test_neural_mirror.py); no online standardisation, whose
    prequential moments depend on the order of the rows that the checks shuffle
    and batch (tested in test_standardize.py and test_raw_features_learn.py).
    """
    network = {"hidden_layer_sizes": (4,), "n_steps": 2, "learning_rate": 1e-6}
    return {**network, "mirror_inputs": False, "standardize": False, **params}


def neural_constraints(*names):
    """``_parameter_constraints`` of a policy with these parameters."""
    return {name: CONSTRAINTS[name] for name in names}


def neural_docstring(*own, shared=NETWORK_PARAMETERS, texts=None):
    """Fill ``%(parameters)s`` (``n_actions``, the policy's ``own`` parameters and the
    ``shared`` ones) and ``%(attributes)s`` of a neural policy; ``texts`` replaces
    the description of a parameter whose meaning is the policy's own."""
    names = ("n_actions", *own, *shared)
    block = parameter_block({**TEXTS, **(texts or {})}, names)
    return Substitution(parameters=block, attributes=ATTRIBUTES)
