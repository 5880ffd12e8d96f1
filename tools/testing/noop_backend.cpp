#include "noop_backend.h"

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/exec_aten/util/tensor_util.h>

namespace {

namespace et = ::executorch::runtime;
using SizesType = ::executorch::aten::SizesType;

class NoopBackend final : public et::BackendInterface {
 public:
  bool is_available() const override { return true; }

  et::Result<et::DelegateHandle*> init(et::BackendInitContext& context, et::FreeableBuffer* processed,
                                       et::ArrayRef<et::CompileSpec>) const override {
    processed->Free();
    return context.get_runtime_allocator()->allocate(1);  // any non-null handle: no state
  }

  et::Error execute(et::BackendExecutionContext&, et::DelegateHandle*, et::Span<et::EValue*> args) const override {
    const auto in = args[0]->toTensor().sizes();
    auto& out = args[1]->toTensor();
    const size_t rank = static_cast<size_t>(out.dim());
    if (in.size() == rank) return et::resize_tensor(out, in);
    SizesType sizes[16];
    if (rank > 16 || in.size() > rank) return et::Error::InvalidArgument;
    for (size_t d = 0; d < rank; ++d) sizes[d] = d < in.size() ? in[d] : out.sizes()[d];
    return et::resize_tensor(out, executorch::aten::ArrayRef<SizesType>(sizes, rank));
  }
};

NoopBackend g_noop;
const auto g_registered = et::register_backend({etrt::testing::kNoopBackendId, &g_noop});

}  // namespace
