#pragma once
// The float comparison both suites (engine_contract_test.cpp, nvidia_module_test.cpp) make against the references
// (models.h, decoder_reference.h). Use under ASSERT_NO_FATAL_FAILURE: it stops at the first element off.

#include <gtest/gtest.h>

#include <vector>

namespace etrt::contract {

inline void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tolerance,
                        const char* what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], tolerance) << what << " element " << i;
}

}  // namespace etrt::contract
