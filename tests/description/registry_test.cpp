// The registry: one description of each fixture model (family, head, task, pooling, pair
// format), the same for every backend, and CheckBackend's refusals naming model and backend.
#include "description/registry.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace orchid {
namespace {

const std::string kModels = ORCHID_SOURCE_DIR "/models/fixtures";

TEST(RegistryTest, DescribesEveryFixtureOnce) {
  struct Want {
    const char* name;
    FamilyKind family;
    HeadKind head;
    ModelTask task;
    Pooling pooling;
  };
  const Want wants[] = {
      {"bert-cross-encoder", FamilyKind::kBert, HeadKind::kBertPooler, ModelTask::kScore,
       Pooling::kCls},
      {"bert-classifier", FamilyKind::kBert, HeadKind::kBertPooler, ModelTask::kScore,
       Pooling::kCls},
      {"xlmr-cross-encoder", FamilyKind::kBert, HeadKind::kRobertaClassifier, ModelTask::kScore,
       Pooling::kCls},
      {"xlmr-embed", FamilyKind::kBert, HeadKind::kNone, ModelTask::kEmbed, Pooling::kMean},
      {"distilbert-cross-encoder", FamilyKind::kBert, HeadKind::kDistilBertClassifier,
       ModelTask::kScore, Pooling::kCls},
      {"mpnet-cross-encoder", FamilyKind::kBert, HeadKind::kRobertaClassifier, ModelTask::kScore,
       Pooling::kCls},
      {"camembert-cross-encoder", FamilyKind::kBert, HeadKind::kRobertaClassifier,
       ModelTask::kScore, Pooling::kCls},
      {"mpnet-embed", FamilyKind::kBert, HeadKind::kNone, ModelTask::kEmbed, Pooling::kMean},
      {"modernbert-embed", FamilyKind::kModernBert, HeadKind::kNone, ModelTask::kEmbed,
       Pooling::kMean},
      {"modernbert-cross-encoder", FamilyKind::kModernBert, HeadKind::kModernBertHead,
       ModelTask::kScore, Pooling::kMean},
      {"nomic-embed", FamilyKind::kRopeEncoder, HeadKind::kNone, ModelTask::kEmbed,
       Pooling::kMean},
      {"gte-embed", FamilyKind::kRopeEncoder, HeadKind::kNone, ModelTask::kEmbed, Pooling::kCls},
      {"gte-cross-encoder", FamilyKind::kRopeEncoder, HeadKind::kBertPooler, ModelTask::kScore,
       Pooling::kCls},
      {"deberta-classifier", FamilyKind::kDeberta, HeadKind::kDebertaPooler, ModelTask::kScore,
       Pooling::kCls},
      {"deberta-cross-encoder", FamilyKind::kDeberta, HeadKind::kDebertaPooler, ModelTask::kScore,
       Pooling::kCls},
      {"qwen3-embed", FamilyKind::kDecoder, HeadKind::kNone, ModelTask::kEmbed,
       Pooling::kLastToken},
      {"qwen2-embed", FamilyKind::kDecoder, HeadKind::kNone, ModelTask::kEmbed,
       Pooling::kLastToken},
      {"mistral-embed", FamilyKind::kDecoder, HeadKind::kNone, ModelTask::kEmbed, Pooling::kMean},
      {"llama-embed", FamilyKind::kDecoder, HeadKind::kNone, ModelTask::kEmbed,
       Pooling::kLastToken},
      // Qwen3-Reranker (a bare Qwen3ForCausalLM): a scorer on every backend, never an embedder.
      {"qwen3-reranker", FamilyKind::kDecoder, HeadKind::kYesNoLogit, ModelTask::kScore,
       Pooling::kLastToken},
  };
  for (const Want& w : wants) {
    SCOPED_TRACE(w.name);
    auto spec = DescribeModel(kModels + "/" + w.name);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_EQ(spec->family, w.family);
    EXPECT_EQ(spec->head, w.head);
    EXPECT_EQ(spec->info.task, w.task);
    EXPECT_EQ(spec->info.default_pooling, w.pooling);
    EXPECT_TRUE(CheckBackend(*spec, BackendKind::kCpu).ok());
  }
  auto reranker = DescribeModel(kModels + "/qwen3-reranker");
  ASSERT_TRUE(reranker.ok());
  EXPECT_EQ(reranker->info.pair_format, PairFormat::kQwen3RerankerChat);
  EXPECT_GE(reranker->yes_token, 0);
  EXPECT_GE(reranker->no_token, 0);
  auto xlmr = DescribeModel(kModels + "/xlmr-embed");
  ASSERT_TRUE(xlmr.ok());
  EXPECT_EQ(xlmr->bert.position_offset, xlmr->bert.pad_token_id + 1);
  EXPECT_EQ(xlmr->info.max_position_embeddings,
            xlmr->bert.max_position_embeddings - xlmr->bert.position_offset);
}

// The fixtures' attention heads (head_dim 8-16) are narrower than the CUDA attention kernel's
// instantiations: refused up front, naming the model, the backend and the reason.
TEST(RegistryTest, CudaRefusalNamesModelBackendAndReason) {
  auto spec = DescribeModel(kModels + "/qwen3-embed");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const Status st = CheckBackend(*spec, BackendKind::kCuda);
  ASSERT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("qwen3-embed"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("cuda"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("head_dim"), std::string::npos) << st.message();
}

// Directories saved by sentence-transformers / transformers releases (tests/fixtures/conformance,
// `make fixtures`): the limit and where it comes from; the CUDA refusals for what its kernels
// lack (scaled rotary embeddings, a sliding window shorter than the inputs), at load time.
TEST(RegistryTest, ConformanceDirectoriesLimitsAndCudaRefusals) {
  const std::string root = ORCHID_SOURCE_DIR "/models/conformance/";
  struct Want {
    const char* dir;
    int limit;
    const char* source;
  };
  for (const Want& w :
       {Want{"st6.3-tf5.25/bert-dot", 40, "tokenizer_config.json model_max_length"},
        Want{"st5.1-tf4.57/bert-dot", 40, "sentence_bert_config.json max_seq_length"},
        Want{"st5.1-tf4.57/llama-dynamic", 64, "sentence_bert_config.json max_seq_length"},
        Want{"st6.3-tf5.25/llama-dynamic", 32, "config.json max_position_embeddings"}}) {
    SCOPED_TRACE(w.dir);
    auto spec = DescribeModel(root + w.dir);
    if (!spec.ok() && spec.status().code() == StatusCode::kNotFound)
      GTEST_SKIP() << "make fixtures";
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_EQ(spec->info.max_seq_length, w.limit);
    EXPECT_EQ(spec->info.max_seq_length_source.rfind(w.source, 0), 0u)
        << spec->info.max_seq_length_source;
  }
  for (const auto& [dir, why] : {std::pair{"st6.3-tf5.25/llama-linear", "linear scaling"},
                                 std::pair{"st6.3-tf5.25/qwen2-yarn", "yarn scaling"},
                                 std::pair{"st6.3-tf5.25/mistral-sliding", "sliding window (12"}}) {
    SCOPED_TRACE(dir);
    auto spec = DescribeModel(root + dir);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    const Status st = CheckBackend(*spec, BackendKind::kCuda);
    ASSERT_EQ(st.code(), StatusCode::kUnimplemented);
    EXPECT_NE(st.message().find(why), std::string::npos) << st.message();
  }
}

// SPLADE: a BertForMaskedLM with SpladePooling is a sparse embedder of vocabulary width.
TEST(RegistryTest, SpladeIsASparseEmbedderOfVocabularyWidth) {
  auto spec = DescribeModel(kModels + "/splade-bert");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->head, HeadKind::kSpladeMlm);
  EXPECT_TRUE(spec->info.sparse);
  EXPECT_EQ(spec->info.output_dim(), spec->info.vocab_size);
  EXPECT_EQ(spec->splade_log1p, 1);
  EXPECT_EQ(CheckBackend(*spec, BackendKind::kCuda).code(), StatusCode::kUnimplemented);
}

// Gemma 3 and sentence-transformers Dense modules: refused on CUDA, naming what it lacks.
TEST(RegistryTest, CudaRefusesGemma3AndDenseModules) {
  auto spec = DescribeModel(kModels + "/gemma3-embed");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(spec->decoder.gemma);
  EXPECT_EQ(spec->decoder.layer_window, (std::vector<int>{9, 9, 0}));  // 16 / 2 + 1: bidirectional
  EXPECT_EQ(spec->dense.size(), 2u);
  EXPECT_EQ(spec->info.embedding_dim, 24);
  const Status st = CheckBackend(*spec, BackendKind::kCuda);
  ASSERT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("Dense"), std::string::npos) << st.message();
}

// MPNet's relative position bias has no CUDA kernel yet: refused on CUDA, for that reason.
TEST(RegistryTest, CudaRefusesMpnetForItsRelativeBias) {
  auto spec = DescribeModel(kModels + "/mpnet-embed");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const Status st = CheckBackend(*spec, BackendKind::kCuda);
  ASSERT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("relative position bias"), std::string::npos) << st.message();
}

// GTE's GELU-gated MLP has no CUDA kernel (the SwiGLU one gates with SiLU): refused on CUDA.
TEST(RegistryTest, CudaRefusesGteForItsGeluGate) {
  auto spec = DescribeModel(kModels + "/gte-embed");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->info.type_vocab_size, 0);
  EXPECT_GT(spec->rope_encoder.rope_inv_freq_divisor, 1.0);  // NTK-scaled
  const Status st = CheckBackend(*spec, BackendKind::kCuda);
  ASSERT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("GELU gate"), std::string::npos) << st.message();
}

// DeBERTa's disentangled attention has no CUDA kernel: refused on CUDA, for that reason.
TEST(RegistryTest, CudaRefusesDebertaForItsDisentangledAttention) {
  auto spec = DescribeModel(kModels + "/deberta-classifier");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->deberta.span(), 64);
  EXPECT_EQ(spec->deberta.scale_factor(), 3);
  EXPECT_EQ(spec->info.num_labels, 3);
  const Status st = CheckBackend(*spec, BackendKind::kCuda);
  ASSERT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("disentangled"), std::string::npos) << st.message();
}

TEST(RegistryTest, MissingDirectoryOrConfigIsAnError) {
  auto spec = DescribeModel(ORCHID_SOURCE_DIR "/tests/fixtures/tokenizer");
  EXPECT_FALSE(spec.ok());
  auto missing = DescribeModel(kModels + "/no-such-model");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace orchid
