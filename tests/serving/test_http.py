"""The HTTP face on a live uvicorn (127.0.0.1, a free port), called with httpx."""
# SPDX-License-Identifier: BSD-3-Clause

import json
import pickle
import sqlite3
import threading
import time

import numpy as np
import pytest

from skbandit.policies import LinUCB
from skbandit.serving import DecisionLog, Learner

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from _live import Clock, uvicorn_thread  # noqa: E402

from skbandit.serving import make_app  # noqa: E402


def _policy(n_actions=3, n_features=4):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, n_features))
    policy = LinUCB(n_actions=n_actions, random_state=0)
    policy.fit(X, rng.integers(n_actions, size=20), rng.normal(size=20))
    return policy


def _db_rows(path):
    with sqlite3.connect(path) as con:
        return (
            con.execute("SELECT * FROM events ORDER BY seq").fetchall(),
            con.execute("SELECT * FROM rewards ORDER BY seq").fetchall(),
        )


@pytest.fixture
def served(tmp_path):
    """A LinUCB served, its learner (a 10 s wait on the test clock) stepped by hand."""
    policy = _policy()
    clock = Clock()
    log = DecisionLog(tmp_path / "d.sqlite", clock=clock)
    learner = Learner(policy, log, wait=10.0)
    with uvicorn_thread(make_app(policy, log, learner=learner)) as url:
        with httpx.Client(base_url=url, timeout=10.0) as client:
            yield client, policy, log, learner, clock


def test_rank_reward_status_and_schema(served):
    client, policy, log, learner, clock = served
    assert client.get("/health").json() == {"status": "ok"}
    ids = []
    for i in range(6):
        r = client.post(
            "/rank",
            json={"context": [0.1 * i, 1.0, -1.0, 0.5], "available_actions": [0, 2]},
        )
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["action"] in (0, 2) and 0 < body["probability"] <= 1
        ids.append(body["event_id"])
        assert (
            client.post(
                "/reward", json={"event_id": body["event_id"], "value": 1.0}
            ).json()["late"]
            is False
        )
    clock.now += 11
    learner.step()
    status = client.get("/status").json()
    assert status["n_events"] == 6 and status["n_learned"] == 6
    assert status["mean_reward"] == 1.0 and status["n_open"] == 0
    # The reward arrived before the close; another one now is late, kept, counted.
    assert client.post("/reward", json={"event_id": ids[0], "value": 2.0}).json() == {
        "event_id": ids[0],
        "late": True,
    }
    status = client.get("/status").json()
    assert status["n_late_rewards"] == 1 and status["late_reward_sum"] == 2.0
    schema = client.get("/openapi.json").json()
    assert {"/rank", "/reward", "/health", "/status", "/activate"} <= set(
        schema["paths"]
    )


def test_duplicate_and_unknown_event_ids(served):
    client, *_ = served
    first = client.post("/rank", json={"context": [0, 0, 0, 0], "event_id": "e-1"})
    assert first.status_code == 200 and first.json()["event_id"] == "e-1"
    again = client.post("/rank", json={"context": [0, 0, 0, 0], "event_id": "e-1"})
    assert (
        again.status_code == 409
        and "already in the log" in again.json()["detail"][0]["msg"]
    )
    unknown = client.post("/reward", json={"event_id": "nope", "value": 1.0})
    assert unknown.status_code == 404 and unknown.json()["detail"][0]["loc"] == [
        "body",
        "event_id",
    ]


def test_apprentice_and_deferred_activation(served):
    client, policy, log, learner, clock = served
    r = client.post(
        "/rank", json={"context": [1, 2, 3, 4], "caller_action": 1, "learn": False}
    ).json()
    assert r["action"] == 1 and r["probability"] == 1.0
    assert r["policy_action"] in (0, 1, 2)
    assert client.post("/activate", json={"event_id": r["event_id"]}).status_code == 200
    clock.now += 11
    assert learner.step() == 1


_GOOD = {"context": [0.5, 0.5, 0.5, 0.5]}
_MALFORMED = [
    # (name, path, body as raw bytes or JSON-able, expected status, field in message)
    ("bad json", "/rank", b'{"context": [1, 2', 422, "body"),
    ("not an object", "/rank", [1, 2, 3, 4], 422, "body"),
    ("no context", "/rank", {}, 422, "context"),
    ("too few features", "/rank", {"context": [1, 2]}, 422, "context"),
    ("too many features", "/rank", {"context": [1, 2, 3, 4, 5]}, 422, "context"),
    ("NaN", "/rank", b'{"context": [NaN, 1, 2, 3]}', 422, "context"),
    ("Infinity", "/rank", b'{"context": [1, Infinity, 2, 3]}', 422, "context"),
    ("a string feature", "/rank", {"context": ["1", 2, 3, 4]}, 422, "context"),
    ("a boolean feature", "/rank", {"context": [True, 2, 3, 4]}, 422, "context"),
    ("ragged per-arm", "/rank", {"context": [[1, 2], [1]]}, 422, "context"),
    ("wrong arm rows", "/rank", {"context": [[1, 2, 3, 4]] * 5}, 422, "context"),
    (
        "unknown arm",
        "/rank",
        {**_GOOD, "available_actions": [0, 7]},
        422,
        "available_actions",
    ),
    (
        "negative arm",
        "/rank",
        {**_GOOD, "available_actions": [-1]},
        422,
        "available_actions",
    ),
    ("no arm", "/rank", {**_GOOD, "available_actions": []}, 422, "available_actions"),
    (
        "repeated arm",
        "/rank",
        {**_GOOD, "available_actions": [1, 1]},
        422,
        "available_actions",
    ),
    (
        "negative propensity",
        "/rank",
        {**_GOOD, "caller_action": 0, "caller_propensity": -0.5},
        422,
        "caller_propensity",
    ),
    (
        "propensity above 1",
        "/rank",
        {**_GOOD, "caller_action": 0, "caller_propensity": 1.5},
        422,
        "caller_propensity",
    ),
    ("unknown caller arm", "/rank", {**_GOOD, "caller_action": 9}, 422, "context"),
    (
        "masked caller arm",
        "/rank",
        {**_GOOD, "caller_action": 1, "available_actions": [0, 2]},
        422,
        "context",
    ),
    ("unknown field", "/rank", {**_GOOD, "colour": "red"}, 422, "colour"),
    ("learn not a bool", "/rank", {**_GOOD, "learn": "yes"}, 422, "learn"),
    ("event id too long", "/rank", {**_GOOD, "event_id": "x" * 300}, 422, "event_id"),
    (
        "event id with a newline",
        "/rank",
        {**_GOOD, "event_id": "a\nb"},
        422,
        "event_id",
    ),
    ("duplicate event id", "/rank", {**_GOOD, "event_id": "taken"}, 409, "event_id"),
    ("huge payload", "/rank", {"context": [0.5] * 300_000}, 413, "body"),
    ("reward NaN", "/reward", b'{"event_id": "taken", "value": NaN}', 422, "value"),
    ("reward a string", "/reward", {"event_id": "taken", "value": "1"}, 422, "value"),
    (
        "reward a list",
        "/reward",
        {"event_id": "taken", "value": [1.0, 2.0]},
        422,
        "value",
    ),
    (
        "reward unknown event",
        "/reward",
        {"event_id": "nobody", "value": 1.0},
        404,
        "event_id",
    ),
    ("reward no event id", "/reward", {"value": 1.0}, 422, "event_id"),
]


def _message(response) -> str:
    body = response.json()
    if "message" in body:
        return body["message"]
    return " ".join(
        ".".join(map(str, d["loc"])) + ": " + d["msg"] for d in body["detail"]
    )


def test_malformed_requests_get_a_clear_4xx_and_change_nothing(served):
    client, policy, log, _, _ = served
    assert client.post("/rank", json={**_GOOD, "event_id": "taken"}).status_code == 200
    before_rows = _db_rows(log.path)
    before_policy = pickle.dumps(policy)
    assert len(_MALFORMED) >= 15
    for name, path, body, status, field in _MALFORMED:
        if isinstance(body, bytes):
            r = client.post(
                path, content=body, headers={"content-type": "application/json"}
            )
        else:
            r = client.post(path, json=body)
        assert r.status_code == status, (name, r.status_code, r.text[:300])
        assert field in _message(r), (name, _message(r))
    # A POST that does not say its length (a chunked stream) is refused too.
    chunked = client.post(
        "/rank",
        content=iter([json.dumps(_GOOD).encode()]),
        headers={"content-type": "application/json"},
    )
    assert chunked.status_code == 411
    assert _db_rows(log.path) == before_rows
    assert pickle.dumps(policy) == before_policy


def test_concurrent_clients_share_one_policy(served):
    client, policy, log, learner, clock = served
    url = str(client.base_url)
    n_clients, n_calls = 8, 15
    acknowledged, failures = [], []

    def work(k):
        with httpx.Client(base_url=url, timeout=20.0) as own:
            for i in range(n_calls):
                r = own.post("/rank", json={"context": [k, i, 1.0, -1.0]})
                if r.status_code != 200:
                    failures.append(r.text)
                    return
                event_id = r.json()["event_id"]
                own.post("/reward", json={"event_id": event_id, "value": 0.5})
                acknowledged.append(event_id)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n_clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not failures
    assert len(set(acknowledged)) == n_clients * n_calls
    clock.now += 11
    learner.step()
    assert policy.n_samples_seen_ == 20 + n_clients * n_calls
    assert log.status()["mean_reward"] == 0.5


def test_learning_thread_learns_in_the_background(tmp_path):
    policy = _policy()
    log = DecisionLog(tmp_path / "d.sqlite")
    learner = Learner(policy, log, wait=0.0)
    app = make_app(policy, log, learner=learner, learn_every=0.05)
    with uvicorn_thread(app) as url, httpx.Client(base_url=url) as client:
        for _ in range(5):
            client.post("/rank", json=_GOOD)
        deadline = time.monotonic() + 20
        while client.get("/status").json()["n_learned"] < 5:
            assert time.monotonic() < deadline, "the learner thread never learned"
            time.sleep(0.05)
        assert client.get("/status").json()["learner_error"] is None


def test_a_slate_over_http(tmp_path):
    from skbandit.policies import CombLinUCB

    policy = CombLinUCB(slate_size=2, random_state=0)
    clock = Clock()
    log = DecisionLog(tmp_path / "d.sqlite", clock=clock)
    learner = Learner(policy, log, wait=10.0)
    context = np.random.default_rng(0).normal(size=(5, 3)).tolist()  # 5 arms, per arm
    with uvicorn_thread(make_app(policy, log, learner=learner)) as url:
        with httpx.Client(base_url=url) as client:
            r = client.post(
                "/rank", json={"context": context, "available_actions": [0, 1, 3]}
            )
            assert r.status_code == 200, r.text
            body = r.json()
            assert len(body["action"]) == 2 and set(body["action"]) <= {0, 1, 3}
            assert len(body["probability"]) == 2
            w = client.post(
                "/reward", json={"event_id": body["event_id"], "value": [1.0, None]}
            )
            assert w.status_code == 200, w.text
            bad = client.post(
                "/reward", json={"event_id": body["event_id"], "value": 1.0}
            )
            assert bad.status_code == 422 and "value" in bad.json()["detail"][0]["loc"]
    clock.now += 11
    assert learner.step() == 1
    # The unobserved position got the default reward (0.0).
    assert log.to_arrays().rewards.tolist() == [[1.0, 0.0]]
