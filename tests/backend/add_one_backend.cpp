// A non-TensorRT delegate for the end-to-end tests: "EtrtTestAddOne" copies
// its float input to its output plus one. It exists to show that etrt's
// profile request never reaches other backends, and that a .pte mixing them
// runs.

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/exec_aten/util/tensor_util.h>

namespace {

namespace et = ::executorch::runtime;

class AddOneBackend final : public et::BackendInterface {
 public:
  bool is_available() const override { return true; }

  et::Result<et::DelegateHandle*> init(et::BackendInitContext& context, et::FreeableBuffer* processed,
                                       et::ArrayRef<et::CompileSpec>) const override {
    processed->Free();
    // Any non-null handle will do; this backend keeps no state.
    return context.get_runtime_allocator()->allocate(1);
  }

  et::Error execute(et::BackendExecutionContext&, et::DelegateHandle*, et::Span<et::EValue*> args) const override {
    if (args.size() != 2 || !args[0]->isTensor() || !args[1]->isTensor()) return et::Error::InvalidArgument;
    const auto& in = args[0]->toTensor();
    auto& out = args[1]->toTensor();
    ET_CHECK_OK_OR_RETURN_ERROR(et::resize_tensor(out, in.sizes()));
    const float* src = in.const_data_ptr<float>();
    float* dst = out.mutable_data_ptr<float>();
    for (ssize_t i = 0; i < in.numel(); ++i) dst[i] = src[i] + 1.0f;
    return et::Error::Ok;
  }
};

AddOneBackend g_add_one;
const auto g_registered = et::register_backend({"EtrtTestAddOne", &g_add_one});

}  // namespace
