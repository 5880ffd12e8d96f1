#pragma once
// The median the GPU benchmarks report (the mean of the two middle values for an even count; 0 for none).

#include <algorithm>
#include <vector>

namespace etrt::testing {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace etrt::testing
