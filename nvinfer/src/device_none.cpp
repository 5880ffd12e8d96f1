// The GPU-free NvInfer in a build without CUDA: CUDA-mode engines still load
// (so they can be inspected and packed anywhere), but anything that would
// need the GPU is refused here, saying how to rebuild. The CudaKernels are
// never reached: no CUDA-mode context can be created in such a build.
#include "device_runtime.h"
#include "kernels.h"

namespace etrt::gpufree {

namespace device {

namespace {
bool no_cuda(std::string* error) {
  if (error != nullptr)
    *error =
        "this engine runs in CUDA device memory (a CUDA-mode GPU-free NvInfer engine), but this build of etrt has no "
        "CUDA: rebuild with -DETRT_WITH_CUDA=ON and run it on a machine with a GPU";
  return false;
}
}  // namespace

bool built_with_cuda() { return false; }
bool current_device(int* device, std::string* error) {
  *device = -1;
  return no_cuda(error);
}
bool allocate(size_t, void** out, std::string* error) {
  *out = nullptr;
  return no_cuda(error);
}
void release(void*) {}
bool upload(void*, const void*, size_t, std::string* error) { return no_cuda(error); }
bool pointer_info(const void*, PointerInfo* info, std::string* error) {
  *info = PointerInfo{};
  return no_cuda(error);
}
bool touch_ends(void*, size_t, StreamHandle, std::string* error) { return no_cuda(error); }
bool launch_status(std::string* error) { return no_cuda(error); }
bool synchronize_stream(StreamHandle, std::string* error) { return no_cuda(error); }
bool create_event(void**, std::string* error) { return no_cuda(error); }
void destroy_event(void*) {}
bool record_event(void*, StreamHandle, std::string* error) { return no_cuda(error); }
bool event_complete(void*) { return true; }
void synchronize_event(void*) {}
bool allocate_mapped_flag(int** flag, std::string* error) {
  *flag = nullptr;
  return no_cuda(error);
}
void release_mapped_flag(int*) {}
bool stream_capturing(StreamHandle, bool* capturing, std::string*) {
  *capturing = false;
  return true;
}
bool store_word(int32_t*, int32_t, StreamHandle, std::string* error) { return no_cuda(error); }
bool check_word(const int32_t*, int32_t, int*, StreamHandle, std::string* error) { return no_cuda(error); }

}  // namespace device

void CudaKernels::embedding(const void*, DataType, int64_t, const float*, int64_t, int64_t, float*) const {}
void CudaKernels::add(const float*, const float*, float*, int64_t) const {}
void CudaKernels::add_bias(const float*, const float*, float*, int64_t, int64_t) const {}
void CudaKernels::scale(const float*, float, float*, int64_t) const {}
void CudaKernels::matmul(const float*, const float*, float*, int64_t, int64_t, int64_t) const {}
void CudaKernels::copy(const void*, void*, uint64_t) const {}
int64_t CudaKernels::kv_cache_update(float*, const float*, const void*, DataType, int64_t, int64_t, int64_t,
                                     int64_t) const {
  return -1;
}
int64_t CudaKernels::causal_attention(const float*, const float*, const float*, const void*, DataType, int64_t, int64_t,
                                      int64_t, int64_t, int64_t, float, float*) const {
  return -1;
}

}  // namespace etrt::gpufree
