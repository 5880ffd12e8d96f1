// describe_engine (inspection.h) on a build against the GPU-free NvInfer (the default): its own reading of its
// engines, etrt_gpufree_describeEngine -- the decoder and checks deserializeCudaEngine runs, without a context.
#include <new>
#include <string>

#include <NvInferRuntime.h>

#include "tools/inspection.h"

namespace etrt::tools {

Error describe_engine(const void* data, size_t size, std::string* text) {
  struct Sink {
    std::string* text;
    bool out_of_memory = false;
  } sink{text};
  const bool ok = etrt_gpufree_describeEngine(
      data, size,
      [](void* context, const char* bytes, size_t length) {
        auto* s = static_cast<Sink*>(context);
        try {
          s->text->assign(bytes, length);
        } catch (const std::bad_alloc&) {
          s->out_of_memory = true;
        }
      },
      &sink);
  if (sink.out_of_memory) return Error::MemoryAllocationFailed;
  return ok ? Error::Ok : Error::InvalidArgument;
}

}  // namespace etrt::tools
