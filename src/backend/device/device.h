#pragma once
// Memory and stream plumbing between ExecuTorch tensors and an engine.
//
// A host engine (the GPU-free NvInfer's host mode) reads and writes
// ExecuTorch's tensors in place; nothing here calls CUDA for it, in any build.
// A device engine (TensorRT, the GPU-free NvInfer's CUDA mode) needs a stream
// and device pointers. device_*_cuda.cpp (ETRT_WITH_CUDA) provide them:
//
//  * the stream: the caller's (etrt::CudaStreamGuard, which is ExecuTorch's
//    CallerStreamGuard in builds that have it), else cudaStreamPerThread. The
//    profile switch, the copies and the enqueue of one execution all go on it.
//  * device memory is bound in place; host memory is staged through one device
//    buffer per delegate argument, made at load for the largest size the engine
//    accepts (inputs) or produces (outputs), with async copies on the stream --
//    except on an integrated GPU, which reaches host memory itself: there the
//    host memory it can address is bound in place too (binding_policy.h).
//  * an in-flight event per delegate, recorded after each execution's last work:
//    the next execution makes its stream wait for it (on the device, and only
//    when the stream differs), destroy waits for it on the host, and an
//    execution waits for it before returning only when host memory is still in
//    use by the stream (host outputs, inputs from pinned memory).
//  * the blob's device_id is made current around load, execute and destroy, and
//    the previous device restored.
//
// device_host.cpp is the build without CUDA: device engines are refused at load
// with a message that says how to rebuild.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include <executorch/runtime/core/exec_aten/exec_aten.h>

#include "backend/glue/counters.h"
#include "backend/policy/binding_policy.h"
#include "common/error.h"
#include "engine/engine.h"

namespace etrt::backend {

// Memory an engine's contexts run in (scratch) or a staging buffer: host or device.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept : kind_(other.kind_), data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;

  // MemoryAllocationFailed when the memory is not there; NotSupported for device memory in a build without CUDA.
  [[nodiscard]] Error allocate(engine::MemoryKind kind, size_t bytes, Diagnostic& why);
  void* data() const { return data_; }
  size_t size() const { return size_; }
  engine::MemoryKind kind() const { return kind_; }
  // Trades memory with `other` (a shared scratch pool replacing its buffer, scratch_pool.cpp).
  void swap(DeviceBuffer& other) noexcept {
    std::swap(kind_, other.kind_);
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
  }

 private:
  // Frees the memory the way allocate() got it: device_memory_cuda.cpp or device_host.cpp.
  void release();
  engine::MemoryKind kind_ = engine::MemoryKind::kHost;
  void* data_ = nullptr;
  size_t size_ = 0;
};

// The CUDA graph of one execution context's enqueue, for the profile, input shapes and bound addresses it was
// captured with (device_graphs_cuda.cpp). Replayed only while the context is unchanged since the capture: TensorRT
// reconfigures a context at the first enqueue after a switch, a new shape or a new address, and a graph keeps the
// kernel arguments of the configuration it captured, so any change drops it (docs/cuda-graphs.md). Hence one per
// context; context_per_profile keeps the decode context's graph across prefills, which run on another context.
struct GraphSet {
  static constexpr size_t kCapacity = 1;
  struct Entry {
    void* graph = nullptr;  // cudaGraphExec_t; null: the slot is free
    int32_t profile = -1;
    std::vector<Shape> shapes;
    std::vector<void*> addresses;
    uint64_t last_use = 0;
  };
  std::vector<Entry> entries;  // kCapacity of them, sized at load
  uint64_t clock = 0;

  GraphSet() = default;
  ~GraphSet();
  GraphSet(GraphSet&& other) noexcept : entries(std::move(other.entries)), clock(other.clock) {}
  GraphSet(const GraphSet&) = delete;
  GraphSet& operator=(const GraphSet&) = delete;
  GraphSet& operator=(GraphSet&&) = delete;
};

// A delegate's device resources, made at load by prepare_device_state(). Empty (device == false) for host engines.
struct DeviceState {
  bool device = false;  // the engine runs in device memory
  int device_id = 0;    // the blob's device_id
  // The memory the engine binds in place (binding_policy.h): a host engine's, or what the device reaches, asked of
  // CUDA at load (prepare_device_state).
  EngineReach reach = EngineReach::host_engine();
  DeviceTraits traits;
  // Opaque CUDA objects (cudaEvent_t, cudaStream_t) so this header needs no CUDA.
  void* in_flight_event = nullptr;   // recorded after each execution's last work
  void* in_flight_stream = nullptr;  // the stream it was last recorded on
  bool in_flight_recorded = false;
  // One buffer per delegate argument, inputs then outputs, at capacity; and whether this execution staged each one
  // (kNotStaged, kStagedFromHost, kStagedRealigned), which also says how its copies are counted (CopiedBytes).
  std::vector<DeviceBuffer> staging;
  std::vector<uint8_t> staged;
  // CUDA graphs (LoadOptions::cuda_graphs, device engines only): one set per execution context; `graphs_failed`
  // once a capture has failed, after which every execution enqueues plainly.
  std::vector<GraphSet> graphs;
  bool graphs_failed = false;

  DeviceState() = default;
  ~DeviceState();
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;
};

// The last work issued in a shared scratch buffer (scratch_pool.h): the in-flight event of the execution that issued
// it (its delegate's, recorded by DeviceCall::end) and the stream it went on. Host engines run synchronously and
// leave none: for them the pool's lock is the whole ordering.
struct ScratchTurn {
  void* event = nullptr;   // cudaEvent_t; null: nothing of the last user's may still be running
  void* stream = nullptr;  // cudaStream_t
  bool finished = true;    // the execution waited for its work before returning
};

// Blocks until the work `turn` names has finished on the device (before a shared scratch buffer is replaced).
void wait_for_scratch_turn(const ScratchTurn& turn);

// Destroys every CUDA graph the delegate captured (the scratch its contexts run in moved: a graph keeps the old
// addresses). The next execution of each context enqueues plainly first, as after any change.
void drop_all_graphs(DeviceState* state);

// DeviceState::staged values.
inline constexpr uint8_t kNotStaged = 0;
inline constexpr uint8_t kStagedFromHost = 1;   // host memory through a device buffer: host-to-device and back
inline constexpr uint8_t kStagedRealigned = 2;  // the same memory at an aligned address: a host or device copy

// Where a tensor lives, for a host engine, which never asks CUDA: ExecuTorch's word for it (Tensor::device_type(); a
// program exported with a CUDA target device places its delegate arguments on CUDA), host memory otherwise.
inline MemoryPlace host_engine_place_of(executorch::runtime::etensor::DeviceType type) {
  return type == executorch::runtime::etensor::DeviceType::CPU ? MemoryPlace::kPageableHost : MemoryPlace::kOtherDevice;
}
inline MemoryPlace host_engine_place_of(const executorch::aten::Tensor& tensor) {
  return host_engine_place_of(tensor.device_type());
}

// True when this build can run engines whose memory kind is `kind`.
bool memory_kind_supported(engine::MemoryKind kind);

// Makes a CUDA device current while it lives and restores the previous one. Inert until activate() succeeds.
class DeviceGuard {
 public:
  DeviceGuard() = default;
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

  // NotSupported for a device this machine does not have or a build without CUDA, Internal when CUDA fails.
  // `check_range`: first ask how many devices there are (at load; executions reuse a device_id checked then).
  [[nodiscard]] Error activate(int64_t device_id, Diagnostic& why, bool check_range = true);
  bool active() const { return active_; }

 private:
  bool active_ = false;   // activate() succeeded
  bool restore_ = false;  // it changed the current device, so the destructor changes it back
  int previous_ = -1;
};

// Load-time device work (binding contexts to profiles) goes on this stream; finish_load_work() waits for it, so
// no execution's stream ever races with it.
engine::StreamHandle load_stream();
[[nodiscard]] Error finish_load_work(Diagnostic& why);

// Makes the staging buffers (one per delegate argument, `staging_bytes[k]` each) and the in-flight event on the
// current device, which must be `device_id`.
[[nodiscard]] Error prepare_device_state(DeviceState* state, int device_id, const std::vector<size_t>& staging_bytes,
                                         Diagnostic& why);

// Writes `bytes` of `data` (zeros when null) into `buffer`, synchronously: finished, for work on any stream, when it
// returns. Host memory: memcpy/memset. Device memory: on the current device, which must be the buffer's. Internal when
// CUDA fails. Delegate-owned state is initialised and reset with it (delegate_state.h).
[[nodiscard]] Error fill_buffer(const DeviceBuffer& buffer, const void* data, size_t bytes, Diagnostic& why);

// destroy(): blocks until the delegate's last execution has finished on the device.
void wait_for_in_flight(DeviceState& state);

// Makes an empty GraphSet per context, each with room for `num_inputs` shapes and `num_args` addresses.
void prepare_graphs(DeviceState* state, size_t num_contexts, size_t num_inputs, size_t num_args);

// The device side of one execution. For a host engine every call is a pass-through and no CUDA is touched.
// Every failure writes its reason into the `why` given at construction (without the "TensorRT delegate <name>: "
// prefix: the executor adds it when it reports); `delegate` names the delegate in log lines only.
class DeviceCall {
 public:
  DeviceCall(DeviceState& state, const char* delegate, Diagnostic& why) noexcept
      : state_(state), delegate_(delegate), why_(why) {}
  DeviceCall(const DeviceCall&) = delete;
  DeviceCall& operator=(const DeviceCall&) = delete;

  // Where begin() finds the caller's stream: etrt::current_cuda_stream (etrt/stream_guard.h), which the glue
  // implements and the executor hands in; asked only by a device engine's call.
  using CallerStream = std::optional<void*> (*)() noexcept;

  // Decision 6's "wait for the previous in-flight work" (docs/design.md): makes the delegate's device current, takes
  // the caller's stream and orders it after the delegate's in-flight event.
  [[nodiscard]] Error begin(CallerStream caller_stream);
  engine::StreamHandle stream() const { return stream_; }

  // Something that may run on the device was issued on stream() (a switch, an enqueue): end() must record it.
  void issued() { issued_ = true; }

  // The bytes this execution's copies moved so far, by where they moved.
  const CopiedBytes& copied() const { return copied_; }

  // The address the engine gets for delegate argument `k` (inputs first). Memory the engine can use in place (any
  // memory for host engines; device memory of the delegate's device for device engines) is bound as it is; host
  // memory is staged: inputs are copied into staging[k] on the stream now, outputs copied back by
  // copy_back_outputs(). `name` words the refusals: InvalidArgument for a tensor the caller must change (memory of
  // another device, larger than its staging buffer, null), Internal when the staging copy itself fails.
  [[nodiscard]] Error bind(size_t k, executorch::aten::Tensor& tensor, bool is_input, const char* name, void** address);

  // True when bind() would bind `tensor` as it is, without staging (binding_policy.h): 256-byte-aligned memory the
  // engine reaches, which for a device engine CUDA is asked about, as bind() asks it, on every call. A repeated
  // execution (Executor::repeats_last) checks with it that each argument is still where it was bound; host memory bound
  // in place (an integrated GPU's) is then marked in use by the stream, as bind() marks it, so end() waits for it.
  bool binds_in_place(const executorch::aten::Tensor& tensor) {
    if (state_.device) return binds_in_place_on_device(tensor);
    return choose_binding(host_engine_place_of(tensor), engine::io_address_aligned(tensor.const_data_ptr()),
                          state_.reach) == Binding::kInPlace;
  }

  // After a successful enqueue: copies every staged output (arguments first_output.. of `tensors`) back into its
  // host tensor, at the size the tensor was resized to. Null entries (aliased outputs) are skipped. Internal when a
  // copy fails.
  [[nodiscard]] Error copy_back_outputs(executorch::aten::Tensor* const* tensors, size_t first_output, size_t count);

  // An input some output is written into in place: a device engine updates it where it lives, so it must be
  // device memory (host memory would be staged, and the update lost); refuses host memory, naming `name`, with
  // InvalidArgument.
  [[nodiscard]] Error check_in_place(const executorch::aten::Tensor& input, const char* name);

  // After a successful enqueue, for an output written in place into input argument `k` (`bytes` long): if the
  // input was staged, copies the updated staging buffer back into it; then, if `write_back` is given and is other
  // memory, copies the updated input into it (the mutable buffer's write-back slot). On the stream. Internal when a
  // copy fails.
  [[nodiscard]] Error finish_in_place(size_t k, executorch::aten::Tensor& input, executorch::aten::Tensor* write_back,
                                      size_t bytes, const char* name);

  // After a successful enqueue, for a delegate-owned state whose new value the engine wrote to an output of its
  // own (not in place): copies it into the state's storage, on the stream. `name` names the state in a refusal
  // (Internal when the copy fails).
  [[nodiscard]] Error write_back_state(void* state, const void* output, size_t bytes, const char* name);

  // Runs `context` on the stream. With `graphs` (CUDA graphs enabled and not failed) and `steady` (the context
  // last ran with exactly this profile, these input shapes and these addresses), replays the graph captured for
  // them, capturing it first if there is none; otherwise a plain enqueue. A capture that fails disables graphs for
  // the delegate (one log line) and this execution enqueues plainly. A failed enqueue returns the context's code
  // (InvalidArgument when the engine blamed the input data); a failed graph replay, Internal.
  [[nodiscard]] Error enqueue(engine::ExecutionContext& context, GraphSet* graphs, bool steady, int32_t profile,
                              const std::vector<Shape>& shapes, const std::vector<void*>& addresses);

  // Records the in-flight event after whatever this execution issued and waits for it when host memory is still
  // in use by the stream. Returns `status`, or Internal if CUDA failed here (its reason then replaces what `why`
  // held). The destructor restores the device.
  [[nodiscard]] Error end(Error status);

  // A delegate drawing on a shared scratch buffer, under the pool's lock. After begin(): orders this execution's
  // stream after the pool's last work when another stream issued it (cudaStreamWaitEvent, on the device; the host
  // does not wait). Internal when CUDA fails.
  [[nodiscard]] Error wait_for_scratch(const ScratchTurn& last);
  // After end(): if this execution issued work and recorded its in-flight event, it is the pool's last work now.
  void pass_scratch_turn(ScratchTurn* turn) const;

 private:
  // Where `tensor` lives, as the delegate's device sees it (device engines ask CUDA; host engines read the tensor's
  // device type). `device` receives the device of device memory, for messages.
  MemoryPlace place_of(const executorch::aten::Tensor& tensor, int* device) const;
  bool binds_in_place_on_device(const executorch::aten::Tensor& tensor);

  DeviceState& state_;
  const char* delegate_;
  Diagnostic& why_;
  DeviceGuard device_;
  engine::StreamHandle stream_ = nullptr;
  bool issued_ = false;
  // Host memory that the stream still reads or writes after the calls return: wait before returning.
  bool host_memory_in_flight_ = false;
  // The caller handed over its stream (CudaStreamGuard); without one, end() waits for the execution's work.
  bool caller_stream_ = false;
  // end() recorded the in-flight event after this execution's work, and waited for it on the host (nothing of it
  // is left on the device).
  bool recorded_ = false;
  bool finished_ = false;
  CopiedBytes copied_;
};

}  // namespace etrt::backend
