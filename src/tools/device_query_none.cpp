// inspection.h, build without CUDA: no device to ask.
#include "tools/inspection.h"

namespace etrt::tools {

bool built_with_cuda() { return false; }

Error device_memory(int device, uint64_t* bytes, Diagnostic& why) {
  (void)bytes;
  return fail(why, Error::NotSupported, "this etrt was built without CUDA, so it cannot ask CUDA device %d", device);
}

}  // namespace etrt::tools
