"""Reads an engine of etrt's *GPU-free NvInfer* (magic ``ETRF``):
its header, flags, IO tensors, constants, intermediates, optimization
profiles and op table, so that ``etrt inspect`` and validation can show and
check what an engine really has (profiles, in-place aliases, the shapes each
profile produces), not only what its blob claims.

The format is defined by ``nvinfer/src/format.{h,cpp}`` (see also
nvinfer/README.md); little-endian throughout::

    header (24 bytes)
      0  char[4] magic "ETRF"
      4  u32     format version   (2; other versions are refused)
      8  u64     payload size     bytes after the header; must match exactly
      16 u32     checksum         FNV-1a (32-bit) of the payload
      20 u32     reserved         0
    payload
      str  label                  u32 length + bytes
      u8   flags                  bit 0 tracing on, bit 1 CUDA mode (tensors in device memory),
                                  bit 2 streamable weights (built for weight streaming), bit 3 exclusive
                                  profiles (TensorRT 8.6 without kPROFILE_SHARING_0806); other bits refused
      i64  switch cost, ns
      u64  requested device memory, bytes
      u32  IO count,           then per tensor: str name, u8 is_input, u8 flags, u8 dtype, shape
                               (IO flags: bit 0 shape tensor, bit 1 on host, bit 2 data-dependent)
      u32  constant count,     then per constant: str name, shape, u64 value count, f32 values
      u32  intermediate count, then per tensor: str name, u8 dtype
      u32  profile count,      then per profile, per input in IO order: shape min, shape opt, shape max
      u32  op count,           then per op: u8 kind, i32 a, i32 b, i32 c, i32 d, i32 out, f32 factor
                               (25 bytes; unused operands are -1); nothing may follow the last op
    shape = u8 rank + rank x i64

Op kinds: 1 embedding, 2 add, 3 add_bias, 4 scale, 5 matmul, 6 identity,
7 kv_cache_update (a = the cache, an IO input; b = the update; c = the write
indices; out = an IO output that shares the cache's memory, as TensorRT's
``getAliasedInputTensor`` reports it), 8 causal_attention (a = queries, b =
keys, c = values, d = positions). Tensor ids index one space: IO tensors
first (engine order), then constants, then intermediates.

The reader is the runtime's own: :func:`read_gpufree_engine` hands the
bytes to libetrt_tools' ``etrt_engine_describe``, which runs the GPU-free NvInfer's
deserializer (``nvinfer/src/format.cpp``, ``validate()`` and the memory plan
of ``nvinfer/src/model.cpp``: structure, the limits, shape inference at every
profile's min, opt and max shapes, and the scratch), so it refuses exactly
what a load refuses, with the same messages, and computes the output shapes
validation compares with the program. What stays here is the format's
vocabulary, which the engine writer (:mod:`etrt.engine_builder`) uses.

Modules:

* :mod:`etrt.gpufree.format` -- constants, limits,
  :class:`GpufreeEngineError`, :func:`checksum` (the writer's),
  :func:`escape_name`;
* :mod:`etrt.gpufree.engine` -- :class:`GpufreeEngine` and
  :func:`read_gpufree_engine`.
"""

from .engine import (GpufreeEngine, GpufreeOp, GpufreeTensor, engine_from_description, read_gpufree_engine,
                     try_read_gpufree_engine)
from .format import (DTYPES, FORMAT_VERSION, HEADER_SIZE, LIMITS, MAGIC, OP_KINDS, OP_KV_CACHE_UPDATE,
                     GpufreeEngineError, checksum, escape_name, is_gpufree_engine)

# Reachable here as before the split: the format's other constants and limits.
from .format import (ELEMENT_SIZES, FLAG_CUDA_MODE, FLAG_EXCLUSIVE_PROFILES, FLAG_STREAMABLE_WEIGHTS,  # noqa: F401
                     FLAG_TRACING, KNOWN_FLAGS, MAX_CONSTANTS, MAX_DEVICE_MEMORY, MAX_DIM, MAX_INTERMEDIATES,
                     MAX_IO_TENSORS, MAX_NAME_LENGTH, MAX_OPS, MAX_PROFILE_ENTRIES, MAX_PROFILES, MAX_RANK,
                     MAX_SHAPE_INFERENCE_WORK, MAX_SWITCH_COST_NS, MAX_TENSOR_BYTES, OP_ADD, OP_ADD_BIAS,
                     OP_CAUSAL_ATTENTION, OP_EMBEDDING, OP_IDENTITY, OP_MATMUL, OP_RECORD_SIZE, OP_SCALE,
                     SCRATCH_ALIGNMENT, Shape)

__all__ = [
    "DTYPES",
    "FORMAT_VERSION",
    "HEADER_SIZE",
    "LIMITS",
    "MAGIC",
    "OP_KINDS",
    "OP_KV_CACHE_UPDATE",
    "GpufreeEngine",
    "GpufreeEngineError",
    "GpufreeOp",
    "GpufreeTensor",
    "checksum",
    "escape_name",
    "is_gpufree_engine",
    "read_gpufree_engine",
    "try_read_gpufree_engine",
]
