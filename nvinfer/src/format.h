#pragma once
// The GPU-free NvInfer's serialized form. Little-endian throughout:
//
//   header (24 bytes)
//     0  char[4] magic "ETRF"        never the start of a TensorRT plan
//     4  u32     format version      kFormatVersion; newer versions are refused
//     8  u64     payload size        bytes after the header; must match exactly
//     16 u32     checksum            FNV-1a (32-bit) of the payload
//     20 u32     reserved            0
//   payload
//     str  label                     u32 length + bytes (no terminator)
//     u8   flags                     bit 0: tracing on; bit 1: CUDA mode (device memory); bit 2: streamable weights
//     i64  switch cost, ns
//     u64  requested device memory, bytes
//     u32  IO count,           then per tensor: str name, u8 is_input, u8 flags, u8 dtype, shape
//     u32  constant count,     then per constant: str name, shape, u64 value count, f32 values
//     u32  intermediate count, then per tensor: str name, u8 dtype
//     u32  profile count,      then per profile, per input in IO order: shape min, shape opt, shape max
//     u32  op count,           then per op: u8 kind, i32 a, i32 b, i32 c, i32 d, i32 out, f32 factor
//                                (unused operands are -1)
//   shape = u8 rank + rank x i64
//   IO flags: bit 0 shape tensor, bit 1 located on the host (getTensorLocation kHOST), bit 2 data-dependent output
//   shape
//
// dtype is gpufree::DataType's value; op kinds are OpKind's values.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model.h"

namespace etrt::gpufree {

inline constexpr char kMagic[4] = {'E', 'T', 'R', 'F'};
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr size_t kHeaderSize = 24;

// True when `data` starts with the GPU-free NvInfer's magic (says nothing about the rest).
ETRT_GPUFREE_API bool is_gpufree_engine(const void* data, size_t size);

// Encodes a model (validate it first; the builder does). Exported, with deserialize_model, for the format tests
// and the load benchmark.
ETRT_GPUFREE_API std::vector<uint8_t> serialize(const Model& model);

// Decodes and validates. Never reads outside [data, data + size) and never
// trusts a count before checking that the bytes for it are there.
// Every count is checked against its limit (model.h) and the bytes present before anything sized by it is
// allocated; the decoded model then goes through validate().
ETRT_GPUFREE_API bool deserialize_model(const void* data, size_t size, Model* model, std::string* error);

// FNV-1a, 32-bit: cheap, and enough to tell a damaged blob from a valid one.
ETRT_GPUFREE_API uint32_t checksum(const uint8_t* data, size_t size);

}  // namespace etrt::gpufree
