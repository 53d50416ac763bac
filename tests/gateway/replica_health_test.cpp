// ReplicaMismatch (gateway/replica_health.h): which replicas may join a pool, on its own. The
// health thread's behaviour with real workers is in tests/rpc/split_serving_test.cpp.
#include "gateway/replica_health.h"

#include <gtest/gtest.h>

namespace orchid {
namespace {

rpc::WorkerModel Model() {
  rpc::WorkerModel m;
  m.name = "model-a";
  m.info.hidden_size = 384;
  m.info.vocab_size = 30522;
  m.max_input_tokens = 512;
  m.tokenizer_fingerprint = 42;
  return m;
}

TEST(ReplicaMismatchTest, TheSameModelJoins) {
  EXPECT_EQ(ReplicaMismatch(Model(), Model()), std::nullopt);
}

TEST(ReplicaMismatchTest, AnyDifferenceAChunkCouldLandOnKeepsTheReplicaOut) {
  auto differs = [](auto change) {
    rpc::WorkerModel other = Model();
    change(other);
    return ReplicaMismatch(Model(), other).has_value();
  };
  EXPECT_TRUE(differs([](rpc::WorkerModel& m) { m.name = "model-b"; }));
  EXPECT_TRUE(differs([](rpc::WorkerModel& m) { m.info.hidden_size = 768; }));
  EXPECT_TRUE(differs([](rpc::WorkerModel& m) { m.info.task = ModelTask::kScore; }));
  EXPECT_TRUE(differs([](rpc::WorkerModel& m) { m.info.embedding_dim = 256; }));
  EXPECT_TRUE(differs([](rpc::WorkerModel& m) { m.max_input_tokens = 256; }));
  EXPECT_TRUE(differs([](rpc::WorkerModel& m) { m.info.vocab_size = 250002; }));
  EXPECT_TRUE(differs([](rpc::WorkerModel& m) { m.tokenizer_fingerprint = 43; }));
  EXPECT_TRUE(differs([](rpc::WorkerModel& m) { m.info.late_interaction.enabled = true; }));
  EXPECT_TRUE(differs([](rpc::WorkerModel& m) { m.info.token_embedding_dim = 128; }));
  EXPECT_TRUE(differs([](rpc::WorkerModel& m) { m.info.tasks = {"retrieval.query"}; }));
  EXPECT_TRUE(differs([](rpc::WorkerModel& m) { m.info.matryoshka_dimensions = {64, 128}; }));
  // What chunks never depend on may differ (the architecture's name is only logged).
  EXPECT_FALSE(differs([](rpc::WorkerModel& m) { m.info.architecture = "BertModel"; }));
}

TEST(ReplicaMismatchTest, TheReasonNamesBothModels) {
  rpc::WorkerModel other = Model();
  other.name = "model-b";
  EXPECT_EQ(ReplicaMismatch(Model(), other), "it serves model-b (dim 384), not the pool's model-a");
  other = Model();
  other.info.tasks = {"retrieval.query"};
  EXPECT_EQ(ReplicaMismatch(Model(), other),
            "its task adapters or Matryoshka widths differ from the pool's model's");
}

}  // namespace
}  // namespace orchid
