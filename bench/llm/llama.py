"""A Llama-architecture decoder at a small real model's size, for the real-TensorRT benchmark (docs/real-llm.md).

RMSNorm, rotary positions, grouped-query attention, a SwiGLU MLP and a separate LM head, in fp16, with
deterministic random weights (a seeded generator: nothing is downloaded). Its KV cache has a static size and is
written at the step's positions; it is passed in and returned (TensorRT 8.6 has no in-place cache update):

    forward(tokens int32 [1, S], start_pos int32 [1], k_cache, v_cache fp16 [L, KVH, T, D])
        -> logits float32 [1, V] (the last position's), k_cache_out, v_cache_out (fp16 [L, KVH, T, D])

The token at tokens[0, s] sits at position start_pos + s; it attends to every cache row at a position <= its own.
Attention runs in float32 (scores, softmax and the weighted sum): TensorRT 8.6's fused fp16 attention kernel fails
on the H200 for sequences of 64 tokens or more (docs/real-llm.md), and float32 attention is not fused into it.

The same code is the eager reference (the runner's logits are compared with it) and what is exported to ONNX.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Tuple

import torch
from torch import nn


@dataclasses.dataclass(frozen=True)
class Config:
    vocab: int = 32000
    hidden: int = 2048
    layers: int = 16
    heads: int = 32
    kv_heads: int = 8
    intermediate: int = 5632
    max_seq: int = 2048  # T: cache rows, and the longest prompt
    rope_theta: float = 10000.0
    rms_eps: float = 1e-5
    seed: int = 0

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def parameters(self) -> int:
        d, kv = self.hidden, self.kv_heads * self.head_dim
        per_layer = d * d * 2 + d * kv * 2 + 3 * d * self.intermediate + 2 * d
        return self.vocab * d * 2 + self.layers * per_layer + d


# The CI smoke size: the same architecture, a few kilobytes of weights.
SMALL = Config(vocab=64, hidden=32, layers=2, heads=4, kv_heads=2, intermediate=48, max_seq=64)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return x32.to(x.dtype) * self.weight


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Layer(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        d, hd = c.hidden, c.head_dim
        self.c = c
        self.attn_norm = RMSNorm(d, c.rms_eps)
        self.q = nn.Linear(d, c.heads * hd, bias=False)
        self.k = nn.Linear(d, c.kv_heads * hd, bias=False)
        self.v = nn.Linear(d, c.kv_heads * hd, bias=False)
        self.o = nn.Linear(c.heads * hd, d, bias=False)
        self.mlp_norm = RMSNorm(d, c.rms_eps)
        self.gate = nn.Linear(d, c.intermediate, bias=False)
        self.up = nn.Linear(d, c.intermediate, bias=False)
        self.down = nn.Linear(c.intermediate, d, bias=False)

    def forward(self, x, cos, sin, index, mask, k_cache, v_cache):
        c, s = self.c, x.shape[1]
        hd, group = c.head_dim, c.heads // c.kv_heads
        h = self.attn_norm(x)
        q = self.q(h).view(1, s, c.heads, hd).transpose(1, 2)  # [1, H, S, D]
        k = self.k(h).view(1, s, c.kv_heads, hd).transpose(1, 2)  # [1, KVH, S, D]
        v = self.v(h).view(1, s, c.kv_heads, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        # The step's rows into this layer's cache at their positions.
        k_cache = k_cache.scatter(1, index, k[0])  # [KVH, T, D]
        v_cache = v_cache.scatter(1, index, v[0])
        # Grouped-query attention over every cache row, in float32: query head h reads key/value head h // group.
        qg = q.reshape(1, c.kv_heads, group, s, hd).float()
        keys = k_cache.float().unsqueeze(1).unsqueeze(0)  # [1, KVH, 1, T, D]
        values = v_cache.float().unsqueeze(1).unsqueeze(0)
        scores = torch.matmul(qg, keys.transpose(-1, -2)) * (1.0 / math.sqrt(hd)) + mask  # [1, KVH, G, S, T]
        out = torch.matmul(torch.softmax(scores, dim=-1), values)  # [1, KVH, G, S, D]
        out = out.to(x.dtype).reshape(1, c.heads, s, hd).transpose(1, 2).reshape(1, s, c.heads * hd)
        x = x + self.o(out)
        h = self.mlp_norm(x)
        x = x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))
        return x, k_cache, v_cache


class Llama(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(c.vocab, c.hidden)
        self.layers = nn.ModuleList(Layer(c) for _ in range(c.layers))
        self.norm = RMSNorm(c.hidden, c.rms_eps)
        self.lm_head = nn.Linear(c.hidden, c.vocab, bias=False)
        inv = 1.0 / (c.rope_theta ** (torch.arange(0, c.head_dim, 2, dtype=torch.float64) / c.head_dim))
        angles = torch.outer(torch.arange(c.max_seq, dtype=torch.float64), inv)
        angles = torch.cat((angles, angles), dim=-1)  # [T, D]
        self.register_buffer("cos_table", angles.cos().float(), persistent=False)
        self.register_buffer("sin_table", angles.sin().float(), persistent=False)
        self.register_buffer("key_positions", torch.arange(c.max_seq, dtype=torch.int32), persistent=False)

    def forward(self, tokens, start_pos, k_cache, v_cache) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        c, s = self.c, tokens.shape[1]
        dtype = self.embed.weight.dtype
        pos = start_pos + torch.arange(s, dtype=torch.int32, device=tokens.device)  # [S]
        cos = self.cos_table.index_select(0, pos).to(dtype)  # [S, D], broadcast over [1, heads, S, D]
        sin = self.sin_table.index_select(0, pos).to(dtype)
        allowed = self.key_positions.unsqueeze(0) <= pos.unsqueeze(1)  # [S, T]
        mask = torch.where(allowed, torch.zeros((), device=tokens.device),
                           torch.full((), -1e9, device=tokens.device))
        index = pos.long().view(1, s, 1).expand(c.kv_heads, s, c.head_dim)
        x = self.embed(tokens)
        ks, vs = [], []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, cos, sin, index, mask, k_cache[i], v_cache[i])
            ks.append(k)
            vs.append(v)
        last = self.norm(x[:, s - 1:, :])
        logits = self.lm_head(last).float().reshape(1, c.vocab)
        return logits, torch.stack(ks), torch.stack(vs)

    def empty_cache(self, device=None) -> torch.Tensor:
        c = self.c
        return torch.zeros(c.layers, c.kv_heads, c.max_seq, c.head_dim, dtype=self.embed.weight.dtype,
                           device=device)


def make_model(c: Config, dtype=torch.float16, device="cpu") -> Llama:
    """The model with its deterministic random weights: the same for a given config on every machine (drawn in
    float32 on the CPU from one seeded generator, then converted). Linear weights N(0, 0.02); the LM head's are
    scaled so the logits spread over a few units, which keeps greedy choices clear of fp16 near-ties."""
    gen = torch.Generator().manual_seed(c.seed)
    model = Llama(c)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif name == "lm_head.weight":
                p.copy_(torch.randn(p.shape, generator=gen) * (3.0 / math.sqrt(c.hidden)))
            elif name == "embed.weight":
                p.copy_(torch.randn(p.shape, generator=gen))
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)
    return model.to(device=device, dtype=dtype).eval()


def prompt_tokens(c: Config, length: int, seed: int = 1) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, c.vocab, (1, length), generator=gen, dtype=torch.int64).to(torch.int32)


@torch.no_grad()
def generate(model: Llama, prompt: torch.Tensor, steps: int, forced=None):
    """A prefill of `prompt` then `steps` greedy decode steps, the caches fed back. Returns (tokens fed to the
    decode steps, logits of every execution [1 + steps, V]). With `forced` (a list of tokens), those are fed
    instead of the model's own choices (teacher forcing, so two implementations are compared step by step)."""
    dev = model.embed.weight.device
    k, v = model.empty_cache(dev), model.empty_cache(dev)
    logits, k, v = model(prompt.to(dev), torch.zeros(1, dtype=torch.int32, device=dev), k, v)
    out, fed = [logits[0].float().cpu()], []
    pos = prompt.shape[1]
    for i in range(steps):
        token = int(forced[i]) if forced is not None else int(out[-1].argmax())
        fed.append(token)
        t = torch.tensor([[token]], dtype=torch.int32, device=dev)
        logits, k, v = model(t, torch.tensor([pos], dtype=torch.int32, device=dev), k, v)
        out.append(logits[0].float().cpu())
        pos += 1
    return fed, torch.stack(out)


def export_onnx(model: Llama, path: str, example_len: int = 8) -> None:
    """ONNX for NVIDIA's parser: opset 17, the sequence axis of `tokens` dynamic, everything else static."""
    c = model.c
    dev = model.embed.weight.device
    args = (prompt_tokens(c, example_len).to(dev), torch.zeros(1, dtype=torch.int32, device=dev),
            model.empty_cache(dev), model.empty_cache(dev))
    torch.onnx.export(model, args, path, input_names=["tokens", "start_pos", "k_cache", "v_cache"],
                      output_names=["logits", "k_cache_out", "v_cache_out"], dynamic_axes={"tokens": {1: "seq"}},
                      opset_version=17, do_constant_folding=True, dynamo=False)
