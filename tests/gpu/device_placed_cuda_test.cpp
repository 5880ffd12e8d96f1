// Device-placed programs on a GPU, through Module: the exports tests/export/device_placed.py writes (target_device
// =cuda:0, as Torch-TensorRT's partitioner writes them; CUDA-mode engines), whose delegate arguments ExecuTorch plans
// in a device buffer it allocates through the registered CUDA DeviceAllocator and fills with et_copy::_h2d_copy.out
// / _d2h_copy.out (the wheel's libexecutorch_kernels_optimized.so registers those, linked here). Every case runs step
// by step (a stateful case keeps its buffer), each step three times, under both profile strategies, CUDA graphs off (no caller stream) and
// on (a caller stream, etrt::CudaStreamGuard: graphs need one), against the eager outputs saved at export.
//
// The directory is $ETRT_DEVICE_PLACED_DIR, else the build tree's device_placed/ (ETRT_DEVICE_PLACED_DIR below). It
// is written by `.venv-export/bin/python tests/export/device_placed.py <dir>`; without it the tests fail saying so.

#include <cuda_runtime_api.h>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/backend/options.h>
#include <executorch/runtime/core/device_allocator.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "etrt/options.h"
#include "etrt/report.h"
#include "etrt/stream_guard.h"
#include "module_loading.h"

namespace {

namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;

constexpr double kTolerance = 1e-4;  // run_device_placed.py's

std::string directory() {
  const char* dir = std::getenv("ETRT_DEVICE_PLACED_DIR");
  return dir != nullptr && *dir != '\0' ? dir : ETRT_DEVICE_PLACED_DIR;
}

// Why the directory cannot be used, or empty.
std::string missing_directory_message() {
  const std::string dir = directory();
  if (std::filesystem::exists(dir + "/manifest.json")) return {};
  return "no " + dir + "/manifest.json: the device-placed exports were not written. Write them with\n"
         "  .venv-export/bin/python tests/export/device_placed.py " + dir + "\n"
         "(or set ETRT_DEVICE_PLACED_DIR to where they are; tests/gpu/make_bundle.sh stages <build>/device_placed "
         "and run_bundle.sh points here at it)";
}

// A .npy array (format 1.0, little-endian float32 or int64, C order): what numpy.save writes for the exports.
struct Array {
  ScalarType type = ScalarType::Float;
  std::vector<int32_t> shape;
  std::vector<uint8_t> bytes;
  std::string error;

  size_t count() const {
    size_t n = 1;
    for (int32_t d : shape) n *= static_cast<size_t>(d);
    return n;
  }
  double at(size_t i) const {
    if (type == ScalarType::Long) {
      int64_t v;
      std::memcpy(&v, bytes.data() + i * sizeof v, sizeof v);
      return static_cast<double>(v);
    }
    float v;
    std::memcpy(&v, bytes.data() + i * sizeof v, sizeof v);
    return v;
  }
};

Array read_npy(const std::string& path) {
  Array a;
  std::ifstream in(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) return a.error = "cannot read " + path, a;
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0 || data[6] != 1 || data[7] != 0)
    return a.error = path + ": not a version 1.0 .npy file", a;
  const size_t header_length = static_cast<uint8_t>(data[8]) | (static_cast<size_t>(static_cast<uint8_t>(data[9])) << 8);
  if (data.size() < 10 + header_length) return a.error = path + ": truncated header", a;
  const std::string header = data.substr(10, header_length);
  if (header.find("'fortran_order': False") == std::string::npos)
    return a.error = path + ": only C-order arrays are read: " + header, a;
  size_t element = 0;
  if (header.find("'descr': '<f4'") != std::string::npos) {
    a.type = ScalarType::Float, element = 4;
  } else if (header.find("'descr': '<i8'") != std::string::npos) {
    a.type = ScalarType::Long, element = 8;
  } else {
    return a.error = path + ": only little-endian float32 and int64 are read: " + header, a;
  }
  const size_t open = header.find("'shape': (");
  const size_t close = open == std::string::npos ? open : header.find(')', open);
  if (close == std::string::npos) return a.error = path + ": no shape in " + header, a;
  std::stringstream dims(header.substr(open + 10, close - open - 10));
  for (std::string d; std::getline(dims, d, ',');) {
    if (d.find_first_not_of(' ') != std::string::npos) a.shape.push_back(std::stoi(d));
  }
  if (data.size() - 10 - header_length != a.count() * element)
    return a.error = path + ": " + std::to_string(data.size() - 10 - header_length) + " data bytes for " +
                     std::to_string(a.count()) + " elements of " + std::to_string(element), a;
  a.bytes.assign(data.begin() + static_cast<std::ptrdiff_t>(10 + header_length), data.end());
  return a;
}

struct Case {
  std::string name, pte;
  std::vector<std::vector<std::string>> inputs, outputs;  // per step, file names
};

std::vector<Case> read_manifest() {
  std::vector<Case> cases;
  std::ifstream in(directory() + "/manifest.json");
  const nlohmann::json manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded()) return cases;
  for (const auto& c : manifest.at("cases")) {
    Case one{c.at("name"), c.at("pte"), {}, {}};
    for (const auto& step : c.at("steps")) {
      one.inputs.push_back(step.at("inputs").get<std::vector<std::string>>());
      one.outputs.push_back(step.at("outputs").get<std::vector<std::string>>());
    }
    cases.push_back(std::move(one));
  }
  return cases;
}

int allocator_state() {
  et::BackendOption option[1];
  std::strcpy(option[0].key, etrt::kCudaAllocatorState);
  if (et::get_option(etrt::kBackendId, et::Span<et::BackendOption>(option, 1)) != et::Error::Ok) return -1;
  return std::get<int>(option[0].value);
}

struct Run {
  const char* strategy;
  bool graphs;
};

std::string run_name(const ::testing::TestParamInfo<Run>& run) {
  return std::string(run.param.strategy[0] == 's' ? "Switch" : "ContextPerProfile") +
         (run.param.graphs ? "_GraphsOnCallerStream" : "_GraphsOff");
}

class DevicePlaced : public ::testing::TestWithParam<Run> {};

TEST(DevicePlacedSetup, TheExportsAreThereAndLibetrtRegisteredItsCudaAllocator) {
  const std::string missing = missing_directory_message();
  EXPECT_TRUE(missing.empty()) << missing;
  EXPECT_EQ(allocator_state(), etrt::kCudaAllocatorRegistered)
      << "libetrt's CUDA allocator is not registered (was ETRT_REGISTER_CUDA_ALLOCATOR=0 set, or another library "
         "registered one first?)";
  EXPECT_NE(et::get_device_allocator(et::etensor::DeviceType::CUDA), nullptr);
  if (missing.empty()) {
    EXPECT_EQ(read_manifest().size(), 3u) << "projection, sandwich and kv_around";
  }
}

TEST_P(DevicePlaced, EveryStepMatchesTheEagerOutputsSavedAtExport) {
  const std::string missing = missing_directory_message();
  ASSERT_TRUE(missing.empty()) << missing;
  const std::vector<Case> cases = read_manifest();
  ASSERT_FALSE(cases.empty()) << directory() << "/manifest.json names no case (or is not JSON)";

  cudaStream_t stream = nullptr;
  if (GetParam().graphs) {
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    et::Error loaded = et::Error::Ok;
    auto module = etrt::testing::load_module(
        directory() + "/" + c.pte,
        {{etrt::kOptionProfileStrategy, GetParam().strategy}, {etrt::kOptionCudaGraphs, GetParam().graphs}}, &loaded);
    ASSERT_EQ(loaded, et::Error::Ok) << etrt::last_error_message();

    // Each step three times in a row: every case is idempotent under a repeated step (kv_around writes the same
    // rows again), and with graphs on the second run is captured and the third replays the graph.
    double worst = 0;
    for (size_t run = 0; run < 3 * c.inputs.size(); ++run) {
      const size_t s = run / 3;
      SCOPED_TRACE("step " + std::to_string(s) + ", run " + std::to_string(run % 3 + 1) + " of 3");
      std::vector<Array> inputs;
      std::vector<et::EValue> values;
      std::vector<executorch::extension::TensorPtr> tensors;
      for (const std::string& f : c.inputs[s]) {
        inputs.push_back(read_npy(directory() + "/" + f));
        ASSERT_TRUE(inputs.back().error.empty()) << inputs.back().error;
      }
      for (Array& a : inputs) {
        tensors.push_back(from_blob(a.bytes.data(), a.shape, a.type));
        values.emplace_back(*tensors.back());
      }
      std::optional<etrt::CudaStreamGuard> on;
      if (stream != nullptr) on.emplace(stream);
      auto result = module->forward(values);
      ASSERT_TRUE(result.ok()) << "forward failed (" << static_cast<int>(result.error())
                               << "): " << etrt::last_error_message();
      // Host outputs: _d2h_copy's copy waits for the stream, so they are ready once forward() returns.
      ASSERT_EQ(result->size(), c.outputs[s].size());
      for (size_t k = 0; k < c.outputs[s].size(); ++k) {
        const Array want = read_npy(directory() + "/" + c.outputs[s][k]);
        ASSERT_TRUE(want.error.empty()) << want.error;
        ASSERT_TRUE(result->at(k).isTensor());
        const auto& got = result->at(k).toTensor();
        ASSERT_EQ(got.scalar_type(), want.type) << c.outputs[s][k];
        ASSERT_EQ(std::vector<int32_t>(got.sizes().begin(), got.sizes().end()), want.shape) << c.outputs[s][k];
        for (size_t i = 0; i < want.count(); ++i) {
          const double g = want.type == ScalarType::Long ? static_cast<double>(got.const_data_ptr<int64_t>()[i])
                                                         : got.const_data_ptr<float>()[i];
          worst = std::max(worst, std::fabs(g - want.at(i)));
        }
      }
    }
    EXPECT_LE(worst, kTolerance);
    std::printf("%s strategy=%s cuda_graphs=%d: max |etrt - eager| = %.3g\n", c.name.c_str(), GetParam().strategy,
                GetParam().graphs ? 1 : 0, worst);
    module.reset();
  }
  if (stream != nullptr) {
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  }
}

INSTANTIATE_TEST_SUITE_P(Runs, DevicePlaced,
                         ::testing::Values(Run{etrt::kStrategySwitch, false}, Run{etrt::kStrategySwitch, true},
                                           Run{etrt::kStrategyContextPerProfile, false},
                                           Run{etrt::kStrategyContextPerProfile, true}),
                         run_name);

}  // namespace
