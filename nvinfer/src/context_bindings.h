#pragma once

#include <cstdint>
#include <vector>

#include "engine_state.h"

namespace etrt::gpufree {

// Where an execution context's tensors live, by tensor id: the IO addresses the caller bound, the weights, and the
// intermediates in its scratch memory (its own, or what setDeviceMemoryV2 gave).
class ContextBindings {
 public:
  explicit ContextBindings(const EngineImpl::State& state);

  void bind(size_t io_index, void* address) {
    data_[io_index] = address;
    address_set_[io_index] = true;
  }
  bool address_set(size_t io_index) const { return address_set_[io_index]; }
  void* address(size_t id) const { return data_[id]; }
  const std::vector<void*>& all() const { return data_; }

  bool has_scratch() const { return scratch_set_; }
  uint8_t* scratch() const { return scratch_; }
  void set_scratch(uint8_t* memory) {
    scratch_ = memory;
    scratch_set_ = true;
  }
  // The intermediates at their planned offsets in the scratch memory, before a run.
  void place_intermediates(const EngineImpl::State& state);

 private:
  std::vector<bool> address_set_;  // by io index
  std::vector<void*> data_;        // by tensor id: IO addresses, constants, intermediates in scratch
  uint8_t* scratch_ = nullptr;
  bool scratch_set_ = false;
};

}  // namespace etrt::gpufree
