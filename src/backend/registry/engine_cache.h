#pragma once
// The process-wide engine cache (docs/design.md, "One engine, many sessions"): every delegate that loads an engine
// of one key (engine_cache_policy.h) holds the one deserialized engine, so N sessions of one program keep its weights
// once. Each delegate keeps what is its own -- execution contexts, profile state, CUDA graphs, staging, delegate-owned
// state -- and the engine goes when its last holder does.
//
// A delegate that does not share (load option share_engine off, or an engine whose contexts cannot share profiles)
// gets an engine of its own through the same call, so the counters below count every engine etrt holds.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "backend/policy/engine_cache_policy.h"
#include "common/error.h"
#include "engine/engine.h"

namespace etrt::backend {

// A delegate's hold on its engine. Dropping the last hold of an engine destroys it (on the dropping thread).
using EngineHold = std::shared_ptr<engine::Engine>;

// Makes the engine of a key the cache does not hold: deserializes it and readies it (the weight-streaming budget,
// which TensorRT fixes with the first context). Runs without the cache's lock; other loads of the same key wait
// for it, others go on.
using MakeEngine = std::function<Error(std::unique_ptr<engine::Engine>* out, Diagnostic& why)>;

// Holds the engine of `key` in *out: the shared one when `share` and the cache has one, else one `make` makes,
// which later loads of the key share if `share` and shares_engine() allows (the engine shares profiles across
// contexts; an engine found not to is remembered by key, and later loads of it make their own without asking). `bytes`:
// the engine's serialized size, for the counters. On failure (make's, with its reason in `why`) *out is untouched and
// nothing is held.
[[nodiscard]] Error acquire_engine(const EngineKey& key, size_t bytes, bool share, const MakeEngine& make,
                                   EngineHold* out, Diagnostic& why);

// What the cache holds now, and what it has made.
struct EngineCacheTotals {
  int64_t deserialized = 0;    // engines made since the process started (each make that succeeded)
  int64_t resident = 0;        // engines held now, shared or not
  int64_t bytes_resident = 0;  // their serialized bytes
  int64_t sessions = 0;        // holds on them now: one per delegate
};
EngineCacheTotals engine_cache_totals() noexcept;

}  // namespace etrt::backend
