#pragma once
// The JSON metadata a TensorRT delegate blob carries, as plain values.
//
// The first six fields are Torch-TensorRT's and must keep meaning what they
// mean there; `profile_signature` is etrt's addition (docs/design.md, decision 10)
// and is absent from every blob Torch-TensorRT writes. docs/blob-format.md is
// the reference for each field.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"

namespace etrt::blob {

// Upper limits on what a blob may declare, far above any real engine (docs/limits.md says why each). The reader
// checks each count before it builds anything sized by it; validate_metadata holds written metadata to the same
// numbers. Python reads blobs through this reader (libetrt_tools' etrt_blob_describe); python/etrt/blob/format.py
// repeats the numbers its writer and tools use, checked against these by tests/python/test_limits.py.
inline constexpr size_t kMaxIoBindings = 16384;                 // io_bindings entries, and profile_signature.inputs
inline constexpr size_t kMaxAliases = 16384;                    // aliased_io entries
inline constexpr size_t kMaxStates = 16384;                     // delegate_state entries
inline constexpr int32_t kMaxProfiles = 256;                    // profile_signature.num_profiles
inline constexpr size_t kMaxSymbolicDims = 8 * kMaxIoBindings;  // one per (input, dim) at most
// Signature inputs x profiles, and symbolic dims x profiles: the size of the bounds and ranges tables.
inline constexpr size_t kMaxProfileEntries = 65536;
// Bytes of a name-like string: binding names and dtypes, alias output/input/kind, signature input names, symbolic
// dim names and inputs, state names, inputs, outputs and initial-value keys.
// (serialized_metadata and target_platform are opaque upstream data: only the metadata size
// bounds them.)
inline constexpr size_t kMaxNameLength = 4096;

// Upstream's readers give an aliased_io entry without "kind" this kind, the
// one TensorRT enforces for KV-cache updates; we do the same.
inline constexpr const char* kAliasKindKvCacheUpdate = "kv_cache_update";
// An output Torch-TensorRT itself writes into an input (TensorRT does not track it); shapes must match.
inline constexpr const char* kAliasKindUser = "user";

// One engine input or output. The delegate's arguments are the inputs in the
// order io_bindings lists them, then the outputs likewise; the two may interleave.
struct IoBinding {
  std::string name;            // the TensorRT tensor name; never empty
  std::string dtype;           // informational; upstream often leaves it ""
  std::vector<int64_t> shape;  // informational; upstream often leaves it [], -1 marks a dynamic dim
  bool is_input = true;        // upstream's Python default
};

// An engine output that is written in place into one of the inputs. The
// readers keep any non-empty kind; the backend accepts kAliasKindKvCacheUpdate
// and "user" and refuses a delegate with any other kind at load.
struct AliasedIo {
  std::string output;
  std::string input;
  std::string kind = kAliasKindKvCacheUpdate;
};

// One input's bounds in one optimization profile.
struct ProfileBounds {
  std::vector<int64_t> min, opt, max;
};

struct SignatureInput {
  std::string name;                     // an input binding's name
  std::vector<ProfileBounds> profiles;  // exactly num_profiles entries, by profile index
};

// A named symbolic dimension of the exported program (e.g. "seq_len"), where
// it lands in this engine, and its [lo, hi] range in each profile.
struct SymbolicDim {
  std::string name;
  std::string input;
  int32_t dim = 0;
  std::vector<std::pair<int64_t, int64_t>> ranges;  // exactly num_profiles entries
};

// What profile index i means for this engine, persisted so an exporter can
// check that index i means the same regime in every delegate of a program.
struct ProfileSignature {
  int32_t num_profiles = 1;
  std::vector<SignatureInput> inputs;
  std::vector<SymbolicDim> symbolic_dims;
};

// A tensor the delegate owns across calls (docs/design.md, decision 18): engine input `input` reads it, engine
// output `output` is its new value -- written in place when the output is aliased to the input (aliased_io or the
// engine's own alias), else copied back into it after each execution. ExecuTorch passes neither: the call's
// arguments are the other inputs and outputs. Written when a partitioner hands a mutable buffer to the delegate
// (ExecuTorch's tag_mutated_buffer).
struct DelegateState {
  std::string name;           // the state's identity (the buffer's FQN): delegates of one program share it by name
  std::string input;          // an input binding
  std::string output;         // an output binding
  std::string initial_value;  // a key of the program's NamedDataMap holding the initial bytes; "" = zeros
};

struct Metadata {
  std::vector<IoBinding> io_bindings;  // may interleave inputs and outputs; empty: the engine's own IO
  std::vector<AliasedIo> aliased_io;   // non-empty makes the writer emit TR02
  bool hardware_compatible = false;
  int64_t device_id = 0;
  std::string serialized_metadata;
  std::string target_platform;
  std::optional<ProfileSignature> profile_signature;  // omitted from the JSON when absent
  std::vector<DelegateState> delegate_state;          // omitted from the JSON when empty; appended last

  size_t num_inputs() const;
  size_t num_outputs() const;
};

bool operator==(const IoBinding& a, const IoBinding& b);
bool operator==(const AliasedIo& a, const AliasedIo& b);
bool operator==(const ProfileBounds& a, const ProfileBounds& b);
bool operator==(const SignatureInput& a, const SignatureInput& b);
bool operator==(const SymbolicDim& a, const SymbolicDim& b);
bool operator==(const ProfileSignature& a, const ProfileSignature& b);
bool operator==(const DelegateState& a, const DelegateState& b);
bool operator==(const Metadata& a, const Metadata& b);
inline bool operator!=(const Metadata& a, const Metadata& b) { return !(a == b); }

// Checks everything about `metadata` that the reader refuses beyond JSON
// types: the limits above; strings valid UTF-8; binding names non-empty,
// without NUL (TensorRT names are C strings) and unique (inputs and outputs
// may interleave); aliases naming an output and an input, each output at most
// once, with a non-empty kind (any: the backend checks it); a well-formed profile
// signature; delegate_state entries with a non-empty name unique in the blob, naming an input and an output binding,
// each used by one state at most. Linear in the size of the metadata. Names quoted in messages have
// control characters escaped (\x00). On failure returns InvalidArgument with a message starting
// "TensorRT blob: " in `why`. parse_blob runs it on every blob and
// write_blob refuses metadata that fails it, so what one writes the other reads.
[[nodiscard]] Error validate_metadata(const Metadata& metadata, Diagnostic& why);

}  // namespace etrt::blob
