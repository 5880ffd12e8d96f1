"""The export side of the real-export suite: ExecuTorch's own pipeline
(torch.export -> to_edge -> to_backend -> to_executorch) with a test
partitioner whose backend id is "TensorRTBackend".

``TensorRTBackend.preprocess`` translates each partition's edge graph into
an engine of etrt's GPU-free NvInfer implementation that computes the same
function (``etrt.engine_builder``), with the optimization profiles the
partitioner asks for, and wraps it in a TR01/TR02 blob (``etrt.blob``) with
the canonical profile signature (``etrt.signature``) -- what Torch-TensorRT
does with a TensorRT engine. The partitioner's ``own_mutable_buffers`` is the
choice between caches the program keeps (default) and caches the delegate
owns (``tag_mutated_buffer``; the blob's ``delegate_state``, written by
``etrt.state.delegate_states``, initial values as named data). Edge ops it translates:

    aten.embedding            -> embedding
    aten.mul.Tensor/.Scalar   -> scale          (by a scalar constant)
    aten.add.Tensor           -> add            (same shapes) or bias add (a 1-D constant)
    aten.mm                   -> matmul         (by a 2-D constant)
    aten.view_copy            -> nothing        (a view that keeps the last dim: the engine ops only care about it)
    etrt_test.kv_cache_update -> kv_cache_update (in place: its output shares the cache input's memory, TR02
                                                  aliased_io kind kv_cache_update)
    etrt_test.causal_attention -> causal_attention (queries at positions start.., keys and values rows 0..)

Anything else stays with ExecuTorch. Only tests use this; it is not part of
the etrt package.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from executorch.exir.backend.compile_spec_schema import CompileSpec
from executorch.exir.backend.partitioner import DelegationSpec, Partitioner, PartitionResult
from executorch.exir.backend.utils import tag_constant_data, tag_mutated_buffer
from executorch.exir.dialects._ops import ops as exir_ops
from torch.export import ExportedProgram
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from etrt import blob
from etrt.engine_builder import EngineBuilder
from etrt.profiling import debug_handle_map
from etrt.signature import Signature
from etrt.state import delegate_states

BACKEND_ID = "TensorRTBackend"
#: compile spec the partitioner hands preprocess: {"dim": name, "profiles": [[min, opt, max], ...]}
PROFILES_SPEC = "etrt_test_profiles"

_DTYPES = {torch.float32: "float32", torch.int64: "int64", torch.int32: "int32"}


# ---------------------------------------------------------------------------
# A custom op for an in-place cache update, like TensorRT's IKVCacheUpdateLayer


@torch.library.custom_op("etrt_test::kv_cache_update", mutates_args=())
def kv_cache_update(cache: torch.Tensor, update: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
    """``cache`` [B, T, D] with rows start[b] .. start[b] + S - 1 of batch b replaced by ``update`` [B, S, D]."""
    out = cache.clone()
    for b in range(cache.shape[0]):
        s = int(start[b])
        out[b, s:s + update.shape[1]] = update[b]
    return out


@kv_cache_update.register_fake
def _(cache, update, start):
    return torch.empty_like(cache)


@torch.library.custom_op("etrt_test::causal_attention", mutates_args=())
def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, start: torch.Tensor,
                     scale: float) -> torch.Tensor:
    """Query s of batch b (at position start[b] + s) attends over keys and values rows 0 .. start[b] + s:
    ``q`` [B, S, D], ``k`` [B, T, D], ``v`` [B, T, E] -> [B, S, E]; the GPU-free NvInfer's causal_attention."""
    out = torch.empty(q.shape[0], q.shape[1], v.shape[2], dtype=q.dtype)
    for b in range(q.shape[0]):
        s0 = int(start[b])
        for s in range(q.shape[1]):
            rows = s0 + s + 1
            weights = torch.softmax((k[b, :rows] @ q[b, s]) * scale, dim=0)
            out[b, s] = weights @ v[b, :rows]
    return out


@causal_attention.register_fake
def _(q, k, v, start, scale):
    return q.new_empty(q.shape[0], q.shape[1], v.shape[2])


# ---------------------------------------------------------------------------
# Which edge nodes an engine can compute


def _target(node: torch.fx.Node):
    return node.target if node.op == "call_function" else None


_EDGE = exir_ops.edge
_EMBEDDING = _EDGE.aten.embedding.default
_MUL_TENSOR = _EDGE.aten.mul.Tensor
_MUL_SCALAR = _EDGE.aten.mul.Scalar
_ADD = _EDGE.aten.add.Tensor
_MM = _EDGE.aten.mm.default
_VIEW = _EDGE.aten.view_copy.default
_KV = _EDGE.etrt_test.kv_cache_update.default
_ATTENTION = _EDGE.etrt_test.causal_attention.default


def _meta(node) -> Optional[torch.Tensor]:
    v = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return v if isinstance(v, torch.Tensor) else None


def _is_constant_input(ep: ExportedProgram, node) -> bool:
    if not isinstance(node, torch.fx.Node) or node.op != "placeholder":
        return False
    sig = ep.graph_signature
    mutated = set(sig.buffers_to_mutate.values())
    return (node.name in sig.inputs_to_parameters or node.name in sig.inputs_to_lifted_tensor_constants
            or (node.name in sig.inputs_to_buffers and sig.inputs_to_buffers[node.name] not in mutated))


def _constant_value(ep: ExportedProgram, node: torch.fx.Node) -> torch.Tensor:
    sig = ep.graph_signature
    if node.name in sig.inputs_to_parameters:
        return ep.state_dict[sig.inputs_to_parameters[node.name]]
    if node.name in sig.inputs_to_buffers:
        target = sig.inputs_to_buffers[node.name]
        return ep.state_dict[target] if target in ep.state_dict else ep.constants[target]
    return ep.constants[sig.inputs_to_lifted_tensor_constants[node.name]]


class _Supported(OperatorSupportBase):
    """The nodes the translator can compute (and the test allows)."""

    def __init__(self, ep: ExportedProgram, allow: Optional[Callable[[torch.fx.Node], bool]]) -> None:
        self.ep = ep
        self.allow = allow

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        if self.allow is not None and not self.allow(node):
            return False
        t = _target(node)
        val = _meta(node)
        if t is None or val is None or val.dtype not in _DTYPES:
            return False
        const = lambda n: _is_constant_input(self.ep, n)  # noqa: E731
        if t == _EMBEDDING:
            return const(node.args[0]) and _meta(node.args[0]).dim() == 2
        if t == _MUL_TENSOR:
            other = node.args[1]
            return val.dtype == torch.float32 and const(other) and _meta(other).numel() == 1
        if t == _MUL_SCALAR:
            return val.dtype == torch.float32 and isinstance(node.args[1], (int, float))
        if t == _ADD:
            if node.kwargs.get("alpha", 1) != 1 or val.dtype != torch.float32:
                return False
            a, b = node.args[0], node.args[1]
            if const(b) and _meta(b).dim() == 1:
                return True
            return (not const(a) and not const(b) and isinstance(a, torch.fx.Node) and isinstance(b, torch.fx.Node)
                    and list(_meta(a).shape) == list(_meta(b).shape))
        if t == _MM:
            return const(node.args[1]) and _meta(node.args[1]).dim() == 2
        if t == _VIEW:
            src = _meta(node.args[0])
            return src is not None and src.shape[-1] == val.shape[-1]
        if t in (_KV, _ATTENTION):
            return True
        return False


class EtrtTestPartitioner(Partitioner):
    """Tags connected groups of translatable nodes for "TensorRTBackend".

    ``profiles``: the optimization profiles every engine gets, as
    ``[min, opt, max]`` ranges of the program's one dynamic dimension
    (named ``dim``; a static engine gets one profile). ``allow`` restricts the
    nodes that may be delegated. ``own_mutable_buffers`` moves a mutable buffer
    into the delegate that updates it (``tag_mutated_buffer``). ``cuda_engine``: True, engines of the
    GPU-free NvInfer's CUDA mode without placing the delegate's IO on the device; False, host engines even behind a
    ``target_device`` compile spec (a program the runtime refuses: tests/export/device_placed.py); None (default),
    CUDA mode exactly when ``extra_specs`` hold a CUDA ``target_device``."""

    def __init__(self, profiles: Sequence[Sequence[int]] = (), dim: str = "seq",
                 allow: Optional[Callable[[torch.fx.Node], bool]] = None, own_mutable_buffers: bool = False,
                 extra_specs: Sequence[CompileSpec] = (), cuda_engine: Optional[bool] = None) -> None:
        super().__init__()
        spec = json.dumps({"dim": dim, "profiles": [list(p) for p in profiles], "cuda_engine": cuda_engine}).encode()
        self.delegation_spec = DelegationSpec(BACKEND_ID, [CompileSpec(PROFILES_SPEC, spec), *extra_specs])
        self.allow = allow
        self.own_mutable_buffers = own_mutable_buffers

    def partition(self, exported_program: ExportedProgram) -> PartitionResult:
        partitioner = CapabilityBasedPartitioner(exported_program.graph_module,
                                                 _Supported(exported_program, self.allow),
                                                 allows_single_node_partition=True)
        tags = {}
        for partition in partitioner.propose_partitions():
            tag = f"etrt_{partition.id}"
            for node in partition.nodes:
                node.meta["delegation_tag"] = tag
            tags[tag] = self.delegation_spec
        tag_constant_data(exported_program)
        if self.own_mutable_buffers:
            tag_mutated_buffer(exported_program)
        return PartitionResult(tagged_exported_program=exported_program, partition_tags=tags)


# ---------------------------------------------------------------------------
# preprocess: the partition's graph -> a GPU-free NvInfer engine -> a TR01/TR02 blob


class TranslationError(ValueError):
    pass


def _dims(val: torch.Tensor, dim_symbol: Dict[str, str]) -> Tuple[List[int], List[int]]:
    """The declared shape (-1 for a symbolic dim) and the indices of the symbolic dims."""
    shape, dynamic = [], []
    for i, d in enumerate(val.shape):
        if isinstance(d, torch.SymInt):
            expr = d.node.expr
            if not expr.is_Symbol:
                raise TranslationError(f"dim {i} is {expr}: only a bare dynamic dimension is translated")
            dim_symbol.setdefault(str(expr), str(expr))
            shape.append(-1)
            dynamic.append(i)
        else:
            shape.append(int(d))
    return shape, dynamic


@dataclass
class Translation:
    engine: bytes
    metadata: blob.Metadata
    inputs: List[str] = field(default_factory=list)
    outputs: List[str] = field(default_factory=list)
    named_data: Dict[str, bytes] = field(default_factory=dict)  # initial values of delegate-owned state


def translate(ep: ExportedProgram, label: str, profiles: List[List[int]], dim_name: str,
              cuda_mode: bool = False) -> Translation:
    """The engine and blob metadata computing the partition ``ep``; ``cuda_mode``: an engine of the GPU-free
    NvInfer's CUDA mode (runs on the device, as a TensorRT engine does)."""
    gm = ep.graph_module
    b = EngineBuilder(label, cuda_mode=cuda_mode)
    names: Dict[torch.fx.Node, str] = {}  # node -> engine tensor it is
    inputs: List[Tuple[str, List[int], List[int], str]] = []
    symbols: Dict[str, str] = {}
    constants_added = set()
    sig = ep.graph_signature
    mutated = {out: buf for out, buf in sig.buffers_to_mutate.items()}  # output node name -> buffer FQN

    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        val = _meta(node)
        if val is None or _is_constant_input(ep, node):
            continue  # a SymInt argument (the engine gets shapes from its inputs) or a constant, added when used
        shape, dynamic = _dims(val, symbols)
        b.add_input(node.name, _DTYPES[val.dtype], shape)
        names[node] = node.name
        inputs.append((node.name, shape, dynamic, _DTYPES[val.dtype]))

    output_node = next(n for n in gm.graph.nodes if n.op == "output")
    results = list(output_node.args[0])
    output_names = {}
    for i, r in enumerate(results):
        output_names[r] = f"out{i}_{r.name}"
    # Outputs are declared in the order ExecuTorch passes them (the output node's), before any op runs.
    for r in results:
        val = _meta(r)
        shape, _ = _dims(val, symbols)
        b.add_output(output_names[r], _DTYPES[val.dtype], shape)
    if len(set(symbols)) > 1:
        raise TranslationError(f"the partition has {len(symbols)} dynamic dims {sorted(symbols)}; one is translated")

    def constant(node: torch.fx.Node) -> str:
        if node.name not in constants_added:
            value = _constant_value(ep, node).detach().to(torch.float32)
            b.add_constant(node.name, list(value.shape), value.reshape(-1).tolist())
            constants_added.add(node.name)
        return node.name

    aliases: List[blob.AliasedIo] = []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        t = _target(node)
        if t == _VIEW:
            names[node] = names[node.args[0]]
            continue
        out = output_names.get(node, f"t_{node.name}")
        if t == _EMBEDDING:
            b.embedding(names[node.args[1]], constant(node.args[0]), out)
        elif t == _MUL_TENSOR:
            b.scale(names[node.args[0]], float(_constant_value(ep, node.args[1]).reshape(-1)[0]), out)
        elif t == _MUL_SCALAR:
            b.scale(names[node.args[0]], float(node.args[1]), out)
        elif t == _ADD:
            a, c = node.args[0], node.args[1]
            if _is_constant_input(ep, c):
                b.add(names[a], constant(c), out)
            else:
                b.add(names[a], names[c], out)
        elif t == _MM:
            b.matmul(names[node.args[0]], constant(node.args[1]), out)
        elif t == _KV:
            cache, update, start = node.args
            if node not in output_names:
                raise TranslationError("a kv_cache_update result must be a partition output (it is in place)")
            b.kv_cache_update(names[cache], names[update], names[start], out)
            aliases.append(blob.AliasedIo(output=out, input=names[cache], kind=blob.ALIAS_KIND_KV_CACHE_UPDATE))
        elif t == _ATTENTION:
            q, k, v, start, scale = node.args
            b.causal_attention(names[q], names[k], names[v], names[start], float(scale), out)
        else:
            raise TranslationError(f"no engine op for {node.format_node()}")
        names[node] = out

    # An output that is a view of another engine tensor would need a copy.
    for r in results:
        if r.op == "call_function" and _target(r) == _VIEW:
            b.identity(names[r.args[0]], output_names[r])

    dynamic_inputs = [(n, s, d) for n, s, d, _ in inputs if d]
    if dynamic_inputs and not profiles:
        raise TranslationError(f"inputs {[n for n, _, _ in dynamic_inputs]} are dynamic: give the partitioner profiles")
    n_profiles = len(profiles) if dynamic_inputs else 1
    bounds = {}
    for name, shape, dynamic, _ in inputs:
        per_profile = []
        for p in range(n_profiles):
            if not dynamic:
                per_profile.append((shape, shape, shape))
                continue
            lo, opt, hi = profiles[p]
            per_profile.append(tuple([v if i in dynamic else d for i, d in enumerate(shape)] for v in (lo, opt, hi)))
        bounds[name] = per_profile
    if dynamic_inputs:
        for p, _ in enumerate(profiles):
            b.add_profile()
            for name, per_profile in bounds.items():
                b.set_profile_shape(p, name, *per_profile[p])
    signature = Signature.from_bounds(
        bounds, symbolic_dims={dim_name: [(n, d) for n, _, dims in dynamic_inputs for d in dims]} if dynamic_inputs
        else None)

    engine = b.build()
    io = [blob.IoBinding(n, dt, s, True) for n, s, _, dt in inputs]
    for r in results:
        val = _meta(r)
        shape, _ = _dims(val, {})
        io.append(blob.IoBinding(output_names[r], _DTYPES[val.dtype], shape, False))
    # Buffers ExecuTorch moved into the partition (the partitioner's tag_mutated_buffer) are the delegate's own.
    states, named_data = delegate_states(ep, {n: n for n, _, _, _ in inputs},
                                         {r.name: output_names[r] for r in results})
    metadata = blob.Metadata(io_bindings=io, aliased_io=aliases, profile_signature=signature.to_blob(),
                             delegate_state=states)
    return Translation(engine, metadata, [n for n, _, _, _ in inputs], [output_names[r] for r in results],
                       named_data)


class TensorRTBackend(BackendDetails):
    """The test exporter's backend: what ExecuTorch's to_backend calls for "TensorRTBackend" partitions."""

    #: every translation preprocess made, for the tests to look at
    translations: List[Translation] = []

    @staticmethod
    def preprocess(edge_program: ExportedProgram, compile_specs: List[CompileSpec]) -> PreprocessResult:
        spec = next((s for s in compile_specs if s.key == PROFILES_SPEC), None)
        options = json.loads(bytes(spec.value)) if spec is not None else {"dim": "seq", "profiles": []}
        label = f"partition{len(TensorRTBackend.translations)}"
        # Torch-TensorRT's target_device (cuda:<n>): the delegate's IO is placed on the device, so the engine runs
        # there too.
        device = next((bytes(s.value).decode() for s in compile_specs if s.key == "target_device"), "")
        explicit = options.get("cuda_engine")
        cuda_mode = device.startswith("cuda") if explicit is None else bool(explicit)
        t = translate(edge_program, label, options["profiles"], options["dim"], cuda_mode=cuda_mode)
        TensorRTBackend.translations.append(t)
        store = None
        if t.named_data:
            from executorch.exir._serialize._named_data_store import NamedDataStore
            named = NamedDataStore()
            for key, value in t.named_data.items():
                named.add_named_data(key, value)
            store = named.get_named_data_store_output()
        # The delegate's events (docs/profiling.md), each mapped to the partition's nodes for the Inspector.
        return PreprocessResult(processed_bytes=blob.write_blob(t.metadata, t.engine), data_store_output=store,
                                debug_handle_map=debug_handle_map(edge_program))
