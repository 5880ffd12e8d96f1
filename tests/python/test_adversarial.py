"""`etrt inspect` and `etrt validate` on the adversarial corpus (tests/adversarial,
made by make_corpus.py): every file is handled within 2 s and 200 MB, never
with a traceback, and validate answers as corpus.json says (exit status and
what it says). Each command runs in its own process under RLIMIT_AS (200 MB
of address space) and RLIMIT_CPU (2 s), with a 2 s wall-clock timeout; a
process that needs more is killed or fails to allocate, and the test fails.
docs/limits.md describes the limits the corpus probes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _generated import assert_matches_fresh_generation

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "adversarial"
MANIFEST = json.loads((CORPUS / "corpus.json").read_text())
TIME_LIMIT_S = 2.0
MEMORY_LIMIT = 200 * 2**20

# Sets the limits, runs the CLI, and reports what the process (and its flatc child) used on the pipe it is given.
_RUNNER = r"""
import json, os, resource, sys
limit, cpu, report = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
from etrt.cli import main
status = main(sys.argv[4:])
sys.stdout.flush()
sys.stderr.flush()
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
with os.fdopen(report, "w") as usage:
    json.dump({"cpu_s": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
               "max_rss_kib": max(me.ru_maxrss, kids.ru_maxrss)}, usage)
sys.exit(status)
"""


def run_cli(*args: str):
    """(exit status, stdout + stderr, usage) of ``etrt <args>`` under the limits."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    env.pop("ETRT_DEBUG", None)
    for attempt in range(2):  # one retry absorbs a scheduling hiccup on a busy machine; a real overrun fails twice
        read_end, write_end = os.pipe()
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", _RUNNER, str(MEMORY_LIMIT), str(int(TIME_LIMIT_S)),
                                 str(write_end), *args],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, pass_fds=(write_end,))
        os.close(write_end)
        try:
            out, _ = proc.communicate(timeout=TIME_LIMIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            os.close(read_end)
            if attempt == 0:
                continue
            pytest.fail(f"etrt {' '.join(args)} took more than {TIME_LIMIT_S} s (twice)")
        wall = time.perf_counter() - start
        with os.fdopen(read_end) as f:
            raw = f.read()
        usage = json.loads(raw) if raw else None
        return proc.returncode, out.decode(errors="replace"), dict(usage or {}, wall_s=wall)
    raise AssertionError("unreachable")


def _check_bounded(args, status, output, usage):
    assert usage.get("cpu_s") is not None, f"etrt {' '.join(args)} died (status {status}): {output[-2000:]}"
    assert usage["cpu_s"] <= TIME_LIMIT_S, usage
    assert usage["max_rss_kib"] * 1024 <= MEMORY_LIMIT, usage
    assert "Traceback" not in output and "this is a bug in etrt" not in output, output[-2000:]
    assert "MemoryError" not in output, output[-2000:]
    # Names come from the file: no control character of theirs reaches the terminal raw.
    raw = sorted({c for c in output if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F})
    assert not raw, f"raw control characters {raw!r} in: {output[-2000:]!r}"


CASES = sorted(MANIFEST)


def test_the_corpus_has_every_file_listed():
    assert sorted(p.stem for p in CORPUS.glob("*.pte")) == CASES
    assert len(CASES) >= 30


@pytest.mark.parametrize("case", CASES)
def test_validate_is_bounded_and_answers_as_the_runtime_would(case):
    path = str(CORPUS / f"{case}.pte")
    status, output, usage = run_cli("validate", path)
    _check_bounded(("validate", path), status, output, usage)
    want = MANIFEST[case]
    assert status == want["validate_exit"], output[-3000:]
    assert want["says"] in output, output[-3000:]


@pytest.mark.parametrize("case", CASES)
def test_inspect_is_bounded_and_reads_what_can_be_read(case):
    path = str(CORPUS / f"{case}.pte")
    status, output, usage = run_cli("inspect", path)
    _check_bounded(("inspect", path), status, output, usage)
    # inspect reports bad input (an unreadable blob or engine) with 2, anything readable with 0, verdict aside.
    assert status == (2 if MANIFEST[case]["validate_exit"] == 2 else 0), output[-3000:]
    if status == 0:
        assert "validation:" in output


def test_inspect_json_of_the_largest_readable_file_is_bounded():
    path = str(CORPUS / "bindings_4096.pte")
    status, output, usage = run_cli("inspect", "--json", path)
    _check_bounded(("inspect", "--json", path), status, output, usage)
    report = json.loads(output)
    (d,) = report["methods"][0]["delegates"]
    assert len(d["io_bindings"]) == 4096


def test_committed_corpus_matches_a_fresh_generation(tmp_path):
    assert_matches_fresh_generation(CORPUS / "make_corpus.py", (".pte", ".json"), tmp_path)
