"""The HTTP face of the loop: FastAPI on uvicorn (the extra ``skbandit[serve]``).

``POST /rank`` decides and logs, ``POST /reward`` joins a reward, ``POST /activate``
activates a deferred event, ``GET /health`` and ``GET /status`` report; FastAPI
serves its OpenAPI schema at ``/openapi.json`` and the interactive docs at
``/docs``. A request is validated in full before the policy sees it: a rejected
request (4xx) logs nothing and leaves the policy as it was. One policy object
serves every request: a lock, shared with the learner's thread, guards it.

The deciding routes are ``async``: a decision is short (the policy's ``select`` and
one SQLite commit), and running it on the event loop saves the hop to a worker
thread and back that a plain ``def`` route costs. While the learner's thread holds
the lock (a ``partial_fit``, a checkpoint), decisions wait for it.
"""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import json
import math
import threading
from contextlib import asynccontextmanager
from typing import Annotated

import numpy as np
from fastapi import FastAPI, HTTPException
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from skbandit.serving._events import (
    DuplicateEventError,
    UnknownEventError,
    final_step,
)

__all__ = ["make_app"]

FiniteFloat = Annotated[float, Field(strict=True, allow_inf_nan=False)]
Arm = Annotated[int, Field(strict=True, ge=0)]
Probability = Annotated[float, Field(strict=True, gt=0, le=1)]
EventId = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[ -~]+$")]
_STRICT = ConfigDict(extra="forbid", strict=True)


class RankRequest(BaseModel):
    """One round to decide."""

    model_config = _STRICT
    context: list[FiniteFloat] | list[list[FiniteFloat]] = Field(
        min_length=1,
        description="The round's context: n_features numbers, or n_actions lists of "
        "n_features numbers (per-arm contexts).",
    )
    available_actions: list[Arm] | None = Field(
        None, min_length=1, description="Arms available in this round (all if absent)."
    )
    event_id: EventId | None = Field(
        None, description="The id rewards will name; generated if absent."
    )
    learn: bool = Field(
        True, description="False: log without learning until /activate (deferred)."
    )
    caller_action: Arm | list[Arm] | None = Field(
        None, description="Apprentice mode: the arm (slate) the caller played."
    )
    caller_propensity: Probability | list[Probability] | None = Field(
        None,
        description="Apprentice mode: the caller's probability of it (1 if absent).",
    )


class RankResponse(BaseModel):
    """The decision, as logged."""

    event_id: str
    action: int | list[int]
    probability: float | list[float]
    policy_version: str
    policy_action: int | list[int] | None = None
    policy_probability: float | list[float] | None = None


class RewardRequest(BaseModel):
    """A reward for a logged decision."""

    model_config = _STRICT
    event_id: EventId
    value: FiniteFloat | list[FiniteFloat | None] = Field(
        description="The reward; a slate's: one per position, null where unobserved."
    )


class RewardResponse(BaseModel):
    """Whether the reward came in time."""

    event_id: str
    late: bool


class EventRequest(BaseModel):
    """An event id."""

    model_config = _STRICT
    event_id: EventId


def _error(status: int, field: str, message: str):
    """An HTTPException whose detail names the field, as FastAPI's own 422s do."""
    return HTTPException(
        status,
        detail=[{"loc": ["body", field], "msg": message, "type": "value_error"}],
    )


def _plain(value):
    return value.tolist() if isinstance(value, np.ndarray) else value


async def _validation_error(request, exc: RequestValidationError):
    """422 with one readable line naming the field; the input is not echoed back."""
    errors = [
        {
            "loc": [p for p in e["loc"] if not str(p).startswith(("list[", "float"))],
            "msg": e["msg"],
            "type": e["type"],
        }
        for e in exc.errors()
    ]
    first = errors[0] if errors else {"loc": ["body"], "msg": "invalid request"}
    where = ".".join(str(p) for p in first["loc"][1:]) or "body"
    if first.get("type") == "json_invalid":  # its loc is the character's position
        where = f"body (character {where})"
    return JSONResponse(
        status_code=422,
        content={"detail": errors, "message": f"{where}: {first['msg']}"},
    )


class _BodyLimit:
    """ASGI middleware: a POST must say its length, at most ``limit`` bytes."""

    def __init__(self, app, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "POST":
            headers = dict(scope["headers"])
            length = headers.get(b"content-length")
            status, text = None, None
            if length is None:
                status, text = 411, "a Content-Length header is required"
            elif not length.isdigit() or int(length) > self.limit:
                status, text = 413, f"the body must be at most {self.limit} bytes"
            if status is not None:
                body = json.dumps({"detail": text, "message": f"body: {text}"})
                await send(
                    {
                        "type": "http.response.start",
                        "status": status,
                        "headers": [(b"content-type", b"application/json")],
                    }
                )
                await send({"type": "http.response.body", "body": body.encode()})
                return
        await self.app(scope, receive, send)


def _shape_errors(policy, context: np.ndarray) -> str | None:
    """What is wrong with the context's shape for this policy, or None."""
    n_features = getattr(policy, "n_features_in_", None)
    final = final_step(policy)
    n_actions = getattr(final, "n_actions_", None)
    if context.ndim == 1 and n_features is not None and context.size != n_features:
        return f"expected {n_features} numbers, got {context.size}"
    if context.ndim == 2 and n_actions is not None and context.shape[0] != n_actions:
        return f"per-arm contexts need {n_actions} rows, got {context.shape[0]}"
    return None


def _mask(policy, available, context) -> np.ndarray | None:
    """The mask of ``available_actions``; the arms counted by the policy, or, before
    it has learned, by the rows of per-arm contexts."""
    if available is None:
        return None
    final = final_step(policy)
    n_actions = getattr(final, "n_actions_", None) or getattr(final, "n_actions", None)
    if n_actions is None and context.ndim == 2:
        n_actions = context.shape[0]
    if n_actions is None:
        raise _error(
            422,
            "available_actions",
            "the policy does not know its number of arms "
            "yet: set its n_actions, or fit it, before serving it",
        )
    if len(set(available)) != len(available):
        raise _error(422, "available_actions", "arms must not repeat")
    unknown = sorted(a for a in available if a >= n_actions)
    if unknown:
        raise _error(
            422,
            "available_actions",
            f"unknown arms {unknown[:10]}: the policy has "
            f"{n_actions} arms, 0 to {n_actions - 1}",
        )
    mask = np.zeros(n_actions, dtype=bool)
    mask[available] = True
    return mask


class _LearningThread:
    """Runs ``learner.step()`` every ``every`` seconds until stopped."""

    def __init__(self, learner, every: float):
        self.learner, self.every = learner, every
        self.last_error = None
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, daemon=True, name="skbandit-learner"
        )

    def _run(self):
        while not self._stop.wait(self.every):
            try:
                self.learner.step()
                self.last_error = None
            except Exception as exc:  # reported in /status; the server serves on
                self.last_error = f"{type(exc).__name__}: {exc}"

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join()


def make_app(policy, log, *, learner=None, learn_every=None, max_body_bytes=1_000_000):
    """The FastAPI application that serves ``policy`` and logs into ``log``.

    Read more in the :ref:`User Guide <running_the_loop>`.

    Parameters
    ----------
    policy : policy or BanditPipeline
        The policy that decides; the learner's, when one is given.
    log : DecisionLog
        Where decisions and rewards are written.
    learner : Learner, default=None
        Learns from the log; its lock guards the policy for every request.
    learn_every : float, default=None
        Seconds between two ``learner.step()`` calls in a background thread
        (None: the server does not learn; call the learner yourself).
    max_body_bytes : int, default=1_000_000
        Larger requests get 413; a POST without a Content-Length gets 411.

    Returns
    -------
    app : fastapi.FastAPI
        Run it with ``uvicorn.run(app, host="127.0.0.1", port=8000)``.

    See Also
    --------
    DecisionLog : The log the routes write to.

    Examples
    --------
    >>> import os, tempfile
    >>> from skbandit.policies import LinUCB
    >>> from skbandit.serving import DecisionLog, make_app
    >>> log = DecisionLog(os.path.join(tempfile.mkdtemp(), "d.sqlite"))
    >>> app = make_app(LinUCB(n_actions=2), log)
    >>> sorted(r.path for r in app.routes if r.path in ("/rank", "/reward"))
    ['/rank', '/reward']
    """
    lock = learner.lock if learner is not None else threading.RLock()
    thread = (
        _LearningThread(learner, learn_every)
        if learner is not None and learn_every
        else None
    )

    @asynccontextmanager
    async def lifespan(app):
        if thread is not None:
            thread.start()
        yield
        if thread is not None:
            thread.stop()
        log.flush()

    app = FastAPI(
        title="skbandit decision service",
        description="Rank with a contextual bandit policy, log every decision, "
        "join rewards by event id.",
        lifespan=lifespan,
    )
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_middleware(_BodyLimit, limit=int(max_body_bytes))

    _decision_routes(app, policy, log, lock)
    _report_routes(app, policy, log, lock, thread)
    return app


def _decide(policy, log, lock, request: RankRequest):
    """The route's decision: checked in full before the policy sees it."""
    try:
        context = np.asarray(request.context, dtype=np.float64)
    except ValueError:
        raise _error(
            422, "context", "rows of per-arm contexts must have equal lengths"
        ) from None
    with lock:
        problem = _shape_errors(policy, context)
        if problem:
            raise _error(422, "context", problem)
        mask = _mask(policy, request.available_actions, context)
        common = {"event_id": request.event_id, "mask": mask, "learn": request.learn}
        try:
            if request.caller_action is None:
                return log.decide(policy, context, **common)
            return log.apprentice(
                policy,
                context,
                request.caller_action,
                propensity=request.caller_propensity,
                **common,
            )
        except DuplicateEventError as exc:
            raise _error(409, "event_id", str(exc)) from None
        except (ValueError, TypeError) as exc:
            raise _error(422, "context", " ".join(str(exc).split())) from None


def _decision_routes(app, policy, log, lock) -> None:
    """``POST /rank``, ``/reward`` and ``/activate``."""

    @app.post("/rank", response_model=RankResponse)
    async def rank(request: RankRequest):
        """Choose an arm (or a slate) for one round and log the decision."""
        event = _decide(policy, log, lock, request)
        return RankResponse(
            event_id=event.event_id,
            action=_plain(event.action),
            probability=_plain(event.propensity),
            policy_version=event.policy_version,
            policy_action=_plain(event.policy_action),
            policy_probability=_plain(event.policy_propensity),
        )

    @app.post("/reward", response_model=RewardResponse)
    async def reward(request: RewardRequest):
        """Join a reward to a logged decision; rewards of one event add up."""
        value = request.value
        if isinstance(value, list):
            value = [math.nan if v is None else v for v in value]
        try:
            late = log.reward(request.event_id, value)
        except UnknownEventError as exc:
            raise _error(404, "event_id", str(exc)) from None
        except ValueError as exc:
            raise _error(422, "value", str(exc)) from None
        return RewardResponse(event_id=request.event_id, late=late)

    @app.post("/activate")
    async def activate(request: EventRequest):
        """Let the learner learn an event logged with ``learn=false``."""
        try:
            log.activate(request.event_id)
        except UnknownEventError as exc:
            raise _error(404, "event_id", str(exc)) from None
        except ValueError as exc:
            raise _error(409, "event_id", str(exc)) from None
        return {"event_id": request.event_id, "learn": True}


def _report_routes(app, policy, log, lock, thread) -> None:
    """``GET /health`` and ``/status``."""

    @app.get("/health")
    async def health():
        """The server is up."""
        return {"status": "ok"}

    @app.get("/status")
    def status():
        """Counts, mean reward, pending events, learning and the last promotion."""
        out = log.status()
        with lock:
            out["policy_version"] = log.policy_version(policy)
        out["policy"] = type(final_step(policy)).__name__
        out["learner_error"] = thread.last_error if thread is not None else None
        return out
