// Executor::initialize: what executions need, made at load (executor.h): the execution contexts (one, or one bound to
// each profile), the scratch memory they run in, the staging buffers (and, for device engines, the in-flight event
// and CUDA graph sets), and the per-execution scratch. Runs in BackendInterface::init(); may allocate. Also the wait
// for the work in flight that the delegate's destructor starts with, and the shared scratch pool's new buffer given to
// the contexts at execute (rebind_scratch, cold).

#include <algorithm>
#include <utility>

#include <executorch/runtime/platform/log.h>

#include "backend/device/staging.h"
#include "backend/execute/executor.h"
#include "common/compiler.h"
#include "common/shape_text.h"

namespace etrt::backend {
namespace {

// Bytes of a tensor of `shape` and `dtype`; 0 for a shape with a dynamic dim left.
size_t bytes_of(const Shape& shape, engine::DataType dtype) {
  const int64_t n = shape.numel();
  return n > 0 ? static_cast<size_t>(n) * engine::element_size(dtype) : 0;
}

}  // namespace

void Executor::wait_for_in_flight() {
  DeviceGuard device;
  Diagnostic ignored;  // a device that cannot be made current: there is nothing to wait on it for
  if (device_.device && device.activate(device_.device_id, ignored, /*check_range=*/false) == Error::Ok)
    backend::wait_for_in_flight(device_);
}

Error Executor::initialize(engine::Engine& engine, const LoadOptions& options, const void* scope,
                           engine::StreamHandle stream, Diagnostic& why) {
  // The contexts are bound (bind_contexts) once nothing at load sets anything on them any more: a bound context
  // starts knowing nothing of what it holds.
  std::vector<std::unique_ptr<engine::ExecutionContext>> contexts;
  Error status = create_contexts(engine, options, scope, stream, &contexts, why);
  if (status == Error::Ok) status = prepare_staging(engine, stream, contexts, why);
  if (status != Error::Ok) {
    // The contexts go now: whatever was put on the load stream for them finishes first.
    Diagnostic ignored;
    if (device_.device) (void)finish_load_work(ignored);
    return status;
  }
  bind_contexts(engine, options, std::move(contexts));
  return Error::Ok;
}

Error Executor::create_contexts(engine::Engine& engine, const LoadOptions& options, const void* scope,
                                engine::StreamHandle stream,
                                std::vector<std::unique_ptr<engine::ExecutionContext>>* contexts, Diagnostic& why) {
  const int32_t n_profiles = engine.num_profiles();
  if (plan_.strategy == Strategy::kSwitch && !options.shared_scratch) {
    std::unique_ptr<engine::ExecutionContext> context;
    const Error status = engine.create_context(engine::ContextOptions{}, &context, why);
    if (status != Error::Ok) {
      why.prepend("could not create an execution context: ");
      return status;
    }
    contexts->push_back(std::move(context));
    private_scratch_.count(engine.device_memory_size());  // the context's own, which TensorRT allocated
    return Error::Ok;
  }
  // Every context runs in one scratch buffer: the delegate's own (context per profile: one delegate executes one
  // context at a time, under lock_, so they never need it at once), or the load's pool (shared_scratch), whose
  // members execute one at a time under its lock and whose memory the contexts get before their first enqueue
  // (Executor::take_scratch).
  Error status = Error::Ok;
  if (options.shared_scratch) {
    const ScratchSpec spec{scope, engine.memory_kind(), device_.device_id, engine.device_memory_size(), plan_.name};
    status = join_scratch_pool(spec, &device_, &scratch_pool_, why);
  } else {
    status = scratch_.allocate(engine.memory_kind(), engine.device_memory_size(), why);
    private_scratch_.count(scratch_.size());
  }
  if (status != Error::Ok) return status;
  const int32_t n_contexts = plan_.strategy == Strategy::kContextPerProfile ? n_profiles : 1;
  for (int32_t p = 0; p < n_contexts; ++p) {
    std::unique_ptr<engine::ExecutionContext> context;
    status = engine.create_context(engine::ContextOptions{/*user_managed_memory=*/true}, &context, why);
    if (status != Error::Ok) {
      why.prepend("could not create the execution context for profile %d: ", p);
      return status;
    }
    if (!options.shared_scratch) {
      status = context->set_device_memory(scratch_.data(), scratch_.size(), why);
      if (status != Error::Ok) {
        why.prepend("could not give profile %d's context its scratch memory: ", p);
        return status;
      }
    }
    // On the load stream; load() waits for it before returning, so no execution's stream races with it.
    if (p != 0) {
      status = context->set_optimization_profile(p, stream, why);
      if (status != Error::Ok) {
        why.prepend("could not bind a context to profile %d: ", p);
        return status;
      }
    }
    contexts->push_back(std::move(context));
  }
  return Error::Ok;
}

// Staging buffers for every argument (device engines: device memory, and the in-flight event, on the current --
// the blob's -- device; host engines: host memory, used only for tensors TensorRT's alignment rule refuses).
// A state is bound to its own storage and an aliased output where its input is: neither is ever staged.
Error Executor::prepare_staging(engine::Engine& engine, engine::StreamHandle stream,
                                const std::vector<std::unique_ptr<engine::ExecutionContext>>& contexts,
                                Diagnostic& why) {
  const profile::ProfileTable& table = plan_.table;
  std::vector<size_t> bytes(plan_.arity.bound, 0);
  for (size_t i = 0; i < plan_.arity.inputs; ++i) {
    const Argument& input = plan_.input(i);
    if (input.kind != ArgumentKind::kCaller) continue;
    for (int32_t p = 0; p < table.num_profiles(); ++p)
      bytes[i] = std::max(bytes[i], bytes_of(table.bounds(p, static_cast<int32_t>(i)).max, input.dtype));
  }
  const Error status = plan_output_staging(engine, stream, contexts, &bytes, why);
  if (status != Error::Ok) return status;
  return device_.device ? prepare_device_state(&device_, device_.device_id, bytes, why)
                        : prepare_host_staging(&device_, bytes, why);
}

// The largest output each profile can produce, for device engines, whose host outputs are staged through buffers
// made at load: every input is set to the profile's max shape and the output shapes read back, on the context
// bound to that profile if there is one, else on a probe context (no memory, never enqueued) switched to it on
// `stream`. An output larger at some smaller input shape is refused at execute with a clear error, never written
// past its buffer.
Error Executor::plan_output_staging(engine::Engine& engine, engine::StreamHandle stream,
                                    const std::vector<std::unique_ptr<engine::ExecutionContext>>& contexts,
                                    std::vector<size_t>* bytes, Diagnostic& why) {
  static constexpr char kWhat[] = "sizing the output staging buffers: ";
  const profile::ProfileTable& table = plan_.table;
  const size_t n_in = plan_.arity.inputs;
  for (int32_t p = 0; p < table.num_profiles(); ++p) {
    std::unique_ptr<engine::ExecutionContext> probe;
    engine::ExecutionContext* context = plan_.strategy == Strategy::kContextPerProfile
                                            ? contexts[static_cast<size_t>(p)].get()
                                            : (p == 0 ? contexts[0].get() : nullptr);
    if (context == nullptr) {
      Error status = engine.create_context(engine::ContextOptions{/*user_managed_memory=*/true}, &probe, why);
      if (status == Error::Ok) status = probe->set_optimization_profile(p, stream, why);
      if (status != Error::Ok) {
        why.prepend("%scould not probe profile %d: ", kWhat, p);
        return status;
      }
      context = probe.get();
    }
    for (size_t i = 0; i < n_in; ++i) {
      const Error status =
          context->set_input_shape(plan_.input(i).engine_index, table.bounds(p, static_cast<int32_t>(i)).max, why);
      if (status != Error::Ok) {
        why.prepend("%sthe engine refused input '%s' at profile %d's max shape: ", kWhat,
                    plan_.input(i).display_name.c_str(), p);
        return status;
      }
    }
    for (size_t o = 0; o < plan_.arity.outputs; ++o) {
      const Argument& output = plan_.output(o);
      Shape shape;
      Error status = context->tensor_shape(output.engine_index, &shape, why);
      if (status == Error::Ok && shape.numel() < 0) {
        status = fail(why, Error::NotSupported, "the output shape %s has a data-dependent dimension",
                      shape_text(shape).c_str());
      }
      if (status != Error::Ok) {
        why.prepend("%sthe engine cannot infer output '%s' at profile %d's max input shapes: ", kWhat,
                    output.display_name.c_str(), p);
        return status;
      }
      size_t& b = (*bytes)[n_in + o];
      if (output.kind == ArgumentKind::kCaller) b = std::max(b, bytes_of(shape, output.dtype));
    }
    // The probe's switch may still be running on the load stream; a context is never destroyed with work in flight.
    if (probe && device_.device) {
      const Error finished = finish_load_work(why);
      if (finished != Error::Ok) return finished;
    }
  }
  return Error::Ok;
}

// At execute (Executor::take_scratch, executor.cpp), under the pool's lock: the pool's buffer is new (this delegate's
// first execution, or the pool grew or shrank since its last). Every context is given it, and nothing captured against
// the old one is used again -- the CUDA graphs are dropped and each context's next enqueue runs plainly first, as
// after any change (docs/cuda-graphs.md).
ETRT_COLD ETRT_NOINLINE Error Executor::rebind_scratch(ScratchPool& pool) {
  for (BoundContext& context : contexts_) {
    if (context.set_device_memory(pool.data(), pool.size(), why_) != Error::Ok) {
      why_.prepend("could not give context %zu the shared scratch memory (%zu bytes): ", context.index(), pool.size());
      return Error::Internal;
    }
  }
  drop_all_graphs(&device_);
  scratch_generation_ = pool.generation();
  return Error::Ok;
}

// Binds the contexts (bound_context.h) and sizes the per-execution scratch, so that execute() never allocates; then
// the CUDA graph sets, when graphs are on.
void Executor::bind_contexts(engine::Engine& engine, const LoadOptions& options,
                             std::vector<std::unique_ptr<engine::ExecutionContext>> contexts) {
  const size_t n_in = plan_.arity.inputs;
  const size_t n_out = plan_.arity.outputs;
  input_shapes_.resize(n_in);
  output_capacity_.assign(n_out, -1);
  arg_tensors_.resize(plan_.arity.bound);
  contexts_.reserve(contexts.size());
  for (size_t c = 0; c < contexts.size(); ++c) contexts_.emplace_back(c, std::move(contexts[c]), n_in, n_out);
  active_profile_ = 0;
  current_ = &contexts_[0];
  if (!device_.device || !options.cuda_graphs) return;
  // TensorRT: "If the Engine is streaming weights, enqueueV3 will become synchronous, and the graph will not be
  // capturable." So no capture is tried (one would fail and turn graphs off at the first steady call anyway).
  if (engine.weight_streaming_budget() < engine.streamable_weights_size()) {
    ET_LOG(Info,
           "TensorRT delegate %s: CUDA graphs off: the engine streams its weights (budget %lld of %lld streamable "
           "bytes), which makes each enqueue synchronous and uncapturable",
           plan_.name, static_cast<long long>(engine.weight_streaming_budget()),
           static_cast<long long>(engine.streamable_weights_size()));
    return;
  }
  prepare_graphs(&device_, contexts_.size(), n_in, plan_.arity.bound);
}

}  // namespace etrt::backend
