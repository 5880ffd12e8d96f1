// ExecuTorch glue: the BackendInterface registered as "TensorRTBackend".
// Only the three lifecycle calls and the option calls live here; the delegate
// itself is backend/delegate.h (loading in delegate_loader.cpp, one execution
// in executor.cpp).

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/platform/log.h>

#include "backend/device/nvtx_range.h"
#include "backend/glue/counters.h"
#include "backend/glue/cuda_allocator.h"
#include "backend/glue/default_load_options.h"
#include "backend/glue/delegate.h"
#include "backend/glue/last_error.h"
#include "etrt/options.h"
#include "etrt/report.h"

namespace etrt::backend {
namespace {

using executorch::runtime::ArrayRef;
using executorch::runtime::BackendExecutionContext;
using executorch::runtime::BackendInitContext;
using executorch::runtime::BackendOption;
using executorch::runtime::BackendOptionContext;
using executorch::runtime::CompileSpec;
using executorch::runtime::DelegateHandle;
using executorch::runtime::Error;
using executorch::runtime::EValue;
using executorch::runtime::FreeableBuffer;
using executorch::runtime::Result;
using executorch::runtime::Span;

CudaAllocatorState cuda_allocator_state() {
  switch (cuda_allocator_registration()) {
    case CudaAllocatorRegistration::kRegister:
      return kCudaAllocatorRegistered;
    case CudaAllocatorRegistration::kAlreadyRegistered:
      return kCudaAllocatorOtherLibrary;
    case CudaAllocatorRegistration::kOptedOut:
      return kCudaAllocatorOptedOut;
    case CudaAllocatorRegistration::kNoCudaInThisBuild:
      break;
  }
  return kCudaAllocatorNoneInThisBuild;
}

// get_option's values are ints: a byte count past INT_MAX reads as INT_MAX (etrt_counter has the 64-bit value).
int clamp_to_int(int64_t value) { return static_cast<int>(std::min<int64_t>(value, INT_MAX)); }

class TensorRTBackend final : public executorch::runtime::BackendInterface {
 public:
  bool is_available() const override { return true; }

  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* processed,
                               ArrayRef<CompileSpec> compile_specs) const override {
    const NvtxRange range("etrt load");
    static std::atomic<int> next_ordinal{0};
    char name[64];
    const char* method = context.get_method_name() ? context.get_method_name() : "?";
    std::snprintf(name, sizeof(name), "%s#%d", method, next_ordinal.fetch_add(1));

    LoadOptions options;
    Diagnostic why;
    clear_last_error();
    apply_default_load_options(&options);  // process-wide defaults (etrt/c_api.h); the runtime specs override them
    if (read_load_options(context.runtime_specs(), &options, why) != Error::Ok) {
      report_error(name, "%s", why.c_str());
      return Error::InvalidArgument;
    }
    // A compile spec is part of the program: ExecuTorch gets InvalidProgram, as for any blob refused at load.
    if (read_compile_specs(compile_specs, &options, why) != Error::Ok) {
      report_error(name, "%s", why.c_str());
      return Error::InvalidProgram;
    }

    // The handle lives in the method's runtime allocator, as ExecuTorch
    // expects; its destructor runs in destroy().
    auto* delegate = context.get_runtime_allocator()->allocateInstance<Delegate>();
    if (delegate == nullptr) {
      report_error(name, "the runtime allocator has no room for the delegate (%zu bytes)", sizeof(Delegate));
      return Error::MemoryAllocationFailed;
    }
    new (delegate) Delegate(name, options);
    if (delegate->load(processed->data(), processed->size(), context.get_named_data_map(), load_scope(context), why) !=
        Error::Ok) {
      report_error(name, "%s", why.c_str());
      delegate->~Delegate();
      return Error::InvalidProgram;  // whatever the step that failed: the program cannot run here as it is
    }
    // The engine holds its own copy now; give the program's copy back.
    processed->Free();
    return delegate;
  }

  Error execute(BackendExecutionContext& context, DelegateHandle* handle, Span<EValue*> args) const override {
    // The tracer, when the runner attached one (ETDumpGen): the delegate logs its steps into it.
    return static_cast<Delegate*>(handle)->execute(args, context.event_tracer());
  }

  void destroy(DelegateHandle* handle) const override {
    if (handle != nullptr) static_cast<Delegate*>(handle)->~Delegate();
  }

  Error get_option(BackendOptionContext& /*context*/, Span<BackendOption>& options) override {
    const CounterTotals totals = counter_totals();
    for (BackendOption& option : options) {
      int64_t counter = 0;
      if (read_counter(totals, option.key, &counter)) {
        option.value = clamp_to_int(counter);
      } else if (std::strcmp(option.key, kCudaAllocatorState) == 0) {
        option.value = static_cast<int>(cuda_allocator_state());
      } else {
        ET_LOG(Error, "TensorRTBackend has no option '%s'; readable: %s, %s", option.key, counter_names(),
               kCudaAllocatorState);
        return Error::NotFound;
      }
    }
    return Error::Ok;
  }

  Error set_option(BackendOptionContext& /*context*/, const Span<BackendOption>& options) override {
    for (const BackendOption& option : options) {
      ET_LOG(Error,
             "TensorRTBackend has no process-wide option '%s'; profile choice is per execution "
             "(etrt::OptimizationProfileGuard) or per module (load options, etrt/options.h)",
             option.key);
      return Error::NotSupported;
    }
    return Error::Ok;
  }
};

TensorRTBackend g_backend;

const Error g_registered = [] {
  const Error status = executorch::runtime::register_backend({kBackendId, &g_backend});
  if (status != Error::Ok) {
    ET_LOG(Error, "etrt: registering backend '%s' failed (error %d); another library already registered it", kBackendId,
           static_cast<int>(status));
  }
  return status;
}();

}  // namespace
}  // namespace etrt::backend
