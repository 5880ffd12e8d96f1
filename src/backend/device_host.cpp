// Device plumbing in a build without CUDA. Device engines are refused at load
// (memory_kind_supported, delegate_loader.cpp), so only host memory exists
// here and every DeviceCall is a pass-through.
#include <cstdlib>
#include <new>

#include "backend/device.h"
#include "backend/last_error.h"
#include "backend/staging.h"

namespace etrt::backend {

namespace {
const char kNoCuda[] = "this etrt build has no CUDA path; rebuild with -DETRT_WITH_CUDA=ON";
}  // namespace

void DeviceBuffer::release() {
  std::free(data_);
  data_ = nullptr;
  size_ = 0;
}

bool DeviceBuffer::allocate(engine::MemoryKind kind, size_t bytes, std::string* error) {
  release();
  if (kind != engine::MemoryKind::kHost) {
    *error = std::string("device memory requested, but ") + kNoCuda;
    return false;
  }
  kind_ = kind;
  if (bytes == 0) return true;
  // 256-byte alignment matches what cudaMalloc gives, so host and device
  // engines see the same alignment guarantees.
  const size_t rounded = (bytes + 255) / 256 * 256;
  data_ = std::aligned_alloc(256, rounded);
  if (data_ == nullptr) {
    *error = "could not allocate " + std::to_string(bytes) + " bytes of engine scratch memory";
    return false;
  }
  size_ = bytes;
  return true;
}

DeviceState::~DeviceState() = default;

bool memory_kind_supported(engine::MemoryKind kind) { return kind == engine::MemoryKind::kHost; }

DeviceGuard::~DeviceGuard() = default;

bool DeviceGuard::activate(int64_t /*device_id*/, std::string* error, bool /*check_range*/) {
  if (error != nullptr) *error = std::string("a CUDA device is needed, but ") + kNoCuda;
  return false;
}

engine::StreamHandle load_stream() { return nullptr; }
bool finish_load_work(std::string* /*error*/) { return true; }

bool prepare_device_state(DeviceState* /*state*/, int /*device_id*/, const std::vector<size_t>& /*staging_bytes*/,
                          std::string* error) {
  *error = kNoCuda;
  return false;
}

void wait_for_in_flight(DeviceState& /*state*/) {}

GraphSet::~GraphSet() = default;
void prepare_graphs(DeviceState* /*state*/, size_t /*num_contexts*/, size_t /*num_inputs*/, size_t /*num_args*/) {}

bool DeviceCall::enqueue(engine::ExecutionContext& context, GraphSet* /*graphs*/, bool /*steady*/, int32_t profile,
                         const std::vector<Shape>& /*shapes*/, const std::vector<void*>& /*addresses*/) {
  if (context.enqueue(stream_)) return true;
  report_error(delegate_, "the engine failed to run under profile %d: %s", profile, context.last_error());
  return false;
}

executorch::runtime::Error DeviceCall::begin() { return executorch::runtime::Error::Ok; }

executorch::runtime::Error DeviceCall::bind(size_t k, executorch::aten::Tensor& tensor, bool is_input, const char* name,
                                            void** address) {
  return bind_host(state_, delegate_, k, tensor, is_input, name, address) ? executorch::runtime::Error::Ok
                                                                          : executorch::runtime::Error::InvalidArgument;
}

bool DeviceCall::copy_back_outputs(executorch::aten::Tensor* const* tensors, size_t first_output, size_t count) {
  copy_back_host(state_, tensors, first_output, count);
  return true;
}

bool DeviceCall::check_in_place(const executorch::aten::Tensor& /*input*/, const char* /*name*/) { return true; }

bool DeviceCall::finish_in_place(size_t k, executorch::aten::Tensor& input, executorch::aten::Tensor* write_back,
                                 size_t bytes, const char* /*name*/) {
  finish_in_place_host(state_, k, input, write_back, bytes);
  return true;
}

executorch::runtime::Error DeviceCall::end(executorch::runtime::Error status) { return status; }

}  // namespace etrt::backend
