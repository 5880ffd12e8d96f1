#pragma once
// CUDA mode's rules for an execution context: the device holding the weights
// must be current, bindings must be memory it can reach, and the order work
// ran in on the device (DeviceOrder, engine_state.h) must be the order it was
// issued in. Each false comes with the refusal's words in *error.

#include <string>
#include <vector>

#include "engine_state.h"
#include "model.h"

namespace etrt::gpufree {

// CUDA mode: switches and enqueues use the device only while its weights' device is current.
bool on_weights_device(const EngineImpl::State& state, std::string* error);

// CUDA mode only: the engine's kernels must run on the device holding its weights, over memory that device can
// reach. The host mode has no counterpart (every pointer is host memory there); a backend that forgets to stage a
// host tensor, or binds another GPU's memory, is refused here instead of faulting inside a kernel.
bool check_device_binding(const EngineImpl::State& state, const std::vector<Shape>& shapes,
                          const std::vector<void*>& data, std::string* error);

// False (and the flag lowered) when the device saw an enqueue run before the profile switch issued ahead of it.
bool check_device_order(const DeviceOrder& order, std::string* error);

// The refusal a destruction records, or empty; then waits for the context's work and frees what it used.
std::string release_device_order(DeviceOrder& order);

}  // namespace etrt::gpufree
