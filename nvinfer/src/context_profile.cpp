// An execution context's profile switches and input shapes (context_impl.h):
// which profile it holds against the engine's other contexts, and the shapes
// that profile admits.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "context_device.h"
#include "context_impl.h"
#include "device_runtime.h"

namespace etrt::gpufree {

namespace {

void busy_wait(int64_t ns) {
  // Spinning, not sleeping: a real switch keeps the calling thread busy, and a sleep's wake-up latency would swamp
  // the microsecond costs benchmarks model.
  const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (std::chrono::steady_clock::now() < end) {
  }
}

}  // namespace

bool ContextImpl::set_optimization_profile(int32_t profile, StreamHandle stream) {
  const int32_t previous = profile_;
  auto traced = [&](const std::string* error, int64_t cost) {
    state_->trace_call(TraceKind::kSetOptimizationProfile, id_, error, [&](TraceEvent& e) {
      e.profile = profile;
      e.previous_profile = previous;
      e.stream = stream;
      e.switch_cost_ns = cost;
    });
    return error == nullptr;
  };
  const int32_t n = static_cast<int32_t>(state_->model.profiles.size());
  if (profile < 0 || profile >= n)
    return traced(fail("set_optimization_profile(" + std::to_string(profile) + "): out of range, engine '" + label() +
                       "' has " + std::to_string(n) + " profile(s), 0.." + std::to_string(n - 1) +
                       "; the context stays on profile " + std::to_string(profile_)),
                  0);
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (!state_->alive) return traced(fail_engine_destroyed("set_optimization_profile"), 0);
    const uint64_t holder = state_->model.exclusive_profiles ? state_->holder(profile) : 0;
    if (holder != 0 && holder != id_)
      return traced(fail("set_optimization_profile(" + std::to_string(profile) + "): profile " +
                         std::to_string(profile) + " is held by " + context_name(holder) + " of engine '" + label() +
                         "'; two live contexts must not use one profile (" + kExclusiveProfiles +
                         "). Destroy that context or pick another profile; this context stays on profile " +
                         std::to_string(profile_)),
                    0);
    if (state_->device_mode()) {
      // CUDA mode: the switch's work on its stream stores the new profile where the device can check it (see
      // DeviceOrder). Issued before anything changes, so a failure leaves the context as it was.
      std::string error;
      if (!on_weights_device(*state_, &error) || !device::store_word(order_.word, profile, stream, &error) ||
          !device::record_event(order_.last_work, stream, &error))
        return traced(fail("set_optimization_profile(" + std::to_string(profile) + "): " + error +
                           "; the context stays on profile " + std::to_string(profile_)),
                      0);
    }
    if (state_->model.exclusive_profiles) {
      for (uint64_t& h : state_->holders)
        if (h == id_) h = 0;
      state_->holders[static_cast<size_t>(profile)] = id_;
    }
  }
  profile_ = profile;
  switch_stream_ = stream;
  switched_since_enqueue_ = true;
  deferred_work_ = true;
  // After a switch every dynamic input's shape must be set again: TensorRT 8.6 keeps the old one, which the new
  // profile may refuse at enqueue (nvinfer/README.md); this implementation forgets it, so a backend that skips
  // re-setting shapes fails here even where TensorRT would happen to accept the old shape.
  shapes_.forget_inputs();
  const int64_t cost = state_->model.switch_cost_ns;
  if (cost > 0) busy_wait(cost);
  return traced(nullptr, cost);
}

bool ContextImpl::set_input_shape(int32_t io_index, const Shape& shape) {
  auto traced = [&](const std::string* error) {
    state_->trace_call(TraceKind::kSetInputShape, id_, error, [&](TraceEvent& e) {
      e.io_index = io_index;
      e.shape = shape;
      e.profile = profile_;
    });
    return error == nullptr;
  };
  const Model& m = state_->model;
  const TensorDesc& t = m.io[static_cast<size_t>(io_index)];
  // Words for the refusals only: the success path must not allocate.
  auto call = [&] { return "set_input_shape('" + t.name + "', " + shape_to_string(shape) + ")"; };
  if (!t.is_input) return traced(fail(call() + ": '" + t.name + "' is an output; only inputs take shapes"));
  if (shape.rank != t.shape.rank)
    return traced(fail(call() + ": rank " + std::to_string(shape.rank) + ", the input has rank " +
                       std::to_string(t.shape.rank) + " " + shape_to_string(t.shape)));
  if (profile_ < 0) return traced(fail(call() + ": " + kNoProfile));
  const InputRange& r = m.profiles[static_cast<size_t>(profile_)][static_cast<size_t>(ordinal(io_index))];
  for (int32_t d = 0; d < shape.rank; ++d)
    if (shape.d[d] < r.min.d[d] || shape.d[d] > r.max.d[d])
      return traced(fail(call() + ": dim " + std::to_string(d) + " = " + std::to_string(shape.d[d]) + " is outside [" +
                         std::to_string(r.min.d[d]) + ", " + std::to_string(r.max.d[d]) + "] of the active profile " +
                         std::to_string(profile_) + " (min " + shape_to_string(r.min) + ", max " +
                         shape_to_string(r.max) + "); switch to a profile that covers it first"));
  shapes_.set_input(static_cast<size_t>(io_index), shape);
  deferred_work_ = true;
  return traced(nullptr);
}

}  // namespace etrt::gpufree
