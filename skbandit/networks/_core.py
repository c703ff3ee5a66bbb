"""The network core of every neural policy: one trained network and what it learns from.

:class:`NetworkCore` owns what the neural policies share:

- the skorch net (``net.module_``, its optimizer, its device) and ``theta_0``, the
  start of every restart and, by default, the centre of the proximal penalty (a
  policy may centre it at zero instead: plain weight decay);
- the replay buffer: one row per observed reward (a slate gives several per round),
  with the pulled arm, its target(s) and weight(s); per-member targets and weights
  (perturbed rewards, bootstrap masks) for a batch of networks;
- the schedule: ``train_every`` and ``max_train_rounds``
  (:mod:`skbandit._base._schedule`) and ``max_buffer_size``;
- the loss (squared error or binary cross-entropy) and the gradient steps (full batch
  or mini-batches, warm start or restart from ``theta_0``);
- commit and rollback: a failed update restores the parameters, the optimizer state
  and the mini-batch RNG, and the buffer is replaced only on success.

A policy calls :meth:`NetworkCore.update` with its rows and two optional hooks, run at
the parameters before training (NeuralUCB's ``U`` update) and after it (NeuralTS's);
their results are handed back so that the policy commits them together with the core.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import copy
import warnings

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from skorch.utils import to_numpy, to_tensor

from skbandit._base._schedule import learnable_rows, training_due
from skbandit.exceptions import NumericalError
from skbandit.networks import _training
from skbandit.networks._buffer import ReplayBuffer
from skbandit.networks._deferred import AfterTraining, deferred_checks
from skbandit.networks._device_buffer import DeviceReplay
from skbandit.networks._ensemble import StackedBanditMLP, ensemble_gradient_descent
from skbandit.networks._mlp import LogisticLoss
from skbandit.networks._settings import TrainingSettings, check_device
from skbandit.networks._training import (
    get_flat_parameters,
    proximal_gradient_descent,
    set_flat_parameters,
)

__all__ = ["NetworkCore", "ReplayBuffer", "TrainingSettings", "check_device"]

_NO_OBJECTIVE = object()  # last_objective of a core not trained yet (no attribute)
DIVERGENCE_RETRIES = 4  # a diverged training is redone at half the step, to lr / 16


class NetworkCore:
    """One neural policy's network, replay buffer, schedule and training.

    Parameters
    ----------
    net : skorch.NeuralNet
        The initialised net (its module, optimizer, criterion and device).
    n_features : int
        Length of a buffered row.
    per_arm : bool
        Whether the contexts are per-arm, ``(n, K, d)``: a buffered row is then
        scored as the only arm of a ``(1, 1, d)`` context.
    train_seed : int
        Seed of the mini-batch RNG.

    Attributes
    ----------
    theta0 : ndarray of shape (n_parameters,)
        The initial parameters, centre of the penalty.
    buffer : ReplayBuffer
        The committed rows.
    train_rng : numpy.random.Generator
        Draws the mini-batches.
    n_trainings : int
        Trainings run so far.

    Examples
    --------
    >>> import numpy as np
    >>> from skbandit.networks import initialize_net, make_bandit_net
    >>> from skbandit.networks._core import NetworkCore, TrainingSettings
    >>> net = initialize_net(make_bandit_net(4, 2, hidden_layer_sizes=(6,)), seed=0)
    >>> core = NetworkCore(net, n_features=4, per_arm=False, train_seed=0)
    >>> settings = TrainingSettings(1.0, 1e-2, 5, None, "mean", True, 1, None, None)
    >>> rows = (np.ones((3, 4)), np.array([0, 1, 0]), np.ones(3), np.ones(3))
    >>> _, _, trained = core.update(rows, n_seen=0, n_rounds=3, settings=settings)
    >>> trained, len(core.buffer), core.n_trainings
    (True, 3, 1)
    """

    def __init__(self, net, *, n_features, per_arm, train_seed):
        self.net = net
        self.per_arm = per_arm
        self.theta0 = to_numpy(get_flat_parameters(net.module_))
        self.buffer = ReplayBuffer.empty(n_features)
        self.train_rng = np.random.default_rng(train_seed)
        self.n_trainings = 0
        self._device_theta0 = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_device_theta0"] = None  # device tensors: rebuilt on demand
        state.pop("_device_rows", None)  # the buffer's rows on the device: likewise
        state.pop("_device_placement", None)  # a cache of device(): rebuilt on demand
        return state

    # ----------------------------------------------------------------- device
    def device(self, wanted):
        """Compute on a device, moving the net there if it is elsewhere.

        A policy asking for CUDA on a machine without it (a GPU-fitted pickle loaded
        on a CPU server, which skorch maps to the CPU) computes on the CPU.

        Parameters
        ----------
        wanted : str or torch.device
            The policy's ``device``.

        Returns
        -------
        device : torch.device
            Where the network now is.
        """
        module = self.net.module_
        # Asked several times a round: the answer is kept while the policy asks for
        # the same device and the module's first parameter is still there.
        placement = self.__dict__.get("_device_placement")
        if placement is not None and placement[0] is module and placement[1] == wanted:
            if placement[2].device == placement[3]:
                return placement[3]
        asked, wanted = wanted, check_device(wanted, cpu_fallback=True)
        if next(module.parameters()).device != wanted:
            module.to(wanted)
            for state in self.net.optimizer_.state.values():
                for key, value in state.items():
                    if isinstance(value, torch.Tensor):
                        state[key] = value.to(wanted)
            self.net.device = str(wanted)
            self._device_theta0 = None
        self._device_placement = (module, asked, next(module.parameters()), wanted)
        return wanted

    @property
    def current_device(self):
        """The device the module's parameters are on."""
        placement = self.__dict__.get("_device_placement")
        if placement is not None and placement[0] is self.net.module_:
            return placement[2].device
        return next(self.net.module_.parameters()).device

    def tensor(self, X):
        """A copy of the array ``X`` as a tensor on the module's device."""
        return to_tensor(np.ascontiguousarray(X), device=self.current_device)

    def theta0_tensors(self):
        """Give ``theta_0`` on the device, one tensor per parameter.

        Returns
        -------
        theta0 : list of torch.Tensor
            Kept between calls: ``theta_0`` never changes.
        """
        if self._device_theta0 is None:
            params = list(self.net.module_.parameters())
            sizes = np.cumsum([p.numel() for p in params])[:-1]
            self._device_theta0 = [
                self.tensor(t).view_as(p)
                for t, p in zip(np.split(self.theta0, sizes), params, strict=True)
            ]
        params = list(self.net.module_.parameters())
        if any(
            t.stride() != p.stride()
            for t, p in zip(self._device_theta0, params, strict=True)
        ):  # laid out as the parameters (a disjoint first layer blocks first), so
            # that theta - theta_0 runs over both in order
            self._device_theta0 = [
                torch.empty_like(p).copy_(t)
                for t, p in zip(self._device_theta0, params, strict=True)
            ]
        return self._device_theta0

    # --------------------------------------------------------------- schedule
    @staticmethod
    def learnable_rounds(n_seen, n_new, settings):
        """Count the new rounds learnt from under ``max_train_rounds``.

        Parameters
        ----------
        n_seen : int
            Rounds learnt from so far.
        n_new : int
            New rounds.
        settings : TrainingSettings
            The policy's parameters.

        Returns
        -------
        n : int
            How many of the new rounds count.
        """
        return learnable_rows(n_seen, n_new, settings.max_train_rounds)

    # ------------------------------------------------------- commit / rollback
    def checkpoint(self):
        """Save everything an update changes (the rollback protocol).

        Returns
        -------
        undo : callable
            Restores the parameters, the optimizer state, the mini-batch RNG state,
            the last training objective, the optimizer's group settings, the replay
            buffer and the training count; callable again to restore the same state
            (the retries of a diverged training).
        """
        saved, buffer, n_trainings = self._saved_state(), self.buffer, self.n_trainings
        replay = self.__dict__.get("_device_rows")
        replay = None if replay is None else replay.state()

        def undo():
            self._restore(saved)
            self.buffer, self.n_trainings = buffer, n_trainings
            if replay is None:  # none then: made (and grown) since, dropped
                self.__dict__.pop("_device_rows", None)
            else:
                self._device_replay().restore(replay)

        return undo

    def _saved_state(self):
        """The parameters, the optimizer state (``None`` when it has none), the
        mini-batch RNG state, the last training objective and the group settings."""
        optimizer = self.net.optimizer_
        return (
            # One copy per parameter, in its own memory layout (a disjoint first
            # layer is stored blocks first): no gather into a flat vector.
            [p.detach().clone() for p in self.net.module_.parameters()],
            # Plain SGD keeps no state: nothing to deep-copy but the groups.
            copy.deepcopy(optimizer.state_dict()) if optimizer.state else None,
            self.train_rng.bit_generator.state,
            self.__dict__.get("last_objective", _NO_OBJECTIVE),
            [dict(group) for group in optimizer.param_groups],
        )

    def _restore_optimizer(self, optimizer_state):
        """Load a saved optimizer state, keeping each group's key order."""
        optimizer = self.net.optimizer_
        orders = [list(group) for group in optimizer.param_groups]
        # A copy: the optimizer adopts the tensors it loads and then steps them in
        # place, and a checkpoint may serve several rollbacks (the retries).
        optimizer.load_state_dict(copy.deepcopy(optimizer_state))
        for group, order in zip(optimizer.param_groups, orders, strict=True):
            # torch moves "params" last: keep the key order, so that a rolled-back
            # policy pickles to the very bytes it pickled to before the call
            items = [(key, group[key]) for key in order]
            group.clear()
            group.update(items)

    def _restore_groups(self, groups):
        """Put back the optimizer's group settings (a training sets ``lr``)."""
        for group, saved in zip(self.net.optimizer_.param_groups, groups, strict=True):
            group.clear()
            group.update(saved)

    def _restore(self, saved):
        """Put back what :meth:`_saved_state` saved."""
        theta, optimizer_state, rng_state, objective, optimizer_groups = saved
        if objective is _NO_OBJECTIVE:  # not trained yet: no attribute, as before
            self.__dict__.pop("last_objective", None)
        else:
            self.last_objective = objective
        with torch.no_grad():
            for p, saved in zip(self.net.module_.parameters(), theta, strict=True):
                p.copy_(saved)
        if optimizer_state is None:  # stateless at the checkpoint: stateless again
            self.net.optimizer_.state.clear()
            self._restore_groups(optimizer_groups)
        else:
            self._restore_optimizer(optimizer_state)
        self.train_rng.bit_generator.state = rng_state

    # --------------------------------------------------------------- updating
    def update(
        self,
        rows,
        *,
        n_seen,
        n_rounds,
        settings,
        before=None,
        after=None,
        due=None,
        targets=None,
    ):
        """Run one delayed-feedback update: buffer the rows, train if due, run hooks.

        Everything is rolled back if anything raises; on success the buffer is
        committed and the caller commits the hooks' results.

        Parameters
        ----------
        rows : tuple of ndarray
            ``(X, actions, targets, weights)`` of the new rows.
        n_seen : int
            Rounds the policy had learnt from before this update.
        n_rounds : int
            Rounds these rows belong to (the schedule counts rounds, not rows).
        settings : TrainingSettings
            The policy's current parameters.
        before, after : callable or None
            Called at the parameters before training (without arguments) and after
            it (with the grown buffer, not yet committed).
        due : bool or None, default=None
            Whether to train; ``None`` follows ``settings.train_every`` (a policy
            with a warm-up buffers its first rounds without training).
        targets : callable or None, default=None
            Maps the grown buffer to the targets this training fits, instead of
            the stored ones (perturbed-history exploration redraws its noise at
            every training; the buffer keeps the rewards).

        Returns
        -------
        before_result : object
            What ``before`` returned (``None`` without it).
        after_result : object
            What ``after`` returned (``None`` without it).
        trained : bool
            Whether the network was trained.
        """
        undo = self.checkpoint()
        try:
            with deferred_checks() as early:  # read with the training's values
                first = before() if before is not None else None
            buffer = self.buffer.extended(*rows, max_size=settings.max_buffer_size)
            if self.current_device.type not in _training.HOST_DEVICES:
                self._device_replay().grown(self.buffer, buffer, len(rows[0]))
            trained = (
                training_due(n_seen, n_rounds, settings.train_every)
                if due is None
                else bool(due)
            )
            # run at the trained parameters; a device reads its checks, and
            # before's, with the training's values (one wait)
            hook = None
            if after is not None or early:
                hook = AfterTraining(after, buffer, early)
            if trained:
                fitted = {} if targets is None else {"targets": targets(buffer)}
                if hook is not None:
                    fitted["after"] = hook
                # train() starts from this state: it reuses the undo
                self._update_checkpoint = undo
                self.last_objective = self.train(buffer, settings, **fitted)
            second = hook.result() if hook is not None else None
        except BaseException:
            undo()
            raise
        finally:
            self.__dict__.pop("_update_checkpoint", None)
        self.buffer = buffer  # nothing can fail past this point: commit
        self.n_trainings += int(trained)
        return first, second, trained

    def train(self, buffer, settings, targets=None, after=None):
        """Run the gradient steps of the proximal objective over a buffer.

        A diverged training is redone from its start at half the step (the papers'
        step stays wherever it is stable), at most ``DIVERGENCE_RETRIES`` times, with
        a ``ConvergenceWarning``; the caller restores the parameters if it raises.

        Parameters
        ----------
        buffer : ReplayBuffer
            The rows to train on.
        settings : TrainingSettings
            Steps, step size, penalty, reduction, warm start.
        targets : ndarray of shape (n_rows,) or (n_rows, n_members), default=None
            The targets to fit; ``None`` fits ``buffer.targets``.
        after : AfterTraining or None, default=None
            The update's hook at the trained parameters, which a device's training
            runs before it reads its values (:mod:`skbandit.networks._deferred`).

        Returns
        -------
        objective : float or ndarray
            The objective after the last step (one per member for a batch).
        """
        rate = settings.learning_rate
        # One undo serves every retry. Within update() that is update's own
        # checkpoint (the parameters are not copied twice).
        start = self.__dict__.get("_update_checkpoint") or self.checkpoint()
        for retry in range(DIVERGENCE_RETRIES + 1):
            try:
                if after is not None:  # run again at this attempt's parameters
                    after.reset()
                objective = self._descend(buffer, settings, rate, targets, after)
                break
            except NumericalError:
                if retry == DIVERGENCE_RETRIES:
                    raise
                start()
                rate /= 2
        if rate != settings.learning_rate:
            warnings.warn(
                f"Training diverged at learning_rate={settings.learning_rate:g} and "
                f"was redone at {rate:g}; lower learning_rate, or bound the rows' "
                "norms (e.g. sklearn.preprocessing.Normalizer).",
                ConvergenceWarning,
                stacklevel=2,
            )
        return objective

    def _descend(self, buffer, settings, learning_rate, targets, after=None):
        net = self.net
        # set_params changed since the last training take effect now, written in
        # place: skorch's net.set_params(lr=...) would re-initialise the optimizer
        # and lose its state (Adam's moments). The param groups are the truth (a
        # rollback restores them); net.lr follows for whoever reads it.
        for group in net.optimizer_.param_groups:
            group["lr"] = learning_rate
        net.lr = settings.learning_rate  # a halved retry is for this training only
        net.criterion_.reduction = settings.reduction
        net.criterion__reduction = settings.reduction  # what a re-initialisation reads
        module = net.module_
        theta0 = self.theta0_tensors()
        if not settings.warm_start:  # restart from theta_0, as the theory does
            set_flat_parameters(module, torch.cat([t.reshape(-1) for t in theta0]))
        centre = theta0
        if settings.penalty_center == "zero":
            # The proximal step W <- lerp(W, centre, lr c) - lr grad towards zero
            # is plain weight decay; the restart above still starts at theta_0.
            centre = [torch.zeros_like(t) for t in theta0]
        stacked = isinstance(module, StackedBanditMLP)
        X, actions, y, w = self._training_tensors(buffer, settings, targets, stacked)
        on_host = X.device.type in _training.HOST_DEVICES  # layouts sent staged
        staging = None if on_host else self._device_replay().staging
        if self.per_arm:
            # The buffer keeps the pulled arm's vector only: present it as the one
            # arm of an (n, 1, d) context, so any module scores it as in select.
            X, actions = X[:, None, :], torch.zeros_like(actions)
        if stacked:  # a batch of networks, one computation
            return ensemble_gradient_descent(
                module,
                X,
                actions,
                y,
                w,
                centre,
                alpha=float(settings.alpha),
                learning_rate=learning_rate,
                n_steps=settings.n_steps,
                batch_size=settings.batch_size,
                rng=self.train_rng,
                loss="bce" if isinstance(net.criterion_, LogisticLoss) else "squared",
                reduction=settings.reduction,
                host_actions=None if self.per_arm else buffer.actions,
                staging=staging,
            )
        return proximal_gradient_descent(
            net,
            X,
            actions,
            y,
            w,
            centre,
            alpha=float(settings.alpha),
            n_steps=settings.n_steps,
            batch_size=settings.batch_size,
            rng=self.train_rng,
            host_actions=None if self.per_arm else buffer.actions,
            after=after,
            staging=staging,
        )

    def _training_tensors(self, buffer, settings, targets, stacked):
        """``(X, actions, targets, weights)`` of a training on the module's device:
        targets and weights transposed for a batch of networks, weights None when
        all are 1 (checked on the host). On a device the buffer's rows are kept
        there between trainings (:class:`DeviceReplay`): only new rows are sent."""
        device = self.current_device
        unweighted = bool(np.all(buffer.weights == 1))
        kept = None
        if device.type not in _training.HOST_DEVICES:
            kept = self._device_replay().rows(buffer, device, settings.max_buffer_size)
        if kept is not None:
            X, actions, y, w = kept
            if stacked:
                # per-member values (M, n) are kept as (n, M) rows; shared ones (n,)
                y = y.T.contiguous() if y.ndim == 2 else y
                w = None if unweighted else (w.T.contiguous() if w.ndim == 2 else w)
        else:  # a fresh copy (on the CPU, the buffer's own memory)
            X = self.tensor(buffer.X)
            actions = torch.as_tensor(buffer.actions, device=device)
            y = (
                None
                if targets is not None
                else self._host_tensor(buffer.targets, stacked)
            )
            w = None if unweighted else self._host_tensor(buffer.weights, stacked)
        if targets is not None:  # targets of this training only: from the host
            y = self._host_tensor(targets, stacked)
        return X, actions, y, None if unweighted else w

    def _host_tensor(self, values, stacked):
        """Per-row (or row and member) values as a float32 tensor on the device."""
        values = np.asarray(values, np.float32)
        return self.tensor(values.T if stacked else values)

    def _device_replay(self):
        """The buffer's rows kept on the device (made on demand: not pickled)."""
        replay = self.__dict__.get("_device_rows")
        if replay is None:
            replay = self._device_rows = DeviceReplay()
        return replay
