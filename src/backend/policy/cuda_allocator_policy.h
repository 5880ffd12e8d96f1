#pragma once
// Policy (pure C++: no CUDA, no ExecuTorch, no allocation): whether libetrt registers its CUDA device allocator
// with ExecuTorch when it loads.
//
// A program exported with a CUDA target device (every .pte Torch-TensorRT writes: its partitioner adds the compile
// spec target_device=cuda:<n>) plans memory on CUDA and copies between host and device around each delegate call;
// ExecuTorch allocates that memory and runs those copies through the DeviceAllocator registered for CUDA, and
// refuses the program when there is none. A build without CUDA has no memory to give, but registers an allocator all
// the same, one that refuses every request saying that a CUDA build of etrt is what is missing: without it the user
// gets only ExecuTorch's "No device allocator registered for device type 1". ExecuTorch's registry aborts on a
// second registration for the same device type, so etrt registers (in either build) only when nobody has: a library
// loaded before libetrt (ExecuTorch's CUDA backend) keeps its allocator, and one loaded after libetrt that registers
// unconditionally aborts the process -- load that one first, or set ETRT_REGISTER_CUDA_ALLOCATOR=0. The glue
// (cuda_allocator_registration.cpp, with cuda_allocator.cpp or cuda_allocator_none.cpp) applies this decision.

namespace etrt::backend {

// The opt-out: ETRT_REGISTER_CUDA_ALLOCATOR=0 (or false, off, no), read once when libetrt loads.
inline constexpr char kRegisterCudaAllocatorVariable[] = "ETRT_REGISTER_CUDA_ALLOCATOR";

enum class CudaAllocatorRegistration {
  kRegister,           // etrt registers its allocator
  kNoCudaInThisBuild,  // a build without CUDA registers its refusing allocator
  kAlreadyRegistered,  // another library registered one first; ExecuTorch uses that one
  kOptedOut,           // ETRT_REGISTER_CUDA_ALLOCATOR said not to
};

struct CudaAllocatorDecision {
  CudaAllocatorRegistration registration;
  // The variable held a value that is neither a yes nor a no; it was ignored (the glue logs it).
  bool variable_unrecognized;
};

namespace detail {
// ASCII case-insensitive equality; no locale, no allocation.
constexpr bool equals_ignoring_case(const char* a, const char* b) {
  for (; *a != '\0' && *b != '\0'; ++a, ++b) {
    const char x = (*a >= 'A' && *a <= 'Z') ? static_cast<char>(*a - 'A' + 'a') : *a;
    if (x != *b) return false;
  }
  return *a == *b;
}
constexpr bool is_one_of(const char* value, const char* const (&words)[4]) {
  for (const char* w : words)
    if (equals_ignoring_case(value, w)) return true;
  return false;
}
}  // namespace detail

// `cuda_build`: libetrt was built with CUDA; `already_registered`: ExecuTorch has an allocator for CUDA when libetrt
// loads; `variable`: ETRT_REGISTER_CUDA_ALLOCATOR's value, null when unset. Unset, empty, 1/true/on/yes: register
// when nobody has (the CUDA build its allocator, kRegister; the build without CUDA its refusing one,
// kNoCudaInThisBuild); 0/false/off/no: never, in either build.
constexpr CudaAllocatorDecision decide_cuda_allocator_registration(bool cuda_build, bool already_registered,
                                                                   const char* variable) {
  constexpr const char* kNo[4] = {"0", "false", "off", "no"};
  constexpr const char* kYes[4] = {"1", "true", "on", "yes"};
  const bool set = variable != nullptr && *variable != '\0';
  const bool opted_out = set && detail::is_one_of(variable, kNo);
  const bool unrecognized = set && !opted_out && !detail::is_one_of(variable, kYes);
  if (opted_out) return {CudaAllocatorRegistration::kOptedOut, false};
  if (already_registered) return {CudaAllocatorRegistration::kAlreadyRegistered, unrecognized};
  return {cuda_build ? CudaAllocatorRegistration::kRegister : CudaAllocatorRegistration::kNoCudaInThisBuild,
          unrecognized};
}

// What the decision means, for log lines and get_option readers.
constexpr const char* describe(CudaAllocatorRegistration registration) {
  switch (registration) {
    case CudaAllocatorRegistration::kRegister:
      return "etrt registered its CUDA device allocator";
    case CudaAllocatorRegistration::kNoCudaInThisBuild:
      return "this etrt build has no CUDA path; it registered a CUDA device allocator that refuses every request, "
             "naming a CUDA build of etrt as the fix";
    case CudaAllocatorRegistration::kAlreadyRegistered:
      return "another library registered a CUDA device allocator before etrt loaded; ExecuTorch uses that one";
    case CudaAllocatorRegistration::kOptedOut:
      return "ETRT_REGISTER_CUDA_ALLOCATOR turned etrt's CUDA device allocator off";
  }
  return "unknown";
}

}  // namespace etrt::backend
