"""The demo decoder's logits, step by step, against an independent NumPy implementation.

The demo runner (build/examples/etrt_llm_runner) runs a prefill and decode steps of the one-layer attention
decoder in build/examples/decoder.pte (caches updated in place, no write-back outputs) and
decoder_writeback.pte (the same engine; the call also passes write-back outputs), under both profile
strategies and both selection modes, and dumps every step (--dump). This file recomputes every logit from the
weights the .pte builder wrote beside the .pte (decoder_weights.bin/.json) in float64 NumPy, teacher-forced on
the tokens the runner fed.

Tolerance: rtol = atol = 1e-4. The engine computes in float32 (sums of 32 products, an online softmax over up to
2048 keys, whose summation order differs from NumPy's), so it is not bit-exact; its error against float64 is
around 1e-6 here (the logits are within a few units), so 1e-4 leaves two orders of margin while any real
mistake (a wrong row, a missed mask, a stale cache) moves logits by 1e-2 or more, which the no-cache check below
makes explicit.

Build first: .venv/bin/cmake --build build (ETRT_BUILD_DIR overrides the build directory).

Also a command line, for dumps made elsewhere (the GPU suite writes one per run, docs in tests/gpu):

    .venv/bin/python tests/python/test_decoder_demo.py <dump.json> [--weights <decoder_weights.json>]
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("ETRT_BUILD_DIR", ROOT / "build"))
EXAMPLES = BUILD / "examples"
RUNNER = EXAMPLES / "etrt_llm_runner"
WEIGHTS = EXAMPLES / "decoder_weights.json"
VARIANTS = ["decoder", "decoder_writeback"]

RTOL = 1e-4
ATOL = 1e-4
# A decode step that ignored what earlier steps wrote to the cache moves the logits by far more than this.
MIN_NO_CACHE_DIFFERENCE = 1e-2

PROMPT = 48
DECODE_STEPS = 8


def prompt_tokens(n, vocab=64):
    """The runner's fixed prompt."""
    return [(i * 5 + 1) % vocab for i in range(n)]


# ---- the independent implementation -------------------------------------------------------------------------


class Weights:
    def __init__(self, manifest_path):
        manifest_path = Path(manifest_path)
        m = json.loads(manifest_path.read_text())
        assert m["dtype"] == "float32" and m["byte_order"] == "little"
        raw = np.fromfile(manifest_path.parent / m["file"], dtype="<f4")
        self.t = {}
        for t in m["tensors"]:
            rows, cols = t["shape"]
            self.t[t["name"]] = raw[t["offset"]:t["offset"] + rows * cols].reshape(rows, cols).astype(np.float64)
        assert sum(a.size for a in self.t.values()) == raw.size, "the manifest does not cover the weights file"
        self.vocab, self.hidden, self.head_dim = m["vocab"], m["hidden"], m["head_dim"]
        self.context = m["context"]
        self.scale = float(np.float32(m["attention_scale"]))


class Decoder:
    """x = E[tokens]; q, k, v = x Wq, x Wk, x Wv; the cache rows start_pos.. get k, v; causal attention of q at
    start_pos + s over cache rows 0..start_pos + s; logits = (x + a Wo) Wlm. With keep_cache=False every call
    starts from zeroed caches: what an engine whose cache updates were lost would compute."""

    def __init__(self, w, keep_cache=True):
        self.w = w
        self.keep_cache = keep_cache
        self.k = np.zeros((w.context, w.head_dim))
        self.v = np.zeros((w.context, w.head_dim))

    def step(self, tokens, start_pos):
        w = self.w.t
        tokens = np.asarray(tokens, dtype=np.int64)
        s = len(tokens)
        assert start_pos + s <= self.w.context
        x = w["embedding"][tokens]
        q, k, v = x @ w["wq"], x @ w["wk"], x @ w["wv"]
        if not self.keep_cache:
            self.k[:] = 0.0
            self.v[:] = 0.0
        self.k[start_pos:start_pos + s] = k
        self.v[start_pos:start_pos + s] = v
        n = start_pos + s
        scores = self.w.scale * (q @ self.k[:n].T)  # [s, n]
        visible = np.arange(n)[None, :] <= (start_pos + np.arange(s))[:, None]
        scores = np.where(visible, scores, -np.inf)
        scores -= scores.max(axis=1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=1, keepdims=True)
        a = p @ self.v[:n]
        h = x + a @ w["wo"]
        return h @ w["lm_head"]


def check_run(run, weights, keep_cache=True):
    """Recomputes one dumped run; returns (largest |engine - numpy| per step, numpy logits per step)."""
    ref = Decoder(weights, keep_cache=keep_cache)
    errors, refs = [], []
    for step in run["steps"]:
        engine = np.asarray(step["logits"], dtype=np.float64)
        expected = ref.step(step["tokens"], step["start_pos"])
        assert engine.shape == expected.shape, (step["phase"], step["start_pos"], engine.shape, expected.shape)
        errors.append(float(np.max(np.abs(engine - expected))))
        refs.append(expected)
    return errors, refs


def assert_run_matches(run, weights, where):
    ref = Decoder(weights)
    for i, step in enumerate(run["steps"]):
        engine = np.asarray(step["logits"], dtype=np.float64)
        expected = ref.step(step["tokens"], step["start_pos"])
        np.testing.assert_allclose(
            engine, expected, rtol=RTOL, atol=ATOL,
            err_msg=f"{where}: step {i} ({step['phase']} at start_pos {step['start_pos']}, tokens {step['tokens'][:8]})")


# ---- running the demo runner ----------------------------------------------------------------------------------


def run_runner(tmp_path, model, *args, check=True):
    if not RUNNER.exists() or not WEIGHTS.exists():
        pytest.fail(f"{RUNNER} or {WEIGHTS} is missing: build first (.venv/bin/cmake --build {BUILD})")
    dump = tmp_path / f"{model}.{len(list(tmp_path.iterdir()))}.json"
    proc = subprocess.run([str(RUNNER), str(EXAMPLES / f"{model}.pte"), *map(str, args), "--dump", str(dump)],
                          capture_output=True, text=True, timeout=300)
    if check:
        assert proc.returncode == 0, f"runner failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        return json.loads(dump.read_text()), proc
    return None, proc


@pytest.fixture(scope="module")
def weights():
    if not WEIGHTS.exists():
        pytest.fail(f"{WEIGHTS} is missing: build first (.venv/bin/cmake --build {BUILD})")
    return Weights(WEIGHTS)


@pytest.fixture(scope="module", params=VARIANTS)
def demo_dump(request, tmp_path_factory):
    """Prefill over 48 tokens + 8 decode steps, under both strategies and both selection modes."""
    dump, _ = run_runner(tmp_path_factory.mktemp(request.param), request.param, PROMPT, DECODE_STEPS)
    return request.param, dump


# ---- tests ----------------------------------------------------------------------------------------------------


def test_every_run_covers_both_strategies_and_both_selection_modes(demo_dump):
    _, dump = demo_dump
    combos = {(r["strategy"], r["selection"]) for r in dump["runs"]}
    assert combos == {("switch", "pin"), ("switch", "auto"), ("context_per_profile", "pin"),
                      ("context_per_profile", "auto")}


def test_each_step_feeds_the_token_the_previous_step_picked(demo_dump, weights):
    _, dump = demo_dump
    assert dump["vocab"] == weights.vocab
    for run in dump["runs"]:
        steps = run["steps"]
        assert len(steps) == 1 + DECODE_STEPS
        assert steps[0]["phase"] == "prefill" and steps[0]["start_pos"] == 0
        assert steps[0]["tokens"] == prompt_tokens(PROMPT)
        for prev, step in zip(steps, steps[1:]):
            assert step["phase"] == "decode"
            assert step["tokens"] == [prev["next_token"]]
            assert step["start_pos"] == prev["start_pos"] + len(prev["tokens"])
        for step in steps:
            logits = np.asarray(step["logits"])
            assert logits.shape == (len(step["tokens"]), weights.vocab)
            assert step["next_token"] == int(np.argmax(logits[-1])), "greedy picks the largest last-row logit"


def test_each_phase_runs_on_its_profile(demo_dump):
    _, dump = demo_dump
    for run in dump["runs"]:
        steps = run["steps"]
        assert steps[0]["profile"] == 1, run["strategy"] + "/" + run["selection"]
        assert all(s["profile"] == 0 for s in steps[1:]), run["strategy"] + "/" + run["selection"]
        assert steps[1]["switched"] and not any(s["switched"] for s in steps[2:])


def test_logits_match_numpy_at_every_step(demo_dump, weights):
    variant, dump = demo_dump
    for run in dump["runs"]:
        assert_run_matches(run, weights, f"{variant} {run['strategy']}/{run['selection']}")


def test_numpy_greedy_choice_agrees_where_the_margin_is_clear(demo_dump, weights):
    _, dump = demo_dump
    _, refs = check_run(dump["runs"][0], weights)
    for step, expected in zip(dump["runs"][0]["steps"], refs):
        last = np.sort(expected[-1])
        if last[-1] - last[-2] > 10 * ATOL:
            assert step["next_token"] == int(np.argmax(expected[-1]))


def test_decode_steps_read_what_earlier_steps_wrote_into_the_cache(demo_dump, weights):
    """Were the caches not updated in place (the runner's memory never written), every decode step would see
    zeroed cache rows: the no-cache NumPy run. The engine must match the cached run and differ from that one."""
    variant, dump = demo_dump
    for run in dump["runs"]:
        where = f"{variant} {run['strategy']}/{run['selection']}"
        cached, _ = check_run(run, weights, keep_cache=True)
        uncached, _ = check_run(run, weights, keep_cache=False)
        # The prefill starts from empty caches either way: both references agree there.
        assert cached[0] <= ATOL * 10 and uncached[0] <= ATOL * 10, where
        for i in range(1, len(run["steps"])):
            assert cached[i] <= ATOL * 10, f"{where}: decode step {i} is off by {cached[i]}"
            assert uncached[i] > MIN_NO_CACHE_DIFFERENCE, (
                f"{where}: decode step {i} matches a decoder that keeps no cache (difference {uncached[i]}): the "
                "cache was not updated in place")


def test_write_back_bytes_are_the_caches_of_the_write_back_variant_and_nothing_else(demo_dump, weights):
    """The engine updates the runner's K and V caches in place; decoder_writeback.pte's call also passes k_cache_out
    and v_cache_out, so every step copies both whole caches into them (write_back_bytes, etrt::ExecutionRecord) and
    decoder.pte's copies nothing for them. A host engine moves no byte between host and device."""
    variant, dump = demo_dump
    cache_bytes = weights.context * weights.head_dim * 4  # one float32 cache, [1, T, D]
    for run in dump["runs"]:
        for step in run["steps"]:
            where = f"{variant} {run['strategy']}/{run['selection']} {step['phase']} at {step['start_pos']}"
            copied = step["bytes"]
            assert copied["write_back"] == (2 * cache_bytes if variant == "decoder_writeback" else 0), where
            assert copied["host_to_device"] == 0 and copied["device_to_host"] == 0, where


def test_every_run_computes_the_same_logits(demo_dump):
    _, dump = demo_dump
    first = dump["runs"][0]
    for run in dump["runs"][1:]:
        for a, b in zip(first["steps"], run["steps"]):
            assert a["tokens"] == b["tokens"] and a["next_token"] == b["next_token"]
            # The same host kernels run whatever the profile strategy and selection: bit-identical.
            assert a["logits"] == b["logits"], f"{run['strategy']}/{run['selection']} at start_pos {a['start_pos']}"


@pytest.mark.parametrize("strategy", ["switch", "context_per_profile"])
def test_a_longest_prompt_then_decode_steps_past_it_match_numpy(tmp_path, weights, strategy):
    """A 2048-token prompt (the prefill profile's max) fills the cache's first 2048 rows; the decode steps write
    and read the rows after it."""
    dump, _ = run_runner(tmp_path, "decoder", 2048, DECODE_STEPS, "--strategy", strategy, "--select", "auto")
    (run,) = dump["runs"]
    assert run["steps"][0]["profile"] == 1 and len(run["steps"][0]["tokens"]) == 2048
    assert run["steps"][-1]["start_pos"] == 2048 + DECODE_STEPS - 1
    assert_run_matches(run, weights, f"2048-token prompt, {strategy}")


def test_the_runner_prints_etrts_explanation_when_etrt_refused(tmp_path):
    _, proc = run_runner(tmp_path, "decoder", 10, 2, check=False)  # below the prefill profile's 32
    assert proc.returncode == 1
    assert "prefill at start_pos 0 (10 tokens) failed: TensorRT delegate" in proc.stderr, proc.stderr
    assert "outside [32, 2048]" in proc.stderr, proc.stderr


def test_the_runner_prints_executorchs_error_when_etrt_said_nothing(tmp_path):
    # 2100 tokens exceed the method's planned tokens bound (2048): ExecuTorch refuses before the delegate runs.
    _, proc = run_runner(tmp_path, "decoder", 2100, 0, check=False)
    assert proc.returncode == 1
    failure = [line for line in proc.stderr.splitlines() if line.startswith("prefill at start_pos 0")]
    assert len(failure) == 1 and failure[0].split("failed: ")[1].startswith("Error::"), proc.stderr

    proc = subprocess.run([str(RUNNER), str(tmp_path / "missing.pte")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "failed: Error::AccessFailed" in proc.stderr, proc.stderr


# ---- command line: check a dump made elsewhere (e.g. the GPU suite's) --------------------------------------------


def main(argv):
    import argparse

    parser = argparse.ArgumentParser(description="Check a decoder dump against NumPy.")
    parser.add_argument("dump", nargs="+", help="JSON written by etrt_llm_runner --dump or the GPU suite")
    parser.add_argument("--weights", default=str(WEIGHTS), help="decoder_weights.json (default: %(default)s)")
    args = parser.parse_args(argv)
    w = Weights(args.weights)
    ok = True
    for path in args.dump:
        dump = json.loads(Path(path).read_text())
        for run in dump["runs"]:
            where = f"{path} [{dump.get('model', '?')}] {run['strategy']}/{run['selection']}"
            cached, _ = check_run(run, w, keep_cache=True)
            uncached, _ = check_run(run, w, keep_cache=False)
            good = all(u > MIN_NO_CACHE_DIFFERENCE for u in uncached[1:])
            try:
                assert_run_matches(run, w, where)
            except AssertionError as e:
                print(e)
                good = False
            ok = ok and good
            print(f"{'ok  ' if good else 'FAIL'} {where}: {len(run['steps'])} steps, largest |engine - numpy| "
                  f"{max(cached):.3g} (tolerance rtol {RTOL}, atol {ATOL}); without the cache the decode steps "
                  f"would differ by >= {min(uncached[1:], default=float('nan')):.3g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
