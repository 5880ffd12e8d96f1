// Runs a .pte through executorch::extension::Module with etrt's guards, for tests/export.
//
//   etrt_export_runner <model.pte> <steps.json> <results.json>
//
// steps.json: {"method": "forward", "load_options": {"auto_select_profiles": true, ...}, "etdump": "out.etdp",
//              "steps": [{"inputs": [{"dtype": "float32"|"int64"|"int32", "shape": [...], "data": [...]}],
//                         "request": null | {"pin": 1} | {"auto": "first_fit"|"sticky_first_fit"}}]}
// Every step runs on the same loaded module (a mutable buffer keeps its state); with "etdump", the module runs with
// ExecuTorch's ETDumpGen and the dump is written there after the last step (runners built with executorch::etdump).
// results.json:
//   {"steps": [{"ok": bool, "error": "...", "outputs": [{dtype, shape, data}],
//               "report": [{"delegate", "profile", "num_profiles", "switched"}]}],
//    "counters": {"profile_switches", "executions", "last_profile"}}
// Exit status 0 when the file was run (whatever each step did), 2 on bad usage or input.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#if defined(ETRT_RUNNER_WITH_ETDUMP)
#include <executorch/devtools/etdump/etdump_flatcc.h>
#endif
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/backend/options.h>
#include <etrt/options.h>
#include <etrt/profile_guard.h>
#include <etrt/report.h>
#include <nlohmann/json.hpp>

namespace {

using executorch::aten::ScalarType;
using executorch::extension::Module;
using executorch::extension::TensorPtr;
using executorch::runtime::EValue;
using nlohmann::json;

ScalarType scalar_type(const std::string& name) {
  if (name == "float32") return ScalarType::Float;
  if (name == "int64") return ScalarType::Long;
  if (name == "int32") return ScalarType::Int;
  throw std::runtime_error("unsupported dtype " + name);
}

TensorPtr make_tensor(const json& t) {
  std::vector<executorch::aten::SizesType> shape;
  for (const auto& d : t.at("shape")) shape.push_back(d.get<executorch::aten::SizesType>());
  const std::string dtype = t.at("dtype");
  const json& data = t.at("data");
  if (dtype == "float32") return executorch::extension::make_tensor_ptr(shape, data.get<std::vector<float>>());
  if (dtype == "int64") return executorch::extension::make_tensor_ptr(shape, data.get<std::vector<int64_t>>());
  if (dtype == "int32") return executorch::extension::make_tensor_ptr(shape, data.get<std::vector<int32_t>>());
  throw std::runtime_error("unsupported dtype " + dtype);
}

json describe(const executorch::aten::Tensor& t) {
  json out;
  out["shape"] = std::vector<int64_t>(t.sizes().begin(), t.sizes().end());
  switch (t.scalar_type()) {
    case ScalarType::Float:
      out["dtype"] = "float32";
      out["data"] = std::vector<float>(t.const_data_ptr<float>(), t.const_data_ptr<float>() + t.numel());
      break;
    case ScalarType::Long:
      out["dtype"] = "int64";
      out["data"] = std::vector<int64_t>(t.const_data_ptr<int64_t>(), t.const_data_ptr<int64_t>() + t.numel());
      break;
    default:
      out["dtype"] = "other";
      out["data"] = json::array();
  }
  return out;
}

template <size_t N>
int64_t counter(const char (&key)[N]) {
  executorch::runtime::BackendOptions<1> options;
  options.set_option(key, 0);
  auto view = options.view();
  if (executorch::runtime::get_option(etrt::kBackendId, view) != executorch::runtime::Error::Ok) return -2;
  return std::get<int>(view[0].value);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s <model.pte> <steps.json> <results.json>\n", argv[0]);
    return 2;
  }
  json spec;
  try {
    std::ifstream(argv[2]) >> spec;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cannot read %s: %s\n", argv[2], e.what());
    return 2;
  }
  const std::string method = spec.value("method", std::string("forward"));

  std::unique_ptr<executorch::runtime::EventTracer> tracer;
  const std::string etdump_path = spec.value("etdump", std::string());
#if defined(ETRT_RUNNER_WITH_ETDUMP)
  auto* etdump = etdump_path.empty() ? nullptr : new executorch::etdump::ETDumpGen();
  tracer.reset(etdump);
#else
  if (!etdump_path.empty()) {
    std::fprintf(stderr, "this runner was built without executorch::etdump; it cannot write %s\n", etdump_path.c_str());
    return 2;
  }
#endif
  Module module(argv[1], Module::LoadMode::File, std::move(tracer));
  // Load options, as a C++ runner passes them (etrt/options.h).
  if (spec.contains("load_options")) {
    executorch::runtime::BackendOptions<8> options;
    for (auto it = spec["load_options"].begin(); it != spec["load_options"].end(); ++it) {
      const std::string& key = it.key();
      const json& v = *it;
      // BackendOptions takes its keys as string literals: the ones etrt/options.h names.
      auto set = [&](const auto& literal) {
        if (v.is_boolean()) return options.set_option(literal, v.get<bool>());
        if (v.is_number_integer()) return options.set_option(literal, v.get<int>());
        return options.set_option(literal, v.get<std::string>().c_str());
      };
      if (key == etrt::kOptionAutoSelect) {
        set(etrt::kOptionAutoSelect);
      } else if (key == etrt::kOptionAutoPolicy) {
        set(etrt::kOptionAutoPolicy);
      } else if (key == etrt::kOptionProfileStrategy) {
        set(etrt::kOptionProfileStrategy);
      } else if (key == etrt::kOptionWeightStreamingBudget) {
        set(etrt::kOptionWeightStreamingBudget);
      } else if (key == etrt::kOptionCudaGraphs) {
        set(etrt::kOptionCudaGraphs);
      } else {
        std::fprintf(stderr, "unknown load option %s\n", key.c_str());
        return 2;
      }
    }
    executorch::runtime::LoadBackendOptionsMap map;
    map.set_options(etrt::kBackendId, options.view());
    if (module.load(map) != executorch::runtime::Error::Ok) {
      std::fprintf(stderr, "load failed: %s\n", etrt::last_error_message());
    }
  }

  json results;
  results["steps"] = json::array();
  for (const json& step : spec.at("steps")) {
    std::vector<TensorPtr> tensors;
    std::vector<EValue> inputs;
    for (const json& t : step.at("inputs")) tensors.push_back(make_tensor(t));
    for (const TensorPtr& t : tensors) inputs.emplace_back(t);

    json r;
    auto run = [&]() {
      etrt::ExecutionReport report;
      etrt::clear_last_error();
      auto result = module.execute(method, inputs);
      r["ok"] = result.ok();
      r["error"] = etrt::has_last_error() ? etrt::last_error_message() : "";
      r["error_code"] = result.ok() ? 0 : static_cast<int>(result.error());
      r["outputs"] = json::array();
      if (result.ok()) {
        for (const EValue& v : *result) r["outputs"].push_back(v.isTensor() ? describe(v.toTensor()) : json());
      }
      r["report"] = json::array();
      for (const etrt::ExecutionRecord& e : report.entries())
        r["report"].push_back({{"delegate", e.delegate},
                               {"profile", e.profile},
                               {"num_profiles", e.num_profiles},
                               {"switched", e.switched},
                               {"ok", e.ok}});
    };
    const json request = step.value("request", json());
    if (request.is_object() && request.contains("pin")) {
      etrt::OptimizationProfileGuard pin(request["pin"].get<int32_t>());
      run();
    } else if (request.is_object() && request.contains("auto")) {
      auto any = etrt::OptimizationProfileGuard::automatic(request["auto"].get<std::string>() == etrt::kPolicyFirstFit
                                                                ? etrt::AutoPolicy::kFirstFit
                                                                : etrt::AutoPolicy::kStickyFirstFit);
      run();
    } else {
      run();
    }
    results["steps"].push_back(r);
  }
  results["counters"] = {{"profile_switches", counter(etrt::kCounterProfileSwitches)},
                         {"executions", counter(etrt::kCounterExecutions)},
                         {"last_profile", counter(etrt::kCounterLastProfile)}};
  std::ofstream(argv[3]) << results.dump();
#if defined(ETRT_RUNNER_WITH_ETDUMP)
  if (etdump != nullptr) {
    const executorch::etdump::ETDumpResult dump = etdump->get_etdump_data();
    if (dump.buf == nullptr) {
      std::fprintf(stderr, "ETDumpGen returned no dump\n");
      return 2;
    }
    std::ofstream(etdump_path, std::ios::binary).write(static_cast<const char*>(dump.buf),
                                                       static_cast<std::streamsize>(dump.size));
    std::free(dump.buf);
  }
#endif
  return 0;
}
