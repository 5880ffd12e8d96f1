#pragma once
// Makes the GPU the suite runs on report itself integrated to libetrt (test tooling, GPU suite only), so the
// integrated-GPU path (src/backend/policy/binding_policy.h) runs on a discrete GPU such as the H200.
//
// The test executable that links integrated_device.cpp defines cudaDeviceGetAttribute itself and exports it
// (ENABLE_EXPORTS), so libetrt's calls bind to that definition first, as cuda_faults.cpp does for its calls. While
// the simulation is on, libetrt's questions get the answers of an integrated device that maps pinned host memory at
// its host address and cannot read pageable memory (a Jetson Orin): cudaDevAttrIntegrated 1,
// cudaDevAttrCanUseHostPointerForRegisteredMem 1, cudaDevAttrPageableMemoryAccess 0. Every other question, and every
// call from elsewhere, reaches libcudart unchanged. libetrt asks when a delegate loads: turn it on before the load.
//
// On a discrete GPU, pinned memory from cudaHostAlloc(..., cudaHostAllocMapped) is what the device can address at
// the host's address (unified addressing), so binding it in place is correct there too -- only slower than on an
// integrated GPU, where it is the same memory.

namespace etrt::integrated_device {

void simulate(bool on);
// libetrt's cudaDeviceGetAttribute calls answered while the simulation was on, since the process started.
int answered();

// Turns the simulation on for a scope.
struct Simulated {
  Simulated() { simulate(true); }
  ~Simulated() { simulate(false); }
  Simulated(const Simulated&) = delete;
  Simulated& operator=(const Simulated&) = delete;
};

}  // namespace etrt::integrated_device
