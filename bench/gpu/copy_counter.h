#pragma once
// Bytes libetrt copies between host and device, counted at the CUDA runtime: copy_counter.cpp interposes
// cudaMemcpy and cudaMemcpyAsync for the whole executable (which exports its definitions: ENABLE_EXPORTS) and counts
// the calls libetrt makes -- its own staging and write-backs, and the copies ExecuTorch's et_copy kernels of a
// device-placed program make through the CUDA DeviceAllocator libetrt registers. Copies the executable itself makes
// (a runner writing its tokens) are not counted.

#include <cstdint>

namespace etrt::copy_counter {

struct Bytes {
  int64_t host_to_device = 0;
  int64_t device_to_host = 0;
  int64_t device_to_device = 0;
  int64_t copies = 0;  // calls, whatever their direction

  Bytes operator-(const Bytes& earlier) const {
    return {host_to_device - earlier.host_to_device, device_to_host - earlier.device_to_host,
            device_to_device - earlier.device_to_device, copies - earlier.copies};
  }
};

/// What libetrt copied since the executable started.
Bytes total();

}  // namespace etrt::copy_counter
