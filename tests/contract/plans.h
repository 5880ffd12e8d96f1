#pragma once
// The two implementations the NvInfer contract suite runs against, behind one interface: plans_gpufree.cpp (the
// project's GPU-free NvInfer, host-memory engines: CI) and plans_nvidia.cpp (NVIDIA's TensorRT and its builder, on
// a GPU). Each builds a model's plan and provides the memory its engines read and write.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "models.h"

namespace etrt::contract {

// "GPU-free NvInfer" or "NVIDIA TensorRT <version>".
std::string implementation();
// True for NVIDIA's TensorRT.
bool is_nvidia();
// Whether the contexts of `model`'s engine share optimization profiles: from TensorRT 10.0 on always; on 8.6 only
// for a plan built with kPROFILE_SHARING_0806. The GPU-free side builds its plans for 8.6, the release the suite
// compares it with on a GPU.
bool shares_profiles(const ModelSpec& model);

// The serialized plan of `model`, or empty with the reason in *error. NVIDIA's builder needs a GPU and takes
// seconds: callers keep plans for the whole suite.
std::vector<uint8_t> build_plan(const ModelSpec& model, std::string* error);

// build_plan, through a cache: with ETRT_CONTRACT_PLAN_DIR set, the plan is read from <dir>/<label>.plan when there
// and kept there when built (plan_cache.cpp), so a run under compute-sanitizer, the program generator and the
// benchmark need not run the builder again. `*error` says why a plan is empty, or that it could not be kept.
std::vector<uint8_t> cached_plan(const ModelSpec& model, std::string* error);

// Memory an engine of this implementation binds: device memory for NVIDIA's TensorRT, host memory for GPU-free
// host engines. 256-byte aligned; freed on destruction.
class Memory {
 public:
  explicit Memory(size_t bytes);
  ~Memory();
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  void* data() const { return data_; }
  size_t size() const { return size_; }
  void upload(const void* host, size_t bytes);   // synchronous
  void download(void* host, size_t bytes) const;  // synchronous, after the stream's work is done

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

// The stream enqueues use (nullptr for host engines), and waiting for it.
engine::StreamHandle stream();
void synchronize();

}  // namespace etrt::contract
