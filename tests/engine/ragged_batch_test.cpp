#include "engine/ragged_batch.h"

#include <gtest/gtest.h>

namespace orchid {
namespace {

TEST(RaggedBatchTest, AddAndValidate) {
  RaggedBatch b;
  int32_t a[] = {101, 7, 102};
  int32_t c[] = {101, 102};
  b.Add(a, 3, Pooling::kMean, true);
  b.Add(c, 2, Pooling::kCls, false);
  EXPECT_EQ(b.num_sequences(), 2);
  EXPECT_EQ(b.num_tokens(), 5);
  EXPECT_EQ(b.cu_seqlens, (std::vector<int32_t>{0, 3, 5}));
  EXPECT_EQ(b.positions, (std::vector<int32_t>{0, 1, 2, 0, 1}));
  EXPECT_TRUE(b.Validate(200).ok());
  EXPECT_EQ(b.Validate(102).code(), StatusCode::kInvalidArgument);
}

// Attended lengths (a ColBERT query's expansion): one per sequence once any is set, zeros for the
// sequences before and after; a length past its sequence is refused.
TEST(RaggedBatchTest, AttendedLengthsStayAlignedWithTheirSequences) {
  RaggedBatch b;
  int32_t a[] = {101, 7, 102, 103, 103};
  b.Add(a, 3, Pooling::kNone, false);
  EXPECT_TRUE(b.attend_lens.empty());
  b.Add(a, 5, Pooling::kNone, false, nullptr, 0, 3);
  b.Add(a, 2, Pooling::kNone, false);
  EXPECT_EQ(b.attend_lens, (std::vector<int32_t>{0, 3, 0}));
  EXPECT_TRUE(b.Validate(200).ok());
  b.attend_lens[2] = 3;  // past its sequence of 2
  EXPECT_EQ(b.Validate(200).code(), StatusCode::kInternal);
  b.attend_lens.pop_back();
  EXPECT_EQ(b.Validate(200).code(), StatusCode::kInternal);
  b.Clear();
  EXPECT_TRUE(b.attend_lens.empty());
}

}  // namespace
}  // namespace orchid
