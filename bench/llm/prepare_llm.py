"""Writes everything the real-LLM benchmark needs from PyTorch (docs/real-llm.md), into one folder:

    model.onnx (+ model.onnx.data)   the Llama decoder (llama.py) for NVIDIA's ONNX parser
    reference.bin                    eager PyTorch's tokens and logits (format below), for the runner to compare
    wide.io.json, split.io.json      `etrt pack` descriptions: one wide profile [1, 1..T]; a decode profile [1, 1]
                                     and a prefill profile [1, 32..T]

reference.bin, little-endian: int32 magic 0x4c4c4d31 ('1MLL'), vocab, prompt length P, decode steps N, checks C;
int32 prompt[P]; int32 tokens[N] (eager fp16's greedy choices, fed to the decode steps); float32 logits16[(1+N)*V]
(eager fp16, teacher-forced on those tokens); float32 logits32[(1+N)*V] (the same weights in float32, the same
tokens: the fp16 noise floor); then C prefill-only checks, each: int32 length L, int32 tokens[L], float32
logits16[V], float32 logits32[V].

    python3 prepare_llm.py OUT_DIR [--layers 16] [--device cuda] [--prompt 128] [--steps 64] [--small]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import struct
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama  # noqa: E402

MAGIC = 0x4C4C4D31


def io_description(c: llama.Config, plan: str, split: bool) -> dict:
    t = c.max_seq
    opt = min(512, t)  # the builder's default (llm_build_plan.cpp)
    cache = [c.layers, c.kv_heads, t, c.head_dim]

    def tensor(name, dtype, shape, dynamic):
        # The runner gives every tensor's memory (device memory, set_input/set_output): the program plans none.
        return {"name": name, "dtype": dtype, "shape": shape, "dynamic": dynamic, "planned": False}

    if split:
        profiles = [{"tokens": {"min": [1, 1], "opt": [1, 1], "max": [1, 1]}},
                    {"tokens": {"min": [1, 32], "opt": [1, opt], "max": [1, t]}}]
    else:
        profiles = [{"tokens": {"min": [1, 1], "opt": [1, opt], "max": [1, t]}}]
    return {
        "inputs": [tensor("tokens", "int32", [1, t], True), tensor("start_pos", "int32", [1], False),
                   tensor("k_cache", "float16", cache, False), tensor("v_cache", "float16", cache, False)],
        "outputs": [tensor("logits", "float32", [1, c.vocab], False),
                    tensor("k_cache_out", "float16", cache, False), tensor("v_cache_out", "float16", cache, False)],
        "plan": plan,
        "profiles": profiles,
        "symbolic_dims": {"seq_len": [["tokens", 1]]},
    }


def floats(t: torch.Tensor) -> bytes:
    return t.detach().float().cpu().contiguous().numpy().astype("<f4").tobytes()


def ints(values) -> bytes:
    return struct.pack(f"<{len(values)}i", *[int(v) for v in values])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=llama.Config.layers)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--checks", default="512,2048", help="prefill-only lengths to check (comma-separated)")
    ap.add_argument("--small", action="store_true", help="the CI smoke size (llama.SMALL)")
    ap.add_argument("--no-onnx", action="store_true")
    a = ap.parse_args()
    c = llama.SMALL if a.small else dataclasses.replace(llama.Config(), layers=a.layers)
    checks = [int(x) for x in a.checks.split(",") if x] if a.checks else []
    checks = [n for n in checks if n <= c.max_seq]
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    m16 = llama.make_model(c, torch.float16, a.device)
    print(f"prepare_llm: {c} ({c.parameters() / 1e6:.0f}M parameters) on {a.device}", flush=True)
    prompt = llama.prompt_tokens(c, a.prompt)
    tokens, l16 = llama.generate(m16, prompt, a.steps)
    if not a.no_onnx:
        llama.export_onnx(m16, os.path.join(a.out, "model.onnx"))
        print(f"prepare_llm: exported model.onnx ({time.time() - t0:.0f} s)", flush=True)
    check16 = [(n, llama.prompt_tokens(c, n, seed=2 + n)) for n in checks]
    check16 = [(n, p, llama.generate(m16, p, 0)[1][0]) for n, p in check16]
    del m16
    if a.device.startswith("cuda"):
        torch.cuda.empty_cache()
    m32 = llama.make_model(c, torch.float32, a.device)
    _, l32 = llama.generate(m32, prompt, a.steps, forced=tokens)
    check32 = [llama.generate(m32, p, 0)[1][0] for _, p, _ in check16]
    del m32
    with open(os.path.join(a.out, "reference.bin"), "wb") as f:
        f.write(ints([MAGIC, c.vocab, a.prompt, a.steps, len(check16)]))
        f.write(ints(prompt[0].tolist()) + ints(tokens) + floats(l16) + floats(l32))
        for (n, p, x16), x32 in zip(check16, check32):
            f.write(ints([n]) + ints(p[0].tolist()) + floats(x16) + floats(x32))
    for name, split in (("wide", False), ("split", True)):
        with open(os.path.join(a.out, f"{name}.io.json"), "w") as f:
            json.dump(io_description(c, f"{name}.plan", split), f, indent=1)
    noise = (l16 - l32).abs().amax(dim=1)
    margin = l16.topk(2, dim=1).values
    print(f"prepare_llm: eager fp16 vs fp32 logits, max |diff| per step: median {noise.median():.4f}, "
          f"max {noise.max():.4f}; smallest top-2 margin {(margin[:, 0] - margin[:, 1]).min():.4f}; "
          f"{time.time() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
