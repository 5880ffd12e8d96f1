#pragma once
// At load, a blob that carries a profile signature (what the exporter says
// the profiles are) must agree with the profiles discovered in the engine
// (what they are). A disagreement means the blob and engine were mixed up,
// and index i would not mean what the exporter validated it to mean.

#include <string>

#include "blob/metadata.h"
#include "profile/profile_table.h"

namespace etrt::backend {

bool check_signature(const blob::ProfileSignature& signature, const profile::ProfileTable& table, std::string* error);

}  // namespace etrt::backend
