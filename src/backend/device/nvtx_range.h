#pragma once
// NVTX ranges in the "etrt" domain, so Nsight Systems shows where a decode step's host time goes: load, the profile
// switch, setting shapes, binding and staging, the enqueue, the copy-back and the wait for the device. Built only
// with -DETRT_WITH_NVTX=ON (NVTX 3, header-only); otherwise a range is an empty object. NVTX itself costs a branch
// per range until a profiler injects itself into the process. `name` must be a string literal.

#if defined(ETRT_WITH_NVTX)
#include <nvtx3/nvToolsExt.h>
#endif

namespace etrt::backend {

#if defined(ETRT_WITH_NVTX)

// The "etrt" domain, created on first use.
inline nvtxDomainHandle_t nvtx_domain() noexcept {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("etrt");
  return domain;
}

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) noexcept {
    nvtxEventAttributes_t attributes = {};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = name;
    nvtxDomainRangePushEx(nvtx_domain(), &attributes);
  }
  ~NvtxRange() { nvtxDomainRangePop(nvtx_domain()); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

#else

class NvtxRange {
 public:
  explicit NvtxRange(const char* /*name*/) noexcept {}
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

#endif

}  // namespace etrt::backend
