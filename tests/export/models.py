"""The small models the real-export suite exports, each with what it is
exported with. Deterministic weights (a seeded generator)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch.export import Dim

import etrt_export  # noqa: F401  (registers etrt_test::kv_cache_update)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


class Static(torch.nn.Module):
    """One static delegate: y = x * 3 + b."""

    def __init__(self) -> None:
        super().__init__()
        self.b = torch.nn.Parameter(torch.randn(4, generator=_gen(1)))

    def forward(self, x):
        return x * 3.0 + self.b


class Projection(torch.nn.Module):
    """One dynamic delegate: token embedding, scale, projection with bias (matmul: view/mm/view with a SymInt)."""

    def __init__(self) -> None:
        super().__init__()
        g = _gen(2)
        self.table = torch.nn.Parameter(torch.randn(16, 8, generator=g))
        self.w = torch.nn.Parameter(torch.randn(8, 4, generator=g))
        self.b = torch.nn.Parameter(torch.randn(4, generator=g))

    def forward(self, ids):
        h = torch.nn.functional.embedding(ids, self.table) * 0.5
        return h @ self.w + self.b


class Sandwich(torch.nn.Module):
    """ExecuTorch ops before, between and after two delegates."""

    def __init__(self) -> None:
        super().__init__()
        g = _gen(3)
        self.b0 = torch.nn.Parameter(torch.randn(8, generator=g))
        self.w = torch.nn.Parameter(torch.randn(8, 4, generator=g))
        self.b1 = torch.nn.Parameter(torch.randn(4, generator=g))

    def forward(self, x, y):
        a = torch.sin(x)              # ExecuTorch
        b = a * 2.0 + self.b0         # delegate 0
        c = torch.cos(b)              # ExecuTorch
        d = c @ self.w + self.b1      # delegate 1 (gets the sequence length as a SymInt argument)
        return torch.tanh(d) * y      # ExecuTorch


class BufferAround(torch.nn.Module):
    """A mutable buffer ExecuTorch keeps: the delegate reads it and returns its new value, ExecuTorch copies it back."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("acc", torch.zeros(1, 4))

    def forward(self, x):
        new = self.acc + x
        self.acc.copy_(new)
        return new * 2.0


class KvCache(torch.nn.Module):
    """A mutable buffer updated in place by the delegate's kv_cache_update (TR02 aliased_io), read back through the
    new value. Exported twice: with the buffer around the delegate (ExecuTorch passes it in, and a tensor for its new
    value, which it copies back) and owned by it (ExecuTorch passes neither)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, 16, 4))

    def forward(self, x, pos):
        new = torch.ops.etrt_test.kv_cache_update(self.cache, x, pos)
        self.cache.copy_(new)
        return new * 1.0, x * 2.0


class Accumulator(torch.nn.Module):
    """A mutable buffer with a non-zero initial value whose new value is an output of its own (not in place)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("acc", torch.arange(4, dtype=torch.float32).reshape(1, 4) + 1.0)

    def forward(self, x):
        new = self.acc + x
        self.acc.copy_(new)
        return new * 2.0


class AttentionDecoder(torch.nn.Module):
    """``layers`` attention layers over KV caches, then an LM head: per layer the q, k and v projections, the step's
    keys and values written into the layer's caches in place (etrt_test::kv_cache_update), causal attention over them
    (etrt_test::causal_attention), the output projection and the residual. The caches are mutable buffers ``k<l>``,
    ``v<l>`` (named so that the exporter serializes no initial value: every row a step reads, that step or an earlier
    one wrote), or with ``caches_as_inputs`` the method's inputs, their new values its outputs after the logits.
    Small here; bench/gpu/decoder_state_export.py exports it with 30 layers and 240 MiB of caches."""

    def __init__(self, layers: int = 2, width: int = 8, vocab: int = 16, rows: int = 16,
                 caches_as_inputs: bool = False) -> None:
        super().__init__()
        g = _gen(2212)

        def uniform(r: int, c: int, bound: float) -> torch.nn.Parameter:
            return torch.nn.Parameter((torch.rand(r, c, generator=g) * 2 - 1) * bound)

        self.layers, self.scale, self.caches_as_inputs = layers, 1.0 / width ** 0.5, caches_as_inputs
        self.table = uniform(vocab, width, 1.0)
        self.wq = torch.nn.ParameterList([uniform(width, width, 0.3) for _ in range(layers)])
        self.wk = torch.nn.ParameterList([uniform(width, width, 0.3) for _ in range(layers)])
        self.wv = torch.nn.ParameterList([uniform(width, width, 0.3) for _ in range(layers)])
        self.wo = torch.nn.ParameterList([uniform(width, width, 0.1) for _ in range(layers)])
        self.lm = uniform(width, vocab, 0.3)
        if not caches_as_inputs:
            for l in range(layers):
                self.register_buffer(f"k{l}", torch.zeros(1, rows, width))
                self.register_buffer(f"v{l}", torch.zeros(1, rows, width))

    def forward(self, tokens, pos, caches: Optional[List[torch.Tensor]] = None):
        x = torch.nn.functional.embedding(tokens, self.table)
        new = []
        for l in range(self.layers):
            k_cache = caches[2 * l] if self.caches_as_inputs else getattr(self, f"k{l}")
            v_cache = caches[2 * l + 1] if self.caches_as_inputs else getattr(self, f"v{l}")
            k = torch.ops.etrt_test.kv_cache_update(k_cache, x @ self.wk[l], pos)
            v = torch.ops.etrt_test.kv_cache_update(v_cache, x @ self.wv[l], pos)
            a = torch.ops.etrt_test.causal_attention(x @ self.wq[l], k, v, pos, self.scale)
            x = x + a @ self.wo[l]
            if self.caches_as_inputs:
                new += [k, v]
            else:
                k_cache.copy_(k)
                v_cache.copy_(v)
        logits = x @ self.lm
        return (logits, *new) if self.caches_as_inputs else logits


@dataclass
class Case:
    name: str
    make: Callable[[], torch.nn.Module]
    example: Tuple[Any, ...]
    dynamic_shapes: Optional[Tuple[Any, ...]] = None
    profiles: List[List[int]] = field(default_factory=list)
    own_mutable_buffers: bool = False
    delegates: int = 1


def _ids(n: int) -> torch.Tensor:
    return torch.randint(0, 16, (1, n), generator=_gen(10 + n))


SEQ = Dim("seq", min=1, max=64)

CASES: Dict[str, Case] = {c.name: c for c in [
    Case("static", Static, (torch.randn(1, 4, generator=_gen(4)),)),
    # Overlapping profiles (1..8 and 1..64), so the two auto policies differ.
    Case("projection", Projection, (_ids(5),), ({1: SEQ},), profiles=[[1, 4, 8], [1, 16, 64]]),
    Case("sandwich", Sandwich, (torch.randn(1, 5, 8, generator=_gen(5)), torch.randn(1, 5, 4, generator=_gen(6))),
         ({1: SEQ}, {1: SEQ}), profiles=[[1, 1, 1], [2, 16, 64]], delegates=2),
    Case("buffer_around", BufferAround, (torch.randn(1, 4, generator=_gen(7)),)),
    Case("kv_around", KvCache, (torch.randn(1, 3, 4, generator=_gen(8)), torch.tensor([0])),
         ({1: Dim("seq", min=1, max=8)}, None), profiles=[[1, 1, 1], [2, 4, 8]]),
    Case("kv_owned", KvCache, (torch.randn(1, 3, 4, generator=_gen(8)), torch.tensor([0])),
         ({1: Dim("seq", min=1, max=8)}, None), profiles=[[1, 1, 1], [2, 4, 8]], own_mutable_buffers=True),
    Case("acc_owned", Accumulator, (torch.randn(1, 4, generator=_gen(7)),), own_mutable_buffers=True),
    # Two attention layers over KV caches, the caches kept by the program or by the delegate.
    Case("attention_around", AttentionDecoder, (_ids(3), torch.tensor([0])), ({1: Dim("seq", min=1, max=8)}, None),
         profiles=[[1, 1, 1], [2, 4, 8]]),
    Case("attention_owned", AttentionDecoder, (_ids(3), torch.tensor([0])), ({1: Dim("seq", min=1, max=8)}, None),
         profiles=[[1, 1, 1], [2, 4, 8]], own_mutable_buffers=True),
    # Disjoint profiles, one token and 2..64 tokens: decode and prefill, each on its own profile.
    Case("decode_prefill", Projection, (_ids(5),), ({1: SEQ},), profiles=[[1, 1, 1], [2, 16, 64]]),
    # Exported with seq <= 32: ExecuTorch plans 32 rows, the engine's profile 1 goes to 64.
    Case("bound_too_small", Projection, (_ids(5),), ({1: Dim("seq", min=1, max=32)},),
         profiles=[[1, 4, 8], [1, 16, 64]]),
]}
