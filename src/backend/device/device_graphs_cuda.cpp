// Device plumbing over the CUDA runtime (device.h): CUDA graphs of an execution context's enqueue -- captured,
// replayed while the context is unchanged, dropped when it changes (docs/cuda-graphs.md).
#include <cuda_runtime_api.h>

#include <executorch/runtime/platform/log.h>

#include "backend/device/device_cuda.h"
#include "common/error.h"

namespace etrt::backend {

GraphSet::~GraphSet() {
  // ~Delegate() has made the device current and waited for the last execution.
  for (Entry& e : entries)
    if (e.graph != nullptr) (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(e.graph));
}

void prepare_graphs(DeviceState* state, size_t num_contexts, size_t num_inputs, size_t num_args) {
  state->graphs.clear();
  state->graphs.reserve(num_contexts);
  for (size_t c = 0; c < num_contexts; ++c) {
    GraphSet set;
    set.entries.resize(GraphSet::kCapacity);
    for (GraphSet::Entry& e : set.entries) {
      e.shapes.resize(num_inputs);
      e.addresses.resize(num_args);
    }
    state->graphs.push_back(std::move(set));
  }
}

namespace {

void drop_graphs(GraphSet& graphs) {
  for (GraphSet::Entry& e : graphs.entries) {
    if (e.graph == nullptr) continue;
    (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(e.graph));
    e.graph = nullptr;
  }
}

bool same_key(const GraphSet::Entry& e, int32_t profile, const std::vector<Shape>& shapes,
              const std::vector<void*>& addresses) {
  return e.graph != nullptr && e.profile == profile && e.shapes == shapes && e.addresses == addresses;
}

// Captures `context`'s enqueue on `stream` and instantiates it; null (and the reason in `why`) if CUDA or the
// engine refuses. The capture is ended on every path, so the stream is usable afterwards.
cudaGraphExec_t capture(engine::ExecutionContext& context, cudaStream_t stream, Diagnostic& why) {
  // Thread-local: calls other threads make meanwhile (another delegate's cudaMalloc, say) do not invalidate it.
  cudaError_t status = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (status != cudaSuccess) {
    (void)fail(why, Error::Internal, "cudaStreamBeginCapture: %s", cuda_text(status).c_str());
    return nullptr;
  }
  const bool enqueued = context.enqueue(stream, why) == Error::Ok;
  if (!enqueued) why.prepend("the engine's enqueue could not be captured: ");
  cudaGraph_t graph = nullptr;
  status = cudaStreamEndCapture(stream, &graph);
  if (status != cudaSuccess && enqueued)
    (void)fail(why, Error::Internal, "cudaStreamEndCapture: %s", cuda_text(status).c_str());
  cudaGraphExec_t exec = nullptr;
  if (enqueued && status == cudaSuccess) {
    status = cudaGraphInstantiate(&exec, graph, 0);
    if (status != cudaSuccess) {
      (void)fail(why, Error::Internal, "cudaGraphInstantiate: %s", cuda_text(status).c_str());
      exec = nullptr;
    }
  }
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();
  return exec;
}

}  // namespace

void drop_all_graphs(DeviceState* state) {
  for (GraphSet& graphs : state->graphs) drop_graphs(graphs);
}

Error DeviceCall::enqueue(engine::ExecutionContext& context, GraphSet* graphs, bool steady, int32_t profile,
                          const std::vector<Shape>& shapes, const std::vector<void*>& addresses) {
  // Only on the caller's own stream: the legacy stream cannot be captured, and without a caller stream every
  // execution waits for its work before returning anyway.
  const bool use_graphs = graphs != nullptr && state_.device && !state_.graphs_failed && caller_stream_ &&
                          !is_special_stream(as_stream(stream_));
  // A change to the context since the capture (a switch, a shape, an address: `steady` is false) makes its graphs
  // stale, even if a later execution returns to the captured configuration. A launch still in flight is freed by
  // CUDA when it completes.
  if (graphs != nullptr && !steady) drop_graphs(*graphs);
  if (use_graphs && steady) {
    GraphSet::Entry* entry = nullptr;
    for (GraphSet::Entry& e : graphs->entries)
      if (same_key(e, profile, shapes, addresses)) entry = &e;
    if (entry == nullptr) {
      // Only logged: execution goes on without graphs, so the reason stays out of the caller's `why`.
      Diagnostic capture_why;
      cudaGraphExec_t exec = capture(context, as_stream(stream_), capture_why);
      if (exec == nullptr) {
        state_.graphs_failed = true;
        ET_LOG(Info, "TensorRT delegate %s: CUDA graphs turned off for good, enqueueing plainly: %s", delegate_,
               capture_why.c_str());
      } else {
        // The least recently used slot (a free one has never been used).
        entry = &graphs->entries[0];
        for (GraphSet::Entry& e : graphs->entries)
          if (e.graph == nullptr || e.last_use < entry->last_use) entry = &e;
        if (entry->graph != nullptr) (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(entry->graph));
        entry->graph = exec;
        entry->profile = profile;
        entry->shapes = shapes;
        entry->addresses = addresses;
      }
    }
    if (entry != nullptr) {
      entry->last_use = ++graphs->clock;
      const cudaError_t status = cudaGraphLaunch(static_cast<cudaGraphExec_t>(entry->graph), as_stream(stream_));
      if (status == cudaSuccess) return Error::Ok;
      return fail(why_, Error::Internal, "replaying the CUDA graph of profile %d failed (cudaGraphLaunch): %s", profile,
                  cuda_text(status).c_str());
    }
  }
  const Error status = context.enqueue(stream_, why_);
  if (status != Error::Ok) why_.prepend("the engine failed to run under profile %d: ", profile);
  return status;
}

}  // namespace etrt::backend
