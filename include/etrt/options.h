#pragma once
/// @file
/// Names a runner uses to configure etrt's TensorRT delegate.
///
/// Load-time options travel through ExecuTorch's `LoadBackendOptionsMap` and
/// apply to the module being loaded:
///
/// @code
///   executorch::runtime::BackendOptions<4> opts;
///   opts.set_option(etrt::kOptionAutoSelect, true);   // no guard => auto
///   opts.set_option(etrt::kOptionProfileStrategy, etrt::kStrategyContextPerProfile);
///   executorch::runtime::LoadBackendOptionsMap map;
///   map.set_options(etrt::kBackendId, opts.view());
///   module.load(map);
/// @endcode
///
/// Process-wide counters are read with `executorch::runtime::get_option(etrt::kBackendId, ...)`.

namespace etrt {

/// The backend id Torch-TensorRT writes into `.pte` files; etrt registers under it.
inline constexpr char kBackendId[] = "TensorRTBackend";

// ---- load-time options (LoadBackendOptionsMap) ----

/// bool. When true, an execution with no OptimizationProfileGuard in force
/// selects its profile from the input shapes instead of using profile 0.
/// Default: true for engines with two or more profiles, false for one-profile
/// engines (docs/auto-by-default.md). Set false to make an unguarded
/// execution use profile 0 and refuse shapes outside it.
inline constexpr char kOptionAutoSelect[] = "auto_select_profiles";
/// string, kPolicyFirstFit (default) or kPolicyStickyFirstFit: the policy an
/// execution with no guard uses when automatic selection is the default.
/// (OptimizationProfileGuard::automatic() has its own default, sticky.)
inline constexpr char kOptionAutoPolicy[] = "auto_policy";
inline constexpr char kPolicyStickyFirstFit[] = "sticky_first_fit";
inline constexpr char kPolicyFirstFit[] = "first_fit";
/// string: how a profile change is carried out.
///  * kStrategyContextPerProfile (default): one context per profile, each
///    bound to its profile once at load, sharing one scratch buffer; a change
///    is a choice of context, with no TensorRT call. Costs one context's state
///    per profile. The default because a profile switch is expensive on
///    NVIDIA's TensorRT 8.6: about 1.1 s on a 0.85 B-parameter Llama engine
///    (a prefill and 64 decode steps 13 times slower than with a context per
///    profile), about 17 ms on a 48-layer test engine, while the extra
///    contexts share the one scratch buffer and cost no device memory that
///    shows (docs/design.md, "Profile strategies"; docs/real-llm.md).
///  * kStrategySwitch: one execution context; a change calls
///    setOptimizationProfileAsync on the execution stream. Least memory.
/// A one-profile engine has one context and never switches, whichever is set.
inline constexpr char kOptionProfileStrategy[] = "profile_strategy";
inline constexpr char kStrategySwitch[] = "switch";
inline constexpr char kStrategyContextPerProfile[] = "context_per_profile";
/// string of decimal digits, or a non-negative int: the weight-streaming
/// budget in bytes (how much of the weights TensorRT keeps on the device), for
/// engines built with weight streaming. Overrides the compile spec of the same
/// name. Without either, such an engine gets TensorRT's automatic budget;
/// engines without streamable weights ignore it (with a log line). An empty
/// string is ignored (with a log line).
inline constexpr char kOptionWeightStreamingBudget[] = "weight_streaming_budget";
/// bool, default false. Device engines only: replay steady-state executions
/// as CUDA graphs. Once an execution has run with some input shapes, profile
/// and tensor addresses, the next one with exactly the same is captured into a
/// graph (one per execution context) and every later one replays it, one
/// launch instead of the engine's many, while nothing changes: any switch,
/// shape or address change drops the graph and runs a plain enqueue first.
/// Costs a graph's memory per context; if the engine cannot be captured the
/// delegate falls back to plain enqueues for good (one log line).
/// docs/cuda-graphs.md.
inline constexpr char kOptionCudaGraphs[] = "cuda_graphs";
/// bool, default false. Every delegate of the program loaded with it draws
/// its TensorRT execution memory (scratch) from one buffer per device, sized
/// to the largest single need instead of one buffer each (the sum): delegates
/// of one method run one after another. Contexts are created without memory
/// of their own. The buffer grows when a delegate with a larger need loads
/// (each sharing delegate moves to it before its next execution, dropping its
/// CUDA graphs), shrinks when the largest leaves and is freed with the last.
/// Executions that share it are serialized, and work on another stream
/// (another method of the Module on another thread, another caller stream)
/// is ordered after the last one on the device, never overlapped. "The
/// program" is one load: the methods of one Module share a buffer; two
/// Modules (sessions over one Program included) hold one each, as for
/// delegate-owned state (etrt/state.h). context_per_profile's contexts share
/// it too. docs/tensorrt.md, "Shared scratch".
inline constexpr char kOptionSharedScratch[] = "shared_scratch";
/// bool, default false. Lets TensorRT run host code a plan carries: a
/// version-compatible plan that embeds its lean runtime (built with
/// kVERSION_COMPATIBLE and without kEXCLUDE_LEAN_RUNTIME) loads only with it
/// (IRuntime::setEngineHostCodeAllowed). Off by default because that code runs
/// in this process with its rights: allow it only for plans you trust.
/// Torch-TensorRT's version-compatible exports exclude the lean runtime and
/// need no host code on a full TensorRT of the same major. docs/tensorrt.md.
inline constexpr char kOptionEngineHostCode[] = "engine_host_code";
/// string, default empty. Plugin libraries a plan's layers need, as paths
/// separated by ':', loaded into the engine's runtime's plugin registry
/// (IPluginRegistry::loadLibrary) before the plan is deserialized; a library
/// that does not load refuses the program, naming it. docs/tensorrt.md.
inline constexpr char kOptionPluginLibraries[] = "plugin_libraries";
/// bool, default true. Every delegate in the process that loads the same
/// engine (the same bytes, device, weight_streaming_budget, engine_host_code
/// and plugin_libraries) holds one deserialized engine, so N Modules of one
/// program keep its weights on the device once; each keeps its own execution
/// contexts, profile state, CUDA graphs and delegate-owned state, and the
/// engine goes with the last of them. Engines whose contexts cannot share an
/// optimization profile (TensorRT 8.6 plans built without
/// PreviewFeature::kPROFILE_SHARING_0806) are never shared. Set false to give
/// this module's delegates engines of their own. On TensorRT 8.6, which has no
/// query for profile sharing, the first load of an engine with this on creates
/// two contexts to find out (about 2.5 s for a 5 GB plan on an H200, once per
/// engine per process); a process that loads each program once can save that
/// with false. docs/design.md, "One engine, many sessions".
inline constexpr char kOptionShareEngine[] = "share_engine";

// ---- process-wide counters (executorch::runtime::get_option, int values) ----

/// Profile changes carried out by all etrt delegates since process start.
inline constexpr char kCounterProfileSwitches[] = "profile_switches";
/// Executions completed by all etrt delegates since process start.
inline constexpr char kCounterExecutions[] = "executions";
/// The profile used by the most recent execution of any etrt delegate.
inline constexpr char kCounterLastProfile[] = "last_profile";
/// Bytes of delegate-owned state (etrt/state.h) the live delegates hold now,
/// each state shared by several delegates counted once. (An int: a value above
/// INT_MAX reads as INT_MAX through get_option; the C ABI's etrt_counter gives
/// the full 64-bit value.)
inline constexpr char kCounterStateBytes[] = "state_bytes";
/// Bytes of TensorRT execution memory (scratch) the live delegates hold now:
/// every shared pool (kOptionSharedScratch) once, plus each other delegate's
/// own. (An int through get_option, capped at INT_MAX; etrt_counter gives the
/// 64-bit value.)
inline constexpr char kCounterScratchBytes[] = "scratch_bytes";
/// Bytes the delegates copied since process start, by where they moved; each
/// copy counts in exactly one of the four, so their sum is everything etrt
/// copied, and ExecutionRecord has the same four for one execution. Copies a
/// program makes around a delegate call (ExecuTorch's et_copy in a
/// device-placed program, the write-back copy_ of a mutable buffer) are not
/// etrt's and are not counted. Ints through get_option (clamped at INT_MAX
/// like state_bytes); etrt_counter gives the 64-bit values.
///
/// Host memory staged into device memory for a device engine. 0 for host
/// engines, for device memory bound in place, and on an integrated GPU for
/// host memory the device addresses in place (docs/design.md, "Integrated GPUs").
inline constexpr char kCounterHostToDeviceBytes[] = "host_to_device_bytes";
/// Staged outputs (and staged in-place inputs) copied back into host memory.
inline constexpr char kCounterDeviceToHostBytes[] = "device_to_host_bytes";
/// Copies within one memory made only because an argument's address broke
/// TensorRT's 256-byte alignment rule (ExecuTorch plans 16): host to host for
/// a host engine, device to device for a device engine, in and back.
inline constexpr char kCounterRealignedBytes[] = "realigned_bytes";
/// Updated values copied to where they are kept: an input the engine updates
/// in place (a KV cache) into the write-back output ExecuTorch passes for it,
/// and a delegate-owned state's new value, when the engine writes it to an
/// output of its own, into the state. Counted here whichever memories it
/// crosses. 0 for caches updated in place with no write-back output.
inline constexpr char kCounterWriteBackBytes[] = "write_back_bytes";
/// Engines the delegates deserialized since process start: one per engine
/// shared by several delegates (kOptionShareEngine), one per delegate
/// otherwise.
inline constexpr char kCounterEnginesDeserialized[] = "engines_deserialized";
/// Engines the live delegates hold now, each shared engine once.
inline constexpr char kCounterEnginesResident[] = "engines_resident";
/// Serialized bytes of those engines (the plans' sizes, which is what their
/// weights and kernels take on the device, give or take TensorRT's own
/// layout). An int through get_option, capped at INT_MAX; etrt_counter gives
/// the 64-bit value.
inline constexpr char kCounterEngineBytes[] = "engine_bytes";
/// Live delegates holding an engine: engine_sessions / engines_resident is
/// the sessions per engine.
inline constexpr char kCounterEngineSessions[] = "engine_sessions";

/// What libetrt did about a CUDA device allocator when it loaded (one of
/// CudaAllocatorState). A program exported with a CUDA target device (every
/// Torch-TensorRT export) needs one registered with ExecuTorch; the CUDA build
/// of libetrt registers its own, and the build without CUDA one that refuses
/// every request saying that a CUDA build of etrt is needed (in
/// last_error_message() and the log), unless another library registered one
/// first or ETRT_REGISTER_CUDA_ALLOCATOR=0. docs/gpu-testing.md,
/// "Device-placed programs".
inline constexpr char kCudaAllocatorState[] = "cuda_allocator";
enum CudaAllocatorState : int {
  kCudaAllocatorNoneInThisBuild = 0,  ///< a build without CUDA: no CUDA memory; registered its refusing allocator
  kCudaAllocatorRegistered = 1,       ///< libetrt registered its allocator
  kCudaAllocatorOtherLibrary = 2,     ///< another library registered one first; ExecuTorch uses that
  kCudaAllocatorOptedOut = 3,         ///< ETRT_REGISTER_CUDA_ALLOCATOR=0 (or false, off, no)
};

}  // namespace etrt
