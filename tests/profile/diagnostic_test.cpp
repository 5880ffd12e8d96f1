// Diagnostic: the heap-free message buffer.

#include "common/diagnostic.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace etrt::profile {
namespace {

TEST(Diagnostic, StartsEmpty) {
  const Diagnostic why;
  EXPECT_TRUE(why.empty());
  EXPECT_STREQ(why.c_str(), "");
  EXPECT_FALSE(why.truncated());
}

TEST(Diagnostic, AppendFormatsAndConcatenates) {
  Diagnostic why;
  why.append("input '%s'", "input_ids");
  why.append(" dimension %d is %lld", 1, 4096LL);
  EXPECT_STREQ(why.c_str(), "input 'input_ids' dimension 1 is 4096");
  EXPECT_EQ(why.size(), std::strlen(why.c_str()));
}

TEST(Diagnostic, TextThatFitsExactlyIsNotTruncated) {
  Diagnostic why;
  const std::string text(Diagnostic::kCapacity - 1, 'x');
  why.append("%s", text.c_str());
  EXPECT_FALSE(why.truncated());
  EXPECT_EQ(why.size(), Diagnostic::kCapacity - 1);
}

TEST(Diagnostic, TextThatDoesNotFitIsCutAndEndsWithAnEllipsis) {
  Diagnostic why;
  const std::string text(Diagnostic::kCapacity, 'x');
  why.append("%s", text.c_str());
  EXPECT_TRUE(why.truncated());
  EXPECT_EQ(why.size(), Diagnostic::kCapacity - 1);
  EXPECT_EQ(std::strlen(why.c_str()), Diagnostic::kCapacity - 1);
  EXPECT_EQ(std::string(why.c_str()).substr(why.size() - 4), "x...");
}

TEST(Diagnostic, AppendsAfterTruncationAreIgnored) {
  Diagnostic why;
  const std::string text(Diagnostic::kCapacity + 10, 'x');
  why.append("%s", text.c_str());
  why.append("tail");
  EXPECT_EQ(std::string(why.c_str()).find("tail"), std::string::npos);
  EXPECT_EQ(why.size(), Diagnostic::kCapacity - 1);
}

TEST(Diagnostic, ManySmallAppendsTruncateAtTheSameBoundary) {
  Diagnostic why;
  for (int i = 0; i < 2000; ++i) why.append("%d,", i);
  EXPECT_TRUE(why.truncated());
  EXPECT_EQ(why.size(), Diagnostic::kCapacity - 1);
  EXPECT_EQ(std::string(why.c_str()).substr(why.size() - 3), "...");
}

TEST(Diagnostic, ClearForgetsTextAndTruncation) {
  Diagnostic why;
  const std::string text(Diagnostic::kCapacity, 'x');
  why.append("%s", text.c_str());
  why.clear();
  EXPECT_TRUE(why.empty());
  EXPECT_FALSE(why.truncated());
  why.append("again");
  EXPECT_STREQ(why.c_str(), "again");
}

}  // namespace
}  // namespace etrt::profile
