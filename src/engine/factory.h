#pragma once
// One entry point from serialized engine bytes to an Engine, whichever kind
// they are: a reference engine (they start with its magic "ETRF") or, in a
// build with the TensorRT adapter, a TensorRT plan.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/engine.h"

namespace etrt::engine {

struct EngineOptions {
  // The CUDA device a TensorRT engine is deserialized on; the reference engine (host memory) ignores it.
  int64_t device_id = 0;
};

// True when deserialize_engine() needs the engine's CUDA device current before
// it is called: a TensorRT plan is deserialized onto the current device. The
// reference engine never needs one (a CUDA-mode engine uploads its weights
// when its first context is created), so callers need not touch CUDA for it.
bool deserializes_on_device(const void* data, size_t size);

// nullptr with the reason in *error (if given) when the bytes are malformed or
// no implementation in this build can run them. `data` may be freed once this
// returns.
std::unique_ptr<Engine> deserialize_engine(const void* data, size_t size, const EngineOptions& options,
                                           std::string* error);

}  // namespace etrt::engine
