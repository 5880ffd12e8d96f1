// Device plumbing in a build without CUDA. Device engines are refused at load
// (memory_kind_supported, delegate_loader.cpp), so only host memory exists
// here and every DeviceCall is a pass-through.
#include <cstdlib>
#include <cstring>
#include <new>

#include "backend/device/device.h"
#include "backend/device/staging.h"
#include "common/error.h"

namespace etrt::backend {

namespace {
const char kNoCuda[] = "this etrt build has no CUDA path; rebuild with -DETRT_WITH_CUDA=ON";
}  // namespace

void DeviceBuffer::release() {
  std::free(data_);
  data_ = nullptr;
  size_ = 0;
}

Error DeviceBuffer::allocate(engine::MemoryKind kind, size_t bytes, Diagnostic& why) {
  release();
  if (kind != engine::MemoryKind::kHost)
    return fail(why, Error::NotSupported, "device memory requested, but %s", kNoCuda);
  kind_ = kind;
  // 256-byte alignment matches what cudaMalloc gives, so host and device
  // engines see the same alignment guarantees. Never null, even for 0 bytes:
  // TensorRT refuses a null tensor address (engine::io_address_aligned).
  const size_t rounded = bytes == 0 ? 256 : (bytes + 255) / 256 * 256;
  data_ = std::aligned_alloc(256, rounded);
  if (data_ == nullptr)
    return fail(why, Error::MemoryAllocationFailed, "could not allocate %zu bytes of engine scratch memory", bytes);
  size_ = bytes;
  return Error::Ok;
}

DeviceState::~DeviceState() = default;

bool memory_kind_supported(engine::MemoryKind kind) { return kind == engine::MemoryKind::kHost; }

DeviceGuard::~DeviceGuard() = default;

Error DeviceGuard::activate(int64_t /*device_id*/, Diagnostic& why, bool /*check_range*/) {
  return fail(why, Error::NotSupported, "a CUDA device is needed, but %s", kNoCuda);
}

engine::StreamHandle load_stream() { return nullptr; }
Error finish_load_work(Diagnostic& /*why*/) { return Error::Ok; }

Error prepare_device_state(DeviceState* /*state*/, int /*device_id*/, const std::vector<size_t>& /*staging_bytes*/,
                           Diagnostic& why) {
  return fail(why, Error::NotSupported, "%s", kNoCuda);
}

Error fill_buffer(const DeviceBuffer& buffer, const void* data, size_t bytes, Diagnostic& /*why*/) {
  if (data != nullptr)
    std::memcpy(buffer.data(), data, bytes);
  else
    std::memset(buffer.data(), 0, bytes);
  return Error::Ok;
}

void wait_for_in_flight(DeviceState& /*state*/) {}

void wait_for_scratch_turn(const ScratchTurn& /*turn*/) {}
void drop_all_graphs(DeviceState* /*state*/) {}

GraphSet::~GraphSet() = default;
void prepare_graphs(DeviceState* /*state*/, size_t /*num_contexts*/, size_t /*num_inputs*/, size_t /*num_args*/) {}

Error DeviceCall::enqueue(engine::ExecutionContext& context, GraphSet* /*graphs*/, bool /*steady*/, int32_t profile,
                          const std::vector<Shape>& /*shapes*/, const std::vector<void*>& /*addresses*/) {
  const Error status = context.enqueue(stream_, why_);
  if (status != Error::Ok) why_.prepend("the engine failed to run under profile %d: ", profile);
  return status;
}

Error DeviceCall::begin(CallerStream /*caller_stream*/) {
  (void)delegate_;  // names the delegate in device_graphs_cuda.cpp's log lines; nothing here logs
  return Error::Ok;
}

Error DeviceCall::bind(size_t k, executorch::aten::Tensor& tensor, bool is_input, const char* name, void** address) {
  return bind_host(state_, why_, k, tensor, is_input, name, address, copied_);
}

// No device engine loads in a build without CUDA: every engine is a host engine.
MemoryPlace DeviceCall::place_of(const executorch::aten::Tensor& tensor, int* device) const {
  *device = -1;
  return host_engine_place_of(tensor);
}

bool DeviceCall::binds_in_place_on_device(const executorch::aten::Tensor& /*tensor*/) { return false; }

Error DeviceCall::copy_back_outputs(executorch::aten::Tensor* const* tensors, size_t first_output, size_t count) {
  copy_back_host(state_, tensors, first_output, count, copied_);
  return Error::Ok;
}

Error DeviceCall::check_in_place(const executorch::aten::Tensor& /*input*/, const char* /*name*/) { return Error::Ok; }

Error DeviceCall::finish_in_place(size_t k, executorch::aten::Tensor& input, executorch::aten::Tensor* write_back,
                                  size_t bytes, const char* /*name*/) {
  finish_in_place_host(state_, k, input, write_back, bytes, copied_);
  return Error::Ok;
}

Error DeviceCall::write_back_state(void* state, const void* output, size_t bytes, const char* /*name*/) {
  std::memcpy(state, output, bytes);
  copied_.write_back += static_cast<int64_t>(bytes);
  return Error::Ok;
}

Error DeviceCall::end(Error status) { return status; }

// Host engines run synchronously: the pool's lock is the whole ordering.
Error DeviceCall::wait_for_scratch(const ScratchTurn& /*last*/) { return Error::Ok; }
void DeviceCall::pass_scratch_turn(ScratchTurn* /*turn*/) const { (void)recorded_, (void)finished_; }

}  // namespace etrt::backend
