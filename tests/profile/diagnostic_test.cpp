// Diagnostic, the heap-free message buffer, and fail(): the two halves of the error convention (common/error.h).

#include "common/diagnostic.h"
#include "common/error.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace etrt {
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

TEST(Diagnostic, PrependPutsTheCallersContextInFrontOfTheReason) {
  Diagnostic why;
  why.append("setInputShape('x', [1,9]) failed: %s", "out of bounds");
  why.prepend("sizing the output staging buffers: profile %d: ", 1);
  EXPECT_STREQ(why.c_str(),
               "sizing the output staging buffers: profile 1: setInputShape('x', [1,9]) failed: out of bounds");
  EXPECT_EQ(why.size(), std::strlen(why.c_str()));
  EXPECT_FALSE(why.truncated());
}

TEST(Diagnostic, PrependOnEmptyTextIsTheContextAlone) {
  Diagnostic why;
  why.prepend("context: ");
  EXPECT_STREQ(why.c_str(), "context: ");
}

TEST(Diagnostic, PrependThatNoLongerFitsCutsTheEndAndMarksIt) {
  Diagnostic why;
  const std::string reason(Diagnostic::kCapacity - 10, 'r');
  why.append("%s", reason.c_str());
  ASSERT_FALSE(why.truncated());
  why.prepend("%s", "a context of twenty: ");
  const std::string text = why.c_str();
  EXPECT_TRUE(why.truncated());
  EXPECT_EQ(why.size(), Diagnostic::kCapacity - 1);
  EXPECT_EQ(text.substr(0, 21), "a context of twenty: ");
  EXPECT_EQ(text.substr(text.size() - 4), "r...");
}

TEST(Diagnostic, PrependKeepsAnEarlierCutMarked) {
  Diagnostic why;
  const std::string reason(Diagnostic::kCapacity + 5, 'r');
  why.append("%s", reason.c_str());
  ASSERT_TRUE(why.truncated());
  why.prepend("ctx: ");
  EXPECT_TRUE(why.truncated());
  EXPECT_EQ(std::string(why.c_str()).substr(0, 5), "ctx: ");
  EXPECT_EQ(std::string(why.c_str()).substr(why.size() - 3), "...");
}

TEST(ErrorConvention, FailReplacesWhatWasThereAndReturnsTheCode) {
  Diagnostic why;
  why.append("an older reason");
  const Error code = fail(why, Error::InvalidArgument, "input '%s' has rank %d", "x", 9);
  EXPECT_EQ(code, Error::InvalidArgument);
  EXPECT_STREQ(why.c_str(), "input 'x' has rank 9");
  EXPECT_EQ(fail(why, Error::Internal, "enqueueV3 failed"), Error::Internal);
  EXPECT_STREQ(why.c_str(), "enqueueV3 failed");
}

}  // namespace
}  // namespace etrt
