// What makes a CUDA graph of a family's forward pass safe to replay, checked without a GPU:
// each family's Forward() runs on a recording backend (ops/backend.h implemented with no
// arithmetic) for two different batches of the same bucket, and must issue the same op
// sequence on the same buffers, every access inside its buffer's planned extent of one arena
// sized for the largest bucket, and no buffer read before the pass has written it.
//
// The recording backend sees the batch the way the CUDA engine does: rows come from the bucket
// (tokens padded to a multiple of 64, sequences to a power of two), the pruned flag from the
// batch's pooling (every sequence CLS or last token), nothing else.
#include "families/recording_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "description/registry.h"
#include "families/family.h"

namespace orchid {
namespace {

const std::string kModels = ORCHID_SOURCE_DIR "/models/fixtures";
using testing_util::MakeBatch;
using testing_util::RecordingBackend;
using testing_util::SameBucket;

TEST(RecordingBackendTest, EachFamilyIssuesTheSameOpsInsideItsArenaForOneBucket) {
  // Every fixture model (tests/fixtures/models/build.py): each family and head.
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(kModels)) {
    if (std::filesystem::exists(e.path() / "config.json")) names.push_back(e.path().filename());
  }
  std::sort(names.begin(), names.end());
  ASSERT_GE(names.size(), 10u) << "run `make fixtures`";
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    auto spec = DescribeModel(kModels + "/" + name);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    RecordingBackend b;
    auto family = LoadFamily(*spec, b);
    ASSERT_TRUE(family.ok()) << family.status().ToString();
    b.Plan(/*max_tokens=*/256, /*max_seqs=*/8);
    // Pruned (the model's own pooling when CLS / last token) and unpruned (mean) passes.
    std::set<bool> pruned_seen;
    for (Pooling pooling : {spec->info.default_pooling, Pooling::kMean}) {
      SCOPED_TRACE(PoolingName(pooling));
      const auto [first, second] = SameBucket(pooling, spec->info);
      b.Begin(first);
      ASSERT_TRUE((*family)->Forward(b).ok());
      const std::vector<std::string> ops = b.ops();
      EXPECT_TRUE(b.errors().empty()) << b.errors().front();
      pruned_seen.insert(b.prune_last_layer());
      b.Begin(second);
      ASSERT_TRUE((*family)->Forward(b).ok());
      EXPECT_TRUE(b.errors().empty()) << b.errors().front();
      ASSERT_EQ(ops, b.ops());
      // Every layer attends once; the pass ends by writing the output rows.
      size_t attention = 0;
      for (const std::string& op : ops) attention += op.rfind("Attention", 0) == 0;
      const int layers = spec->family == FamilyKind::kBert ? spec->bert.num_hidden_layers
                         : spec->family == FamilyKind::kModernBert
                             ? spec->modernbert.num_hidden_layers
                         : spec->family == FamilyKind::kRopeEncoder
                             ? spec->rope_encoder.num_hidden_layers
                         : spec->family == FamilyKind::kDeberta ? spec->deberta.num_hidden_layers
                             : spec->decoder.num_hidden_layers;
      EXPECT_EQ(attention, size_t(layers));
      const std::string out = b.decl((*family)->output()).name;
      EXPECT_NE(ops.back().find(" " + out + "["), std::string::npos) << ops.back();
    }
    // CLS and last-token pooling read one row per sequence: those passes prune.
    if (spec->info.default_pooling == Pooling::kCls ||
        spec->info.default_pooling == Pooling::kLastToken) {
      EXPECT_EQ(pruned_seen, (std::set<bool>{false, true}));
    }
  }
}

// The recording backend's own checks have teeth: a read of a buffer nothing wrote, and a
// bucket larger than the planned arena, are reported.
TEST(RecordingBackendTest, ReportsReadsBeforeWritesAndAccessesOutsideThePlan) {
  auto spec = DescribeModel(kModels + "/xlmr-embed");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  RecordingBackend b;
  auto family = LoadFamily(*spec, b);
  ASSERT_TRUE(family.ok()) << family.status().ToString();
  b.Plan(64, 2);  // smaller than the batches' bucket
  const auto [first, second] = SameBucket(Pooling::kMean, spec->info);
  (void)second;
  b.Begin(first);
  ASSERT_TRUE((*family)->Forward(b).ok());
  ASSERT_FALSE(b.errors().empty());
  EXPECT_NE(b.errors().front().find("outside"), std::string::npos) << b.errors().front();

  b.Plan(256, 8);
  b.Begin(first);
  const ops::Buffer unwritten = b.AddBuffer("never written", ops::Rows::kTokens, 4);
  b.Plan(256, 8);
  ASSERT_TRUE(b.Activate(unwritten, ops::Activation::kTanh).ok());
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_NE(b.errors().front().find("read before"), std::string::npos) << b.errors().front();
}

// Shapes are checked in the contract itself, for every backend: a family bug is an error
// naming the op and the buffers, not a wrong answer.
TEST(RecordingBackendTest, TheContractRefusesMismatchedShapes) {
  RecordingBackend b;
  Tensor w({8, 4});
  auto linear = b.AddLinear(w, nullptr);
  ASSERT_TRUE(linear.ok());
  const ops::Buffer in = b.AddBuffer("in", ops::Rows::kTokens, 5);
  const ops::Buffer out = b.AddBuffer("out", ops::Rows::kTokens, 8);
  const ops::Buffer seqs = b.AddBuffer("seqs", ops::Rows::kSequences, 8);
  const Status st = b.Linear(in, *linear, out);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("\"in\""), std::string::npos) << st.ToString();
  EXPECT_EQ(b.Linear(out, *linear, out).code(), StatusCode::kInternal);  // aliasing
  EXPECT_EQ(b.Pool(out, seqs, true).code(), StatusCode::kInternal);      // not an accumulator
  ops::AttentionOptions a{2, 2, 2, false};
  const ops::Buffer qkv = b.AddBuffer("qkv", ops::Rows::kTokens, 12);
  const ops::Buffer pooled = b.AddBuffer("ctx", ops::Rows::kPooled, 4);
  RaggedBatch mean = MakeBatch({3}, Pooling::kMean, 10, 1);
  b.Begin(mean);
  EXPECT_EQ(b.Attention(qkv, pooled, a).code(), StatusCode::kInternal);  // not pruned
}

}  // namespace
}  // namespace orchid
