// The plans the contract suite, the program generator and the benchmark share (plans.h, cached_plan).

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "plans.h"

namespace etrt::contract {

std::vector<uint8_t> cached_plan(const ModelSpec& model, std::string* error) {
  const char* dir = std::getenv("ETRT_CONTRACT_PLAN_DIR");
  const std::string path = dir != nullptr ? std::string(dir) + "/" + model.label + ".plan" : std::string();
  std::vector<uint8_t> plan;
  if (!path.empty()) {
    std::ifstream in(path, std::ios::binary);
    plan.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (!plan.empty()) return plan;
  plan = build_plan(model, error);
  if (plan.empty() || path.empty()) return plan;
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(plan.data()), static_cast<std::streamsize>(plan.size()));
  if (!out) *error = "could not keep the plan in " + path;
  return plan;
}

}  // namespace etrt::contract
