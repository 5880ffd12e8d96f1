#pragma once
// At load, a blob that carries a profile signature (what the exporter says
// the profiles are) must agree with the profiles discovered in the engine
// (what they are). A disagreement means the blob and engine were mixed up,
// and index i would not mean what the exporter validated it to mean.

#include <vector>

#include "backend/rules/io_slot.h"
#include "blob/metadata.h"
#include "common/error.h"
#include "profile/profile_table.h"

namespace etrt::backend {

// `inputs` are the delegate's inputs, in the table's order (ProfileTable's names are for messages).
// InvalidProgram, naming the first disagreement, when they differ.
[[nodiscard]] Error check_signature(const blob::ProfileSignature& signature, const profile::ProfileTable& table,
                                    const std::vector<IoSlot>& inputs, Diagnostic& why);

}  // namespace etrt::backend
