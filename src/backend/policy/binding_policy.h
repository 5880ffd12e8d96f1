#pragma once
// Policy (pure C++: no CUDA, no ExecuTorch, no allocation): whether an engine gets a delegate argument's memory as
// it is, or through the argument's staging buffer, or not at all.
//
// TensorRT reads and writes IO at 256-byte-aligned addresses it can reach. What it can reach depends on the engine
// and the device: a host engine (the GPU-free NvInfer's host mode) reaches host memory only; a device engine on a
// discrete GPU reaches memory of its device and managed memory; on an integrated GPU (Jetson, GB10: the GPU shares
// the host's memory, cudaDevAttrIntegrated) it also reaches pinned host memory by its host address, and pageable
// host memory when the device says it can (cudaDevAttrPageableMemoryAccess). Memory the engine reaches is bound in
// place when aligned; anything else it can use is staged: copied into an aligned buffer of the engine's own memory
// (and back, for outputs and in-place inputs). The mechanism (device_place_cuda.cpp) asks CUDA where a tensor lives and
// what the device reaches; the glue (executor.cpp, staging.cpp) applies the answer. docs/design.md,
// "Integrated GPUs".

#include <cstdint>

namespace etrt::backend {

// Where a tensor's memory lives, as the engine's device sees it.
enum class MemoryPlace : uint8_t {
  kPageableHost,  // ordinary host memory (malloc, ExecuTorch's planned arenas)
  kPinnedHost,    // page-locked host memory (cudaHostAlloc, cudaHostRegister)
  kDevice,        // device memory of the engine's device
  kManaged,       // CUDA managed memory: reachable from every device
  kOtherDevice,   // device memory of another device
};

// What a CUDA device reports about reaching host memory (cudaDeviceGetAttribute), read once at load.
struct DeviceTraits {
  bool integrated = false;                       // cudaDevAttrIntegrated
  bool host_pointer_for_registered_mem = false;  // cudaDevAttrCanUseHostPointerForRegisteredMem
  bool pageable_memory_access = false;           // cudaDevAttrPageableMemoryAccess
};

// The memory an engine binds in place (when aligned), besides its own device's and managed memory.
struct EngineReach {
  bool device_memory = true;   // device and managed memory: a device engine
  bool pinned_host = false;    // kPinnedHost
  bool pageable_host = false;  // kPageableHost

  // A host engine reads host memory only.
  static constexpr EngineReach host_engine() { return {false, true, true}; }
  // A device engine on a device with `traits`. Only an integrated device reaches host memory in place: on a discrete
  // GPU every access would cross the bus, once per read, so one staging copy is the cheaper way (and the H2D bytes
  // counted say so).
  static constexpr EngineReach device_engine(const DeviceTraits& traits) {
    return {true, traits.integrated && traits.host_pointer_for_registered_mem,
            traits.integrated && traits.pageable_memory_access};
  }
};

enum class Binding : uint8_t {
  kInPlace,            // bound at the tensor's own address
  kStageFromHost,      // host memory through a buffer of the device engine's memory: host to device and back
  kStageRealigned,     // memory the engine reaches, at a misaligned address: copied within that memory
  kRefuseOtherDevice,  // device memory the engine cannot reach (another GPU's, or any GPU's for a host engine)
};

// How an engine that reaches `reach` binds memory at `place`, `aligned` to TensorRT's 256 bytes or not.
constexpr Binding choose_binding(MemoryPlace place, bool aligned, const EngineReach& reach) {
  bool reached = false;
  switch (place) {
    case MemoryPlace::kDevice:
    case MemoryPlace::kManaged:
      if (!reach.device_memory) return Binding::kRefuseOtherDevice;
      return aligned ? Binding::kInPlace : Binding::kStageRealigned;
    case MemoryPlace::kOtherDevice:
      return Binding::kRefuseOtherDevice;
    case MemoryPlace::kPinnedHost:
      reached = reach.pinned_host;
      break;
    case MemoryPlace::kPageableHost:
      reached = reach.pageable_host;
      break;
  }
  if (!reached) return Binding::kStageFromHost;
  return aligned ? Binding::kInPlace : (reach.device_memory ? Binding::kStageFromHost : Binding::kStageRealigned);
}

// Whether an input the engine updates in place (an aliased output's input: a KV cache) at `place` is refused. Host
// memory the engine does not reach would go through a host-to-device staging copy and back on every call -- the
// whole cache across the bus twice per step -- so it is refused, saying to pass device memory (as the released
// upstream delegate refuses it); host memory the engine reaches (a host engine's, an integrated GPU's) is updated
// where it is. Device memory is never refused here: another device's is refused by the binding itself.
constexpr bool refuses_in_place_update(MemoryPlace place, const EngineReach& reach) {
  switch (place) {
    case MemoryPlace::kPinnedHost:
      return !reach.pinned_host;
    case MemoryPlace::kPageableHost:
      return !reach.pageable_host;
    case MemoryPlace::kDevice:
    case MemoryPlace::kManaged:
    case MemoryPlace::kOtherDevice:
      break;
  }
  return false;
}

}  // namespace etrt::backend
