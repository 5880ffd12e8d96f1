#pragma once
// How a blob's metadata meets its engine at load: the delegate's arguments bound to the engine's IO tensors, the
// in-place aliases, the profile table, the profile signature's check and the delegate-owned states' shapes. Pure
// over a deserialized engine: no context, no memory for tensors, no named data. Delegate::load runs these steps, and
// so does the C ABI's etrt_delegate_resolve (inspection.h), so that `etrt validate` refuses what a load refuses, with
// its message.

#include <cstdint>
#include <vector>

#include "backend/rules/io_slot.h"
#include "blob/metadata.h"
#include "common/error.h"
#include "common/shape.h"
#include "engine/engine.h"
#include "profile/profile_table.h"

namespace etrt::backend {

// One output written in place into an input (slot indices); `entry` is its aliased_io index, or -1 when only the
// engine declares it (getAliasedInputTensor).
struct ResolvedAlias {
  int32_t output = -1;
  int32_t input = -1;
  int32_t entry = -1;
};

// One delegate_state entry, checked: its slots, whether its output is written in place into its input, and the one
// static shape it has in every profile.
struct ResolvedState {
  int32_t input = -1;
  int32_t output = -1;
  bool in_place = false;
  Shape shape;
  engine::DataType dtype = engine::DataType::kFloat32;
  size_t bytes = 0;
};

// Which rule refused, for tools (the C ABI names it): "io" (bind_io), "alias-unknown-kind",
// "alias-unknown-tensor", "alias-engine-mismatch", "alias-shape-mismatch", "alias-conflict" (resolve_aliases),
// "profiles" (build_profile_table), "signature" (check_signature), "state" (resolve_states). `entry` is the
// aliased_io or delegate_state index refused, or -1.
struct Refusal {
  const char* rule = nullptr;
  int32_t entry = -1;
};

// What the steps below build, in load order.
struct Resolution {
  std::vector<IoSlot> inputs;
  std::vector<IoSlot> outputs;
  std::vector<ResolvedAlias> aliases;
  profile::ProfileTable table;
  std::vector<ResolvedState> states;  // parallel to the blob's delegate_state
  Refusal refusal;
};

// Binds each blob IO binding to the engine tensor of the same name (or, with no io_bindings, takes the engine's own
// IO: inputs then outputs, by the names' numeric suffixes when distinct). The delegate's arguments are the inputs in
// listed order, then the outputs. Refuses shape tensors (NotSupported) and a blob that does not match the engine.
[[nodiscard]] Error bind_io(const engine::Engine& engine, const blob::Metadata& metadata, Resolution* r,
                            Diagnostic& why);

// The blob's aliased_io against the engine (kv_cache_update pairs must be the engine's own, user pairs of one shape
// and type), then each alias the engine declares that the blob leaves out; an input takes one aliased output.
[[nodiscard]] Error resolve_aliases(const engine::Engine& engine, const blob::Metadata& metadata, Resolution* r,
                                    Diagnostic& why);

// Every profile's bounds for every input, as the engine reports them.
[[nodiscard]] Error build_profile_table(const engine::Engine& engine, Resolution* r, Diagnostic& why);

// check_signature (signature_check.h) over the table, when the blob carries a signature.
[[nodiscard]] Error check_profile_signature(const blob::Metadata& metadata, Resolution* r, Diagnostic& why);

// Each delegate_state entry: its input and output exist, its input has one static shape in every profile, and its
// output is written in place into it or has its type and shape. Does not read its initial value.
[[nodiscard]] Error resolve_states(const engine::Engine& engine, const blob::Metadata& metadata, Resolution* r,
                                   Diagnostic& why);

// The steps above in two phases, each stopping at its first refusal (r->refusal says which rule): the arguments
// (bind_io, resolve_aliases), then the profiles and states (build_profile_table, check_profile_signature,
// resolve_states). A load applies the weight-streaming budget between the two, so a refused budget is reported
// before a profile or state refusal; resolve() runs both for tools, which apply no budget.
[[nodiscard]] Error resolve_arguments(const engine::Engine& engine, const blob::Metadata& metadata, Resolution* r,
                                      Diagnostic& why);
[[nodiscard]] Error resolve_profiles_and_states(const engine::Engine& engine, const blob::Metadata& metadata,
                                                Resolution* r, Diagnostic& why);
[[nodiscard]] Error resolve(const engine::Engine& engine, const blob::Metadata& metadata, Resolution* r,
                            Diagnostic& why);

}  // namespace etrt::backend
