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

}  // namespace
}  // namespace orchid
