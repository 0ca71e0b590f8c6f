"""The S3 lake's writer lease (iolake/lake/lock.py) against a real S3-compatible server (S3Proxy,
tests/support/services.py): one holder at a time, a waiter that gives up naming the holder, a
dead holder's lease taken over after the TTL, a live holder's heartbeat keeping it, a holder that
lost its lease told so, and refused credentials named."""

from __future__ import annotations

import json
import threading
import time

import pytest

from iolake.lake.lock import LakeBusy, LeaseLost, StoreUnavailable, WriterLease
from tests.support.services import S3Server


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    server = S3Server(tmp_path_factory.mktemp("s3")).start()
    server.bucket("locks")
    yield server
    server.stop()


@pytest.fixture
def env(s3, monkeypatch):
    for k, v in s3.env().items():
        monkeypatch.setenv(k, v)


def _lease(lake, run_id, ttl=2.0, wait=0.0, said=None):
    return WriterLease(lake, run_id, ttl, wait, echo=(said.append if said is not None else print))


def _holder(s3, key):
    return json.loads(s3.client().get_object(Bucket="locks", Key=key)["Body"].read())


def test_one_holder_and_a_waiter_that_names_it(s3, env):
    lake = "s3://locks/one"
    with _lease(lake, "run-a", ttl=30):
        assert _holder(s3, "one/_lock/writer.json")["run_id"] == "run-a"
        with pytest.raises(LakeBusy) as e:
            _lease(lake, "run-b", ttl=30, wait=0.5).acquire()
        msg = str(e.value)
        assert "run run-a" in msg and "lake.lock_wait_s" in msg and lake in msg
    # released: the next run takes it at once
    with _lease(lake, "run-c", ttl=30):
        assert _holder(s3, "one/_lock/writer.json")["run_id"] == "run-c"


def test_a_waiter_gets_the_lease_when_the_holder_releases(s3, env):
    lake = "s3://locks/handover"
    first = _lease(lake, "first", ttl=30)
    first.acquire()
    said: list[str] = []
    second = _lease(lake, "second", ttl=30, wait=120, said=said)
    waiter = threading.Thread(target=second.acquire)
    waiter.start()
    deadline = time.monotonic() + 60
    while not said and time.monotonic() < deadline:
        time.sleep(0.1)
    assert any("waiting for run first" in s for s in said), said
    assert _holder(s3, "handover/_lock/writer.json")["run_id"] == "first"
    first.release()
    waiter.join(timeout=60)
    try:
        assert _holder(s3, "handover/_lock/writer.json")["run_id"] == "second"
    finally:
        second.release()


def test_a_dead_holders_lease_is_taken_over_after_the_ttl(s3, env):
    lake = "s3://locks/dead"
    dead = _lease(lake, "dead", ttl=2)
    dead.acquire()
    dead._stop.set()  # the process died: no more heartbeats, nothing released
    said: list[str] = []
    with _lease(lake, "next", ttl=2, wait=30, said=said):
        assert _holder(s3, "dead/_lock/writer.json")["run_id"] == "next"
    assert any("took over the writer lease of run dead" in s for s in said), said
    # the dead run, were it only stalled, learns it lost the lease and stops
    assert dead.renew() is False
    with pytest.raises(LeaseLost):
        dead.check()


def test_a_live_holders_heartbeat_keeps_the_lease_past_the_ttl(s3, env):
    lake = "s3://locks/live"
    with _lease(lake, "live", ttl=3):
        time.sleep(8)  # more than twice the TTL (plus the clock's second): renewed every 1 s
        with pytest.raises(LakeBusy):
            _lease(lake, "other", ttl=3, wait=1).acquire()


def test_refused_credentials_name_the_store(s3, env, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    with pytest.raises(StoreUnavailable) as e:
        with _lease("s3://locks/creds", "x"):
            pass
    assert f"the object store at {s3.url}" in str(e.value) and "AWS_SECRET_ACCESS_KEY" in str(
        e.value
    )


def _take(lease, start: threading.Barrier, outcome: dict) -> None:
    """Acquire `lease` once every thread is ready; record "held" or "busy" by its run id."""
    start.wait()
    try:
        lease.acquire()
        outcome[lease.run_id] = "held"
    except LakeBusy:
        outcome[lease.run_id] = "busy"


@pytest.mark.parametrize("before", ["a dead lease", "no lease"])
def test_of_runs_writing_the_lease_at_once_exactly_one_holds_it(s3, env, before):
    """Several runs create the lease, or take the same dead lease over, in the same instant: one
    holds it, the others go on waiting and give up naming that one. (S3Proxy checks a
    conditional write's precondition and then writes, so two such writes can both be answered
    200; the lease must still have one holder, as on a store whose conditional writes are
    atomic.)"""
    for round_ in range(2):
        name = f"race-{before.split()[0]}-{round_}"
        lake = f"s3://locks/{name}"
        if before == "a dead lease":
            dead = _lease(lake, "dead", ttl=2)
            dead.acquire()
            dead._stop.set()
            time.sleep(3.5)  # past the TTL and the clock's second: every taker finds it expired
        runs = [_lease(lake, f"taker-{i}", ttl=2, wait=3, said=[]) for i in range(4)]
        start = threading.Barrier(len(runs))
        outcome: dict[str, str] = {}

        threads = [threading.Thread(target=_take, args=(r, start, outcome)) for r in runs]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        try:
            held = [r for r, o in outcome.items() if o == "held"]
            holder = _holder(s3, f"{name}/_lock/writer.json")["run_id"]
            assert len(outcome) == len(runs) and held == [holder], outcome
        finally:
            for r in runs:
                r.release()
