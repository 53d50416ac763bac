// Checkpoint: one model.safetensors, or shards listed by model.safetensors.index.json.
#include "checkpoint/checkpoint.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/safetensors_writer.h"

namespace orchid {
namespace {

using testing_util::F32Bytes;
using testing_util::FileBytes;
using testing_util::RawTensor;
using testing_util::WriteFile;
using testing_util::WriteText;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing_util::FreshDir(std::string("ckpt_") +
                                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }

  // Two shards: a.weight and b.bias in the first, c in the second, with the index that says so.
  void WriteShards() {
    WriteFile(dir_ + "/model-00001-of-00002.safetensors",
              FileBytes(std::vector<RawTensor>{{"a.weight", "F32", {2}, F32Bytes({1, 2})},
                                               {"b.bias", "F32", {1}, F32Bytes({3})}}));
    WriteFile(dir_ + "/model-00002-of-00002.safetensors",
              FileBytes(std::vector<RawTensor>{{"c", "F32", {3}, F32Bytes({4, 5, 6})}}));
    WriteIndex(R"({"metadata":{"total_size":24},"weight_map":{)"
               R"("a.weight":"model-00001-of-00002.safetensors",)"
               R"("b.bias":"model-00001-of-00002.safetensors",)"
               R"("c":"model-00002-of-00002.safetensors"}})");
  }
  void WriteIndex(const std::string& json) { WriteText(dir_ + "/" + kWeightsIndexFile, json); }

  void ExpectOpenError(StatusCode code, const std::string& needle) {
    auto c = Checkpoint::Open(dir_);
    ASSERT_FALSE(c.ok()) << "expected an error containing \"" << needle << "\"";
    EXPECT_EQ(c.status().code(), code) << c.status().ToString();
    EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().message();
  }

  std::string dir_;
};

TEST_F(CheckpointTest, ReadsEveryTensorOfEveryShard) {
  WriteShards();
  ASSERT_TRUE(HasWeights(dir_));
  auto c = Checkpoint::Open(dir_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)->path(), dir_ + "/" + kWeightsIndexFile);
  ASSERT_EQ((*c)->tensors().size(), 3u);
  EXPECT_EQ((*c)->tensors()[0]->name, "a.weight");
  EXPECT_EQ((*c)->tensors()[2]->name, "c");
  auto t = (*c)->ReadF32("c");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(t->data()[2], 6.0f);
  EXPECT_EQ((*c)->ReadF32("a.weight")->data()[1], 2.0f);
  EXPECT_EQ((*c)->FileOf("c"), dir_ + "/model-00002-of-00002.safetensors");
  EXPECT_EQ((*c)->FileOf("nope"), (*c)->path());
  EXPECT_EQ((*c)->Find("nope"), nullptr);
  EXPECT_EQ((*c)->ReadF32("nope").status().code(), StatusCode::kNotFound);
}

TEST_F(CheckpointTest, OneFileWinsOverAnIndexAsInTransformers) {
  WriteShards();
  WriteFile(dir_ + "/" + kWeightsFile,
            FileBytes(std::vector<RawTensor>{{"only", "F32", {1}, F32Bytes({9})}}));
  auto c = Checkpoint::Open(dir_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)->path(), dir_ + "/" + kWeightsFile);
  ASSERT_EQ((*c)->tensors().size(), 1u);
  EXPECT_EQ((*c)->ReadF32("only")->data()[0], 9.0f);
  EXPECT_EQ((*c)->Find("c"), nullptr);
}

TEST_F(CheckpointTest, NoCheckpointIsNotFound) {
  EXPECT_FALSE(HasWeights(dir_));
  ExpectOpenError(StatusCode::kNotFound, kWeightsIndexFile);
}

TEST_F(CheckpointTest, MissingShardIsNotFoundNamingIt) {
  WriteShards();
  std::filesystem::remove(dir_ + "/model-00002-of-00002.safetensors");
  ExpectOpenError(StatusCode::kNotFound, "model-00002-of-00002.safetensors");
}

TEST_F(CheckpointTest, TensorNotInTheShardTheIndexNamesIsRefused) {
  WriteShards();
  WriteIndex(R"({"weight_map":{"a.weight":"model-00001-of-00002.safetensors",)"
             R"("c":"model-00001-of-00002.safetensors"}})");
  // Only the first shard is named, so "c" is in none of the opened files.
  ExpectOpenError(StatusCode::kCorrupt, "tensor \"c\" is not in");
  WriteIndex(R"({"weight_map":{"a.weight":"model-00002-of-00002.safetensors",)"
             R"("c":"model-00001-of-00002.safetensors"}})");
  ExpectOpenError(StatusCode::kCorrupt, "(it is in");
}

TEST_F(CheckpointTest, TensorInTwoShardsIsRefused) {
  WriteShards();
  WriteFile(dir_ + "/model-00002-of-00002.safetensors",
            FileBytes(std::vector<RawTensor>{{"c", "F32", {1}, F32Bytes({4})},
                                             {"b.bias", "F32", {1}, F32Bytes({3})}}));
  ExpectOpenError(StatusCode::kCorrupt, "\"b.bias\" is in two shards");
}

TEST_F(CheckpointTest, CorruptShardNamesTheShard) {
  WriteShards();
  WriteText(dir_ + "/model-00002-of-00002.safetensors", "garbage!");
  ExpectOpenError(StatusCode::kCorrupt, "shard model-00002-of-00002.safetensors");
}

TEST(ShardIndexTest, ParsesShardsInOrderOfFirstMention) {
  auto idx = ParseShardIndex(
      R"({"metadata":{"total_size":1},"weight_map":{"x":"b.safetensors","y":"a.safetensors",)"
      R"("z":"b.safetensors"}})",
      "i.json");
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  EXPECT_EQ(idx->shards, (std::vector<std::string>{"b.safetensors", "a.safetensors"}));
  ASSERT_EQ(idx->weight_map.size(), 3u);
  EXPECT_EQ(idx->weight_map[1], (std::pair<std::string, size_t>{"y", 1}));
  EXPECT_EQ(idx->weight_map[2], (std::pair<std::string, size_t>{"z", 0}));
}

TEST(ShardIndexTest, RefusesWhatIsNotAnIndex) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "not valid JSON"},
      {"[]", "not a JSON object"},
      {R"({"metadata":{}})", "no \"weight_map\""},
      {R"({"weight_map":[]})", "\"weight_map\" is not an object"},
      {R"({"weight_map":{}})", "lists no tensor"},
      {R"({"weight_map":{"a":1}})", "its shard is not a string"},
      {R"({"weight_map":{"a":"x.safetensors","a":"x.safetensors"}})", "listed twice"},
      // Shards outside the model directory.
      {R"({"weight_map":{"a":"../model.safetensors"}})", "not a file name"},
      {R"({"weight_map":{"a":"/etc/passwd"}})", "not a file name"},
      {R"({"weight_map":{"a":"sub\\x.safetensors"}})", "not a file name"},
      {R"({"weight_map":{"a":".."}})", "not a file name"},
      {R"({"weight_map":{"a":""}})", "not a file name"},
      {R"({"weight_map":{"a":"x\u0000.safetensors"}})", "not a file name"},
  };
  for (const auto& [json, needle] : cases) {
    auto idx = ParseShardIndex(json, "i.json");
    ASSERT_FALSE(idx.ok()) << json;
    EXPECT_EQ(idx.status().code(), StatusCode::kCorrupt) << json;
    EXPECT_NE(idx.status().message().find(needle), std::string::npos)
        << json << ": " << idx.status().message();
    EXPECT_NE(idx.status().message().find("i.json"), std::string::npos) << json;
  }
}

}  // namespace
}  // namespace orchid
