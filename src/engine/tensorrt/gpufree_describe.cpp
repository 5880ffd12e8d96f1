// describe_gpufree_engine (tensorrt_engine.h): the GPU-free NvInfer's own reading of its engines, for tools.
#include <new>
#include <string>

#include <NvInferRuntime.h>  // defines ETRT_NVINFER_GPU_FREE when it is the GPU-free implementation's
#include "engine/tensorrt/tensorrt_engine.h"

namespace etrt::engine::tensorrt {

Error describe_gpufree_engine(const void* data, size_t size, std::string* text) {
#if defined(ETRT_NVINFER_GPU_FREE)
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
#else
  (void)data;
  (void)size;
  *text =
      "this etrt was built against NVIDIA's TensorRT, whose plans are opaque; engines of the GPU-free NvInfer "
      "(magic 'ETRF') are read by a build against it (the default)";
  return Error::NotSupported;
#endif
}

}  // namespace etrt::engine::tensorrt
