"""The decoded engine (:class:`GpufreeEngine`, :class:`GpufreeTensor`,
:class:`GpufreeOp`) and :func:`read_gpufree_engine`, which asks the
runtime's deserializer (the GPU-free NvInfer's ``deserialize_model`` and
memory plan, through libetrt_tools' ``etrt_engine_describe``) and builds one from
its answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..signature import Bounds, InputSignature, Signature
from .format import OP_KINDS, OP_KV_CACHE_UPDATE, GpufreeEngineError, Shape, is_gpufree_engine


@dataclass(frozen=True)
class GpufreeTensor:
    name: str
    is_input: bool
    is_shape_tensor: bool
    dtype: str
    shape: Tuple[int, ...]  # -1 marks a dynamic dim
    on_host: bool = False  # getTensorLocation says kHOST (IO flags bit 1)
    data_dependent: bool = False  # an output whose dynamic dims depend on input values (IO flags bit 2)


@dataclass(frozen=True)
class GpufreeOp:
    """One op of the engine's table. Operands are tensor ids (IO tensors, then
    constants, then intermediates); -1 marks an unused operand."""

    kind: int
    a: int
    b: int
    c: int
    d: int
    out: int
    factor: float

    @property
    def kind_name(self) -> str:
        return OP_KINDS.get(self.kind, f"unknown kind {self.kind}")


@dataclass(frozen=True)
class GpufreeEngine:
    """What ``read_gpufree_engine`` decodes. ``profiles[p][k]`` is the
    bounds of the k-th input (in IO order) under profile ``p``."""

    version: int
    size: int
    label: str
    tracing: bool
    switch_cost_ns: int
    requested_device_memory: int
    io: Tuple[GpufreeTensor, ...]
    num_constants: int
    num_intermediates: int
    profiles: Tuple[Tuple[Bounds, ...], ...]
    #: flags bit 1: a CUDA-mode engine (its tensors and weights live in device memory)
    cuda_mode: bool = False
    #: flags bit 2: built for weight streaming (getStreamableWeightsSize() > 0)
    streamable_weights: bool = False
    #: not flags bit 3: execution contexts share optimization profiles (TensorRT 10 and later, 8.6 with
    #: kPROFILE_SHARING_0806); False for an engine built for 8.6 without it
    profile_sharing: bool = True
    ops: Tuple[GpufreeOp, ...] = ()
    constant_names: Tuple[str, ...] = ()
    intermediate_names: Tuple[str, ...] = ()
    constant_shapes: Tuple[Shape, ...] = ()
    intermediate_dtypes: Tuple[str, ...] = ()
    #: getDeviceMemorySizeV2(): the scratch one context needs (max of the request and the intermediates' plan)
    device_memory_size: int = 0
    #: per profile, {"min": {output: shape}, "max": {...}}: what output_shapes returns
    produced: Tuple[Dict[str, Dict[str, Shape]], ...] = field(default=(), repr=False, compare=False)
    _index: Dict[str, object] = field(default_factory=dict, init=False, repr=False, compare=False)

    def _lookup(self, key: str):
        cache = self._index
        if key not in cache:
            if key == "io":
                cache[key] = {t.name: k for k, t in enumerate(self.io)}
            elif key == "names":
                cache[key] = [t.name for t in self.io] + list(self.constant_names) + list(self.intermediate_names)
            elif key == "aliases":
                alias: Dict[int, int] = {}
                for op in self.ops:
                    if op.kind == OP_KV_CACHE_UPDATE:
                        alias[op.out] = op.a
                cache[key] = alias
        return cache[key]

    @property
    def inputs(self) -> List[GpufreeTensor]:
        return [t for t in self.io if t.is_input]

    @property
    def outputs(self) -> List[GpufreeTensor]:
        return [t for t in self.io if not t.is_input]

    @property
    def num_profiles(self) -> int:
        return len(self.profiles)

    def tensor(self, name: str) -> Optional[GpufreeTensor]:
        """The IO tensor called ``name``, or None."""
        k = self._lookup("io").get(name)
        return None if k is None else self.io[k]

    def tensor_name(self, tensor_id: int) -> str:
        """The name of tensor ``tensor_id`` in the ops' id space."""
        names = self._lookup("names")
        return names[tensor_id] if 0 <= tensor_id < len(names) else f"#{tensor_id}"

    def aliased_input(self, output_name: str) -> Optional[str]:
        """The IO input that IO output ``output_name`` is written into in place
        (operand a of the kv_cache_update op writing it; TensorRT's
        ``getAliasedInputTensor``), or None when no such op writes it."""
        k = self._lookup("io").get(output_name)
        if k is None or self.io[k].is_input:
            return None
        a = self._lookup("aliases").get(k)
        return None if a is None else self.io[a].name

    def aliases(self) -> Dict[str, str]:
        """``{output: input}`` for every IO output the engine writes in place into an input."""
        return {self.io[out].name: self.io[a].name for out, a in sorted(self._lookup("aliases").items())}

    def to_signature(self) -> Signature:
        """The engine's profiles as a :class:`Signature` (no named symbolic dims:
        the engine does not know them)."""
        names = [t.name for t in self.inputs]
        return Signature(self.num_profiles, tuple(
            InputSignature(n, tuple(self.profiles[p][k] for p in range(self.num_profiles)))
            for k, n in enumerate(names)))

    def output_shapes(self, profile: int, which: str = "max") -> Dict[str, Shape]:
        """``{output name: shape}`` the engine produces with every input at
        profile ``profile``'s ``which`` ("min" or "max") shape, as the runtime's
        shape inference computed it when it read the engine. Every op's output
        dims are copies of input dims or constants', so at "max" these are the
        largest each output gets under that profile."""
        return dict(self.produced[profile][which])


def _shape(dims: Any) -> Shape:
    return tuple(int(d) for d in dims)


def engine_from_description(d: Dict[str, Any]) -> GpufreeEngine:
    """The :class:`GpufreeEngine` of an ``etrt_engine_describe`` answer."""
    io = tuple(GpufreeTensor(t["name"], t["is_input"], t["is_shape_tensor"], t["dtype"], _shape(t["shape"]),
                               on_host=t["on_host"], data_dependent=t["data_dependent"]) for t in d["io"])
    return GpufreeEngine(
        version=d["version"],
        size=d["size"],
        label=d["label"],
        tracing=d["tracing"],
        switch_cost_ns=d["switch_cost_ns"],
        requested_device_memory=d["requested_device_memory"],
        io=io,
        num_constants=len(d["constants"]),
        num_intermediates=len(d["intermediates"]),
        profiles=tuple(tuple(Bounds(_shape(b[0]), _shape(b[1]), _shape(b[2])) for b in row) for row in d["profiles"]),
        cuda_mode=d["cuda_mode"],
        streamable_weights=d["streamable_weights"],
        profile_sharing=d["profile_sharing"],
        ops=tuple(GpufreeOp(op[0], op[2], op[3], op[4], op[5], op[6], float(op[7])) for op in d["ops"]),
        constant_names=tuple(c["name"] for c in d["constants"]),
        intermediate_names=tuple(t["name"] for t in d["intermediates"]),
        constant_shapes=tuple(_shape(c["shape"]) for c in d["constants"]),
        intermediate_dtypes=tuple(t["dtype"] for t in d["intermediates"]),
        device_memory_size=d["device_memory_size"],
        produced=tuple({w: {n: _shape(v) for n, v in p[w].items()} for w in ("min", "max")}
                       for p in d["output_shapes"]),
    )


def read_gpufree_engine(data: bytes, offset: int = 0, size: Optional[int] = None) -> GpufreeEngine:
    """Reads a GPU-free NvInfer engine with the runtime's own deserializer (through
    libetrt_tools), raising :class:`GpufreeEngineError` with the runtime's message
    for anything it refuses: a wrong magic or version, a payload size or
    checksum that does not match, unknown flags, dtypes or op kinds, counts
    above the limits or beyond the bytes present, trailing bytes, names that
    are empty, repeated, too long, not UTF-8 or hold a NUL, out-of-range tensor
    ids, a non-finite scale, shapes that do not flow through the ops at some
    profile's min, opt or max, and scratch memory above the limit. Raises
    :class:`etrt._reader.ReaderUnavailable` where no libetrt_tools can be loaded.
    The engine is ``data[offset:offset + size]`` (all of ``data`` by default):
    a blob's engine section is read where it lies, not copied out."""
    from .. import _reader

    try:
        return engine_from_description(_reader.describe_engine(data, offset, size))
    except _reader.Refused as e:
        raise GpufreeEngineError(str(e)) from None


def try_read_gpufree_engine(data: bytes, offset: int = 0,
                            size: Optional[int] = None) -> Tuple[Optional[GpufreeEngine], Optional[str]]:
    """``(engine, None)`` for a readable GPU-free NvInfer engine, ``(None, error)`` for
    one the runtime refuses, ``(None, None)`` when ``data`` is not a GPU-free
    NvInfer engine. ``offset`` and ``size`` as :func:`read_gpufree_engine`'s."""
    end = len(data) if size is None else offset + size
    if not is_gpufree_engine(memoryview(data)[offset:min(end, offset + 4)]):
        return None, None
    try:
        return read_gpufree_engine(data, offset, size), None
    except GpufreeEngineError as e:
        return None, str(e)
