"""The real-LLM benchmark's pipeline without a GPU (bench/llm, docs/real-llm.md), at the CI smoke size: the Llama
model's KV-cache step logic, its ONNX export for NVIDIA's TensorRT 8.6 parser, the eager reference file the runner
reads, and the `etrt pack` descriptions packed into programs that validate. The plans themselves are NVIDIA's
builder's, made on the GPU machine; here an opaque placeholder stands in for each plan's bytes."""

from __future__ import annotations

import dataclasses
import json
import struct
import subprocess
import sys

import pytest
import torch

import harness

LLM = harness.ROOT / "bench" / "llm"
sys.path.insert(0, str(LLM))
import llama  # noqa: E402

# Every ONNX operator the exported model may use: each is on the support list of NVIDIA's TensorRT 8.6 ONNX parser
# (onnx-tensorrt, release/8.6-GA, docs/operators.md), and the 16-layer model's export parsed and built with NVIDIA's 8.6
# on the GPU machine (docs/real-llm.md). An export that needs another operator has to be checked there and tried on
# the GPU machine first.
PARSED_ON_TENSORRT_86 = {
    "Add", "Cast", "Concat", "Constant", "ConstantOfShape", "Div", "Equal", "Expand", "Gather", "LessOrEqual",
    "MatMul", "Mul", "Neg", "Pow", "Range", "ReduceMean", "Reshape", "ScatterElements", "Shape", "Sigmoid", "Slice",
    "Softmax", "Sqrt", "Sub", "Transpose", "Unsqueeze", "Where",
}


@pytest.fixture(scope="module")
def model():
    return llama.make_model(llama.SMALL, torch.float32)


def run(model, tokens, start, k, v):
    return model(tokens, torch.tensor([start], dtype=torch.int32), k, v)


def test_decode_steps_over_fed_back_caches_equal_one_prefill_of_the_whole_sequence(model):
    c = model.c
    seq = llama.prompt_tokens(c, 12)
    whole, k_whole, v_whole = run(model, seq, 0, model.empty_cache(), model.empty_cache())
    logits, k, v = run(model, seq[:, :7], 0, model.empty_cache(), model.empty_cache())
    for i in range(7, 12):
        logits, k, v = run(model, seq[:, i:i + 1], i, k, v)
    torch.testing.assert_close(logits, whole, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(k[:, :, :12], k_whole[:, :, :12], rtol=1e-5, atol=1e-5)
    assert torch.count_nonzero(k[:, :, 12:]) == 0, "rows past the sequence are never written"
    # A step attends only to rows at or before its position: garbage past it changes nothing.
    junk_k, junk_v = k.clone(), v.clone()
    junk_k[:, :, 12:] = 7.0
    junk_v[:, :, 12:] = -7.0
    again, _, _ = run(model, seq[:, 11:12], 11, junk_k, junk_v)
    torch.testing.assert_close(again, whole, rtol=1e-5, atol=1e-5)


def test_the_weights_are_the_same_for_a_config_on_every_machine(model):
    a = llama.make_model(llama.SMALL, torch.float32)
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), model.parameters()))
    other = llama.make_model(dataclasses.replace(llama.SMALL, seed=1), torch.float32)
    assert not torch.equal(other.lm_head.weight, model.lm_head.weight)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    out = tmp_path_factory.mktemp("llm")
    p = subprocess.run([sys.executable, str(LLM / "prepare_llm.py"), str(out), "--small", "--device", "cpu",
                        "--prompt", "8", "--steps", "6", "--checks", "40"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return out


def test_the_export_uses_only_operators_tensorrt_86_parses(prepared):
    import onnx

    m = onnx.load(str(prepared / "model.onnx"))
    onnx.checker.check_model(m)
    assert {n.op_type for n in m.graph.node} <= PARSED_ON_TENSORRT_86
    dims = {i.name: [d.dim_value or d.dim_param for d in i.type.tensor_type.shape.dim] for i in m.graph.input}
    c = llama.SMALL
    cache = [c.layers, c.kv_heads, c.max_seq, c.head_dim]
    assert dims == {"tokens": [1, "seq"], "start_pos": [1], "k_cache": cache, "v_cache": cache}
    assert [o.name for o in m.graph.output] == ["logits", "k_cache_out", "v_cache_out"]


def test_the_reference_file_holds_what_the_runner_reads(prepared, model):
    data = (prepared / "reference.bin").read_bytes()
    magic, vocab, p, n, checks = struct.unpack_from("<5i", data)
    assert (magic, vocab, p, n, checks) == (0x4C4C4D31, llama.SMALL.vocab, 8, 6, 1)
    off = 20
    prompt = struct.unpack_from(f"<{p}i", data, off)
    tokens = struct.unpack_from(f"<{n}i", data, off + 4 * p)
    assert list(prompt) == llama.prompt_tokens(llama.SMALL, 8)[0].tolist()
    # The greedy tokens are the fp32 model's too at this size (no near tie), and logits32 is the fp32 model's.
    fed, logits = llama.generate(model, llama.prompt_tokens(llama.SMALL, 8), 6, forced=list(tokens))
    off += 4 * (p + n) + 4 * (1 + n) * vocab
    l32 = torch.tensor(struct.unpack_from(f"<{(1 + n) * vocab}f", data, off)).view(1 + n, vocab)
    torch.testing.assert_close(l32, logits, rtol=1e-5, atol=1e-5)
    off += 4 * (1 + n) * vocab
    (length,) = struct.unpack_from("<i", data, off)
    assert length == 40 and len(data) == off + 4 + 4 * length + 8 * vocab


@pytest.mark.parametrize("name, profiles", [("split", 2), ("wide", 1)])
def test_the_pack_descriptions_make_programs_of_runner_provided_tensors(prepared, name, profiles):
    desc = json.loads((prepared / f"{name}.io.json").read_text())
    (prepared / desc["plan"]).write_bytes(b"an opaque TensorRT plan" * 8)
    out = prepared / f"{name}.pte"
    p = harness.etrt_cli("pack", prepared / f"{name}.io.json", "-o", out)
    assert p.returncode == 0, p.stderr
    report = json.loads(harness.etrt_cli("inspect", "--json", out).stdout)
    (method,) = report["methods"]
    (delegate,) = method["delegates"]
    assert delegate["profiles"]["count"] == profiles
    assert [(b["name"], b["is_input"]) for b in delegate["io_bindings"]] == [
        ("tokens", True), ("start_pos", True), ("k_cache", True), ("v_cache", True), ("logits", False),
        ("k_cache_out", False), ("v_cache_out", False)]
    assert method["buffers"] == [], "every tensor is the runner's: nothing planned"
