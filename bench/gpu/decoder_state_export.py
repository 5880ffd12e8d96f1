"""The programs of etrt_bench_gpu_decoder_state: one 30-layer decoder exported three ways with ExecuTorch's own
pipeline (tests/export's test partitioner; engines of the GPU-free NvInfer's CUDA mode), so one run on a GPU can set
the three ways a KV cache reaches the engine side by side (docs/gpu-testing.md, "Figures"; the runs in docs/runs/):

    program   the caches are the program's mutable buffers and the delegate's IO is placed on the device
              (target_device=cuda:0, what Torch-TensorRT's partitioner always adds): ExecuTorch copies each cache
              to the device before the call and its new value back after it (et_copy::_h2d_copy / _d2h_copy), then
              copy_'s it into the buffer -- Torch-TensorRT's export shape
    runner    the caches are the method's inputs and outputs (not memory-planned); the runner keeps them in
              device memory and passes the same memory for both, so the engine updates them in place (aliased_io)
    delegate  the partitioner hands the buffers to the delegate (tag_mutated_buffer): etrt keeps them in device
              memory it allocates at load (the blob's delegate_state); the call passes neither

The model is tests/export's AttentionDecoder (each layer: q, k, v projections, the step's keys and values written
into the layer's caches in place, causal attention over them, output projection and residual; then the LM head)
with 30 layers. Tokens and logits stay in host memory in every program.

    .venv-export/bin/python bench/gpu/decoder_state_export.py OUT_DIR

writes OUT_DIR/{program,runner,delegate}.pte, the token sequence, and the eager model's logits for it
(reference.bin, float32) with manifest.json describing them.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import List

import torch
from torch.export import Dim

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "export"))

import harness  # noqa: E402
from models import AttentionDecoder, Case  # noqa: E402

LAYERS = 30
WIDTH = 64  # hidden size = head width (one head)
VOCAB = 128
ROWS = 16384  # cache rows: 60 caches of ROWS x WIDTH float32 = 240 MiB
PROMPT = 48
DECODE_STEPS = 64
PROFILES = [[1, 1, 1], [2, 32, 64]]  # decode, prefill
SEQ = Dim("seq", min=1, max=64)


def _model(caches_as_inputs: bool = False) -> AttentionDecoder:
    return AttentionDecoder(layers=LAYERS, width=WIDTH, vocab=VOCAB, rows=ROWS, caches_as_inputs=caches_as_inputs)


def _sequence() -> List[int]:
    g = torch.Generator().manual_seed(31)
    return torch.randint(0, VOCAB, (PROMPT + DECODE_STEPS,), generator=g).tolist()


def _reference(tokens: List[int]) -> torch.Tensor:
    """The eager model's logits: the prompt's last row, then each decode step's (teacher-forced), [1 + steps, V]."""
    model = _model().eval()
    rows = []
    with torch.no_grad():
        out = model(torch.tensor([tokens[:PROMPT]]), torch.tensor([0]))
        rows.append(out[0, -1])
        for i in range(DECODE_STEPS):
            out = model(torch.tensor([[tokens[PROMPT + i]]]), torch.tensor([PROMPT + i]))
            rows.append(out[0, -1])
    return torch.stack(rows)


def main(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    example = (torch.zeros(1, 3, dtype=torch.long), torch.tensor([0]))
    caches = [torch.zeros(1, ROWS, WIDTH) for _ in range(2 * LAYERS)]
    cases = {
        "program": (Case("program", _model, example, ({1: SEQ}, None), profiles=PROFILES), "cuda:0", False),
        "runner": (Case("runner", functools.partial(_model, True), (*example, caches), ({1: SEQ}, None, [None] * len(caches)),
                        profiles=PROFILES), None, True),
        "delegate": (Case("delegate", _model, example, ({1: SEQ}, None), profiles=PROFILES,
                          own_mutable_buffers=True), None, True),
    }
    for name, (case, device, cuda_engine) in cases.items():
        harness.export_case(case, out_dir, target_device=device, cuda_engine=cuda_engine, plan_io=name != "runner")
        print(f"wrote {out_dir / (name + '.pte')} ({(out_dir / (name + '.pte')).stat().st_size} bytes)")
    tokens = _sequence()
    reference = _reference(tokens)
    (out_dir / "reference.bin").write_bytes(reference.to(torch.float32).numpy().tobytes())
    manifest = {"layers": LAYERS, "width": WIDTH, "vocab": VOCAB, "rows": ROWS, "prompt": PROMPT,
                "decode_steps": DECODE_STEPS, "tokens": tokens, "reference": "reference.bin",
                "reference_rows": int(reference.shape[0]), "cache_bytes": 2 * LAYERS * ROWS * WIDTH * 4}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"wrote {out_dir / 'manifest.json'}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
