// describe_engine (inspection.h) on a build against NVIDIA's TensorRT: its plans are opaque, so nothing is read.
#include <string>

#include "tools/inspection.h"

namespace etrt::tools {

Error describe_engine(const void* /*data*/, size_t /*size*/, std::string* text) {
  *text =
      "this etrt was built against NVIDIA's TensorRT, whose plans are opaque; engines of the GPU-free NvInfer "
      "(magic 'ETRF') are read by a build against it (the default)";
  return Error::NotSupported;
}

}  // namespace etrt::tools
