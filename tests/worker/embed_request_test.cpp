// The checks a request passes before it is queued (embed_request.h): CheckRequestShape, which
// the gateway's ReplicaPool runs too, and ValidateEmbedRequest, the scheduler's full set.
#include "worker/embed_request.h"

#include <gtest/gtest.h>

namespace orchid {
namespace {

EmbedRequest TwoSequences() {
  EmbedRequest r;
  r.sequences = {{1, 2, 3}, {4, 5}};
  return r;
}

ModelInfo Model() {
  ModelInfo m;
  m.hidden_size = 8;
  m.type_vocab_size = 2;
  m.tasks = {"retrieval.query", "retrieval.passage"};
  return m;
}

constexpr RequestLimits kLimits{/*max_batch_tokens=*/4, /*max_queued_tokens=*/6};

TEST(EmbedRequestTest, ShapeNeedsSequencesAndOneTypeAndLengthEntryEach) {
  EXPECT_TRUE(CheckRequestShape(TwoSequences()).ok());
  EXPECT_EQ(CheckRequestShape(EmbedRequest{}).message(), "request has no sequences");

  EmbedRequest types = TwoSequences();
  types.token_type_ids = {{0, 0, 0}};
  EXPECT_EQ(CheckRequestShape(types).message(), "token_type_ids must have one entry per sequence");
  types.token_type_ids = {{0, 0, 0}, {}};
  EXPECT_TRUE(CheckRequestShape(types).ok());

  EmbedRequest attend = TwoSequences();
  attend.attend_lens = {1, 2, 3};
  EXPECT_EQ(CheckRequestShape(attend).message(), "attend_lens must have one entry per sequence");
  EXPECT_EQ(CheckRequestShape(attend).code(), StatusCode::kInvalidArgument);
}

TEST(EmbedRequestTest, ValidationCountsTokensOfAValidRequest) {
  int64_t tokens = -1;
  ASSERT_TRUE(ValidateEmbedRequest(TwoSequences(), Model(), kLimits, &tokens).ok());
  EXPECT_EQ(tokens, 5);
}

TEST(EmbedRequestTest, ValidationRefusesWhatTheModelOrTheQueueCannotTake) {
  int64_t tokens = 0;
  auto check = [&](const EmbedRequest& r) {
    return ValidateEmbedRequest(r, Model(), kLimits, &tokens);
  };
  EmbedRequest shape;  // the shape checks come first
  EXPECT_EQ(check(shape).message(), "request has no sequences");

  EmbedRequest adapter = TwoSequences();
  adapter.adapter = 3;
  EXPECT_EQ(check(adapter).message(), "task adapter 3 is out of range (the model has 2)");
  adapter.adapter = 2;
  EXPECT_TRUE(check(adapter).ok());

  EmbedRequest types = TwoSequences();
  types.token_type_ids = {{0, 1, 2}, {}};
  EXPECT_EQ(check(types).message(),
            "sequence 0: token type id 2 is out of range (the model has 2 token types)");
  types.token_type_ids = {{0, 1}, {}};
  EXPECT_EQ(check(types).message(), "sequence 0: token_type_ids and token ids differ in length");

  EmbedRequest attend = TwoSequences();
  attend.attend_lens = {0, 3};
  EXPECT_EQ(check(attend).message(), "sequence 1: attended length 3 is out of range");
  attend.attend_lens = {3, 2};
  EXPECT_TRUE(check(attend).ok());
  ModelInfo causal = Model();
  causal.causal = true;  // a decoder attends to what it attends to
  EXPECT_FALSE(ValidateEmbedRequest(attend, causal, kLimits, &tokens).ok());

  EmbedRequest empty = TwoSequences();
  empty.sequences[1].clear();
  EXPECT_EQ(check(empty).message(), "sequence 1 is empty");

  EmbedRequest long_one = TwoSequences();
  long_one.sequences[0] = {1, 2, 3, 4, 5};
  const Status too_long = check(long_one);
  EXPECT_EQ(too_long.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(too_long.message(), "sequence 0 has 5 tokens, more than the batch budget of 4");

  EmbedRequest many = TwoSequences();
  many.sequences.push_back({6, 7});
  EXPECT_EQ(check(many).code(), StatusCode::kOutOfRange);  // 7 tokens, the queue holds 6

  EmbedRequest dims = TwoSequences();
  dims.dimensions = -1;
  EXPECT_EQ(check(dims).message(), "dimensions must not be negative");
  dims.dimensions = 9;
  EXPECT_EQ(check(dims).message(), "dimensions 9 is more than the model's 8");
  dims.dimensions = 8;
  EXPECT_TRUE(check(dims).ok());
}

}  // namespace
}  // namespace orchid
