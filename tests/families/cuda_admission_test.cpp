// What the CUDA engine serves, decided without a GPU: every family and head of the test fixtures
// loaded and run (an unpruned and a pruned pass, as the engine plans) on the recording backend
// whose Supports() is the CUDA backend's own (backends/cuda/op_support.h: the function
// CudaBackend asks before every op). A model is served on CUDA exactly when the registry's
// CheckBackend(kCuda) (its pooling mode) and every recorded call accept it, and the model table
// in docs/models.md (its CUDA column) must say the same, row by row: "yes" when every fixture of
// the row is served, "no" when none is, "partly" otherwise.
//
// The fixtures are small: their attention heads (8-16 wide) are narrower than any head width
// the attention kernel is instantiated for, a size and not a family matter. Their Attention
// calls are asked as for a 64-wide head; the size limit itself is checked below.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/op_support.h"
#include "description/registry.h"
#include "families/family.h"
#include "families/recording_backend.h"

namespace orchid {
namespace {

using testing_util::RecordingBackend;
using testing_util::SameBucket;

const std::string kRoot = ORCHID_SOURCE_DIR "/models/";

Status FamilySupport(const ops::OpCall& call) {
  if (call.kind == ops::OpKind::kAttention &&
      !cuda::AttentionHeadDimSupported(call.attention->head_dim)) {
    ops::AttentionOptions o = *call.attention;
    o.head_dim = 64;
    ops::OpCall sized = call;
    sized.attention = &o;
    return cuda::Supports(sized);
  }
  return cuda::Supports(call);
}

// Ok when the CUDA engine would serve the model in `dir` (relative to models/), else why not.
Status CudaVerdict(const std::string& dir,
                   const std::function<Status(const ops::OpCall&)>& support) {
  ORCHID_ASSIGN_OR_RETURN(ModelSpec spec, DescribeModel(kRoot + dir));
  ORCHID_RETURN_IF_ERROR(CheckBackend(spec, BackendKind::kCuda));
  RecordingBackend b(support);
  ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<Family> family, LoadFamily(spec, b));
  b.Plan(256, 8);
  for (Pooling pooling : {Pooling::kMean, spec.info.default_pooling}) {
    b.Begin(SameBucket(pooling, spec.info).first);
    ORCHID_RETURN_IF_ERROR(family->Forward(b));
  }
  return Status::Ok();
}

// docs/models.md's model table: family (first cell) -> the CUDA cell (last).
std::map<std::string, std::string> ModelTableCudaColumn() {
  std::ifstream in(ORCHID_SOURCE_DIR "/docs/models.md");
  std::map<std::string, std::string> out;
  std::string line;
  bool table = false;
  while (std::getline(in, line)) {
    if (line.rfind("| family |", 0) == 0) {
      table = true;
      continue;
    }
    if (!table) continue;
    if (line.rfind("|", 0) != 0) break;
    if (line.rfind("|---", 0) == 0) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    std::string cell;
    while (std::getline(ss, cell, '|')) cells.push_back(cell);
    auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(' '));
      s.erase(s.find_last_not_of(' ') + 1);
      return s;
    };
    if (cells.size() >= 2) out[trim(cells.front())] = trim(cells.back());
  }
  return out;
}

// Each row of that table and the fixtures that stand for it (models/fixtures, the default model,
// and conformance directories for the decoders' rotary scaling and sliding windows).
const std::vector<std::pair<std::string, std::vector<std::string>>> kRows = {
    {"BERT", {"all-MiniLM-L6-v2"}},
    {"XLM-RoBERTa / RoBERTa / CamemBERT", {"fixtures/xlmr-embed", "fixtures/roberta-embed"}},
    {"DistilBERT", {"fixtures/distilbert-embed"}},
    {"MPNet", {"fixtures/mpnet-embed"}},
    {"ModernBERT", {"fixtures/modernbert-embed", "fixtures/modernbert-cross-encoder"}},
    {"NomicBERT", {"fixtures/nomic-embed"}},
    {"GTE (\"new\")", {"fixtures/gte-embed", "fixtures/gte-cross-encoder"}},
    {"jina-embeddings-v3", {"fixtures/jina-v3", "fixtures/jina-v3-split"}},
    {"DeBERTa-v2 / v3", {"fixtures/deberta-classifier", "fixtures/deberta-cross-encoder"}},
    {"Gemma 3", {"fixtures/gemma3-embed"}},
    {"Qwen3", {"fixtures/qwen3-embed", "fixtures/qwen3-bidir"}},
    {"Qwen2 / Mistral / Llama",
     {"fixtures/qwen2-embed", "fixtures/mistral-embed", "fixtures/llama-embed",
      "fixtures/mistral-sharded", "conformance/st6.3-tf5.25/llama-linear",
      "conformance/st6.3-tf5.25/qwen2-yarn", "conformance/st6.3-tf5.25/mistral-sliding"}},
    {"BGE-M3", {"fixtures/bge-m3", "fixtures/bge-m3-bin"}},
    {"SPLADE", {"fixtures/splade-bert"}},
    {"static embedding", {"fixtures/static-model2vec", "fixtures/static-st"}},
    {"ColBERT (late interaction)",
     {"fixtures/colbert-bert", "fixtures/colbert-modernbert", "fixtures/colbert-xlmr",
      "fixtures/colbert-stanford"}},
    {"cross-encoders",
     {"fixtures/bert-cross-encoder", "fixtures/bert-classifier", "fixtures/xlmr-cross-encoder",
      "fixtures/distilbert-cross-encoder", "fixtures/camembert-cross-encoder",
      "fixtures/mpnet-cross-encoder"}},
    {"Qwen3-Reranker", {"fixtures/qwen3-reranker"}},
    {"CLIP, SigLIP (dual encoders)",
     {"../tests/fixtures/clip/models/clip", "../tests/fixtures/clip/models/siglip"}},
};

TEST(CudaAdmissionTest, ReadmeSaysWhatTheCudaOpsServe) {
  if (!std::filesystem::exists(kRoot + "fixtures/nomic-embed/config.json") ||
      !std::filesystem::exists(kRoot + "conformance/st6.3-tf5.25/llama-linear/config.json")) {
    GTEST_SKIP() << "run `make fixtures`";
  }
  const std::map<std::string, std::string> readme = ModelTableCudaColumn();
  ASSERT_EQ(readme.size(), kRows.size()) << "docs/models.md's model table has other rows";
  for (const auto& [row, dirs] : kRows) {
    SCOPED_TRACE(row);
    ASSERT_EQ(readme.count(row), 1u) << "no row in docs/models.md";
    if (!std::filesystem::exists(kRoot + dirs.front())) {
      // Fixtures newer than the models/ tree (`make fixtures` builds them; unit-test runs it).
      std::cout << "[ skipped  ] " << row << ": no " << kRoot + dirs.front() << "\n";
      continue;
    }
    int served = 0;
    std::string why;
    for (const std::string& dir : dirs) {
      const Status st = CudaVerdict(dir, FamilySupport);
      ASSERT_TRUE(st.ok() || st.code() == StatusCode::kUnimplemented)
          << dir << ": " << st.ToString();
      served += st.ok();
      if (!st.ok()) why += "\n  " + dir + ": " + st.message();
    }
    const std::string want = served == int(dirs.size()) ? "yes" : served == 0 ? "no" : "partly";
    EXPECT_EQ(readme.at(row).substr(0, want.size()), want)
        << "docs/models.md says \"" << readme.at(row) << "\"; the CUDA ops serve " << served
        << " of " << dirs.size() << why;
  }
}

// Refusals name the op and what the kernel lacks; the sizes the fixtures are spared above are
// refused for real, at load or planning.
TEST(CudaAdmissionTest, RefusalsNameTheOpAndTheLimit) {
  if (!std::filesystem::exists(kRoot + "fixtures/mpnet-embed/config.json")) {
    GTEST_SKIP() << "run `make fixtures`";
  }
  auto refusal = [](const std::string& dir, auto support) {
    return CudaVerdict(dir, support).message();
  };
  const std::function<Status(const ops::OpCall&)> exact = cuda::Supports;
  EXPECT_NE(refusal("fixtures/qwen3-embed", exact).find("Attention: head_dim 16"),
            std::string::npos);
  EXPECT_NE(refusal("fixtures/mpnet-embed", FamilySupport).find("relative position bias"),
            std::string::npos);
  EXPECT_NE(refusal("fixtures/splade-bert", FamilySupport).find("no max pooling"),
            std::string::npos);
  EXPECT_NE(refusal("fixtures/distilbert-max", FamilySupport).find("max pooling"),
            std::string::npos);
  EXPECT_NE(refusal("conformance/st6.3-tf5.25/llama-linear", FamilySupport).find("linear"),
            std::string::npos);
  EXPECT_NE(
      refusal("conformance/st6.3-tf5.25/mistral-sliding", FamilySupport).find("sliding window (12"),
      std::string::npos);
  if (std::filesystem::exists(kRoot + "fixtures/jina-v3/config.json")) {
    EXPECT_NE(refusal("fixtures/jina-v3", FamilySupport).find("AddLora: no task adapters"),
              std::string::npos);
  }
  EXPECT_TRUE(CudaVerdict("all-MiniLM-L6-v2", exact).ok());  // head_dim 32: its real size

  // The op-level limits themselves.
  ops::BufferDecl bf16{"x", ops::Rows::kTokens, 12288, ops::Precision::kActivation};
  ops::OpCall norm;
  norm.kind = ops::OpKind::kNorm;
  norm.buffers[0] = norm.buffers[1] = &bf16;
  norm.norm = ops::NormWeight{0, 12288, ops::NormKind::kLayerNorm, 1e-5f};
  EXPECT_NE(cuda::Supports(norm).message().find("12256"), std::string::npos);
  norm.norm.width = bf16.width = 12256;
  EXPECT_TRUE(cuda::Supports(norm).ok());
  ops::OpCall linear;
  linear.kind = ops::OpKind::kAddLinear;
  linear.linear = ops::LinearWeight{-1, 16, 20};
  EXPECT_NE(cuda::Supports(linear).message().find("multiple of 8"), std::string::npos);
  for (int d : {32, 64, 80, 96, 128}) EXPECT_TRUE(cuda::AttentionHeadDimSupported(d)) << d;
  for (int d : {16, 48, 112, 256}) EXPECT_FALSE(cuda::AttentionHeadDimSupported(d)) << d;
}

}  // namespace
}  // namespace orchid
