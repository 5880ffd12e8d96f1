"""One engine, many sessions (docs/design.md, decision 21), on a program ExecuTorch 1.5.1's exporter wrote and
ExecuTorch's Python runtime loads: every load of the file shares the delegate's deserialized engine (the counters
say so), while each keeps its own contexts and its own delegate-owned cache, so each session's outputs are those of
its own eager model, whether the sessions step in turn or on threads of their own. ``share_engine=False`` gives each
load its own engine; the engine goes when its last session goes."""

from __future__ import annotations

import gc
import threading

from harness import load_method, run_py
from test_state_sessions import STEPS, assert_like, step

SESSIONS = 32


def engine_counters(rt):
    c = rt.counters()
    return {k: c[k] for k in ("engines_deserialized", "engines_resident", "engine_sessions", "engine_bytes")}


def delta(after, before):
    return {k: after[k] - before[k] for k in after}


def test_loads_of_one_file_share_one_engine_and_each_runs_like_its_own_eager_model(rt, exported):
    e = exported("kv_owned")
    before = engine_counters(rt)
    sessions = [load_method(e.path)]
    one = delta(engine_counters(rt), before)
    assert one["engines_deserialized"] >= 1 and one["engine_bytes"] > 0
    assert one["engines_resident"] == one["engines_deserialized"] == one["engine_sessions"]
    sessions += [load_method(e.path) for _ in range(SESSIONS - 1)]
    many = delta(engine_counters(rt), before)
    assert many == {**one, "engine_sessions": SESSIONS * one["engine_sessions"]}, many

    # Interleaved: step k of every session, then step k + 1; each session is one sequence of its own. Before each
    # round, session 0 asks for a step its pinned profile refuses: the refusal changes nothing, for it or the others.
    models = [e.eager() for _ in sessions]
    for i, (n, pos) in enumerate(STEPS):
        refused = run_py(rt, sessions[0], [{**step(99, 3, pos), "request": {"pin": 0}}])[0]
        assert not refused["ok"] and "profile 0" in refused["error"], refused["error"]
        for s, (method, model) in enumerate(zip(sessions, models)):
            inputs = step(1000 * s + i, n, pos)
            assert_like(run_py(rt, method, [inputs]), model, [inputs])

    del sessions, method
    gc.collect()
    assert delta(engine_counters(rt), before) == {**one, "engines_resident": 0, "engine_sessions": 0,
                                                   "engine_bytes": 0}


def test_sessions_on_threads_of_their_own_each_run_like_their_own_eager_model(rt, exported):
    e = exported("kv_owned")
    before = engine_counters(rt)
    sessions = [load_method(e.path) for _ in range(8)]
    failures = []

    def run(s):
        try:
            model = e.eager()
            for i, (n, pos) in enumerate(STEPS):
                inputs = step(5000 + 100 * s + i, n, pos)
                assert_like(run_py(rt, sessions[s], [inputs]), model, [inputs])
        except Exception as error:  # reported on the test's thread below
            failures.append((s, repr(error)))

    threads = [threading.Thread(target=run, args=(s,)) for s in range(len(sessions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    counted = delta(engine_counters(rt), before)
    assert counted["engine_sessions"] == len(sessions) * counted["engines_resident"]


def test_with_share_engine_off_each_load_deserializes_its_own(rt, exported):
    e = exported("kv_owned")
    before = engine_counters(rt)
    shared = load_method(e.path)
    per_load = delta(engine_counters(rt), before)["engines_deserialized"]
    with rt.load_options(share_engine=False):
        own = [load_method(e.path) for _ in range(3)]
    counted = delta(engine_counters(rt), before)
    assert counted["engines_deserialized"] == 4 * per_load
    assert counted["engines_resident"] == 4 * per_load and counted["engine_sessions"] == 4 * per_load
    inputs = step(7, 3, 0)
    for method in [shared, *own]:
        assert_like(run_py(rt, method, [inputs]), e.eager(), [inputs])
    del shared, own, method
    gc.collect()
    assert delta(engine_counters(rt), before)["engines_resident"] == 0
