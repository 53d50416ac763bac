// The registry: one description of each fixture model (family, head, task, pooling, pair
// format), the same for every backend, and CheckBackend's refusals (the pooling) naming model
// and backend.
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

// CheckBackend(kCuda) says what no op call shows, the pooling: the other pooling modes and
// include_prompt: false are refused up front, naming the model, the backend and the reason.
// (What the CUDA kernels run is op_support.h's: tests/families/cuda_admission_test.cpp.)
TEST(RegistryTest, CudaRefusalNamesModelBackendAndReason) {
  for (const auto& [name, why] : {std::pair{"distilbert-max", "max pooling"},
                                  std::pair{"distilbert-weightedmean", "weighted_mean pooling"},
                                  std::pair{"bert-instruct", "include_prompt"}}) {
    SCOPED_TRACE(name);
    auto spec = DescribeModel(kModels + "/" + name);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    const Status st = CheckBackend(*spec, BackendKind::kCuda);
    ASSERT_EQ(st.code(), StatusCode::kUnimplemented);
    EXPECT_NE(st.message().find(name), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("cuda"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(why), std::string::npos) << st.message();
  }
  auto qwen3 = DescribeModel(kModels + "/qwen3-embed");
  ASSERT_TRUE(qwen3.ok());
  EXPECT_TRUE(CheckBackend(*qwen3, BackendKind::kCuda).ok());  // the rest is the ops'
}

// Directories saved by sentence-transformers / transformers releases (tests/fixtures/conformance,
// `make fixtures`): the limit and where it comes from.
TEST(RegistryTest, ConformanceDirectoriesLimits) {
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

// Gemma 3 (EmbeddingGemma) with sentence-transformers Dense modules.
TEST(RegistryTest, Gemma3WindowsAndDenseModules) {
  auto spec = DescribeModel(kModels + "/gemma3-embed");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(spec->decoder.gemma);
  EXPECT_EQ(spec->decoder.layer_window, (std::vector<int>{9, 9, 0}));  // 16 / 2 + 1: bidirectional
  EXPECT_EQ(spec->dense.size(), 2u);
  EXPECT_EQ(spec->info.embedding_dim, 24);
}

// GTE ("new"): no token types, NewModel's NTK rotary scaling.
TEST(RegistryTest, GteIsNtkScaledWithoutTokenTypes) {
  auto spec = DescribeModel(kModels + "/gte-embed");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->info.type_vocab_size, 0);
  EXPECT_GT(spec->rope_encoder.rope_inv_freq_divisor, 1.0);  // NTK-scaled
}

// DeBERTa-v3's relative positions: 64 log buckets over a span of 64.
TEST(RegistryTest, DebertaSpanAndScale) {
  auto spec = DescribeModel(kModels + "/deberta-classifier");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->deberta.span(), 64);
  EXPECT_EQ(spec->deberta.scale_factor(), 3);
  EXPECT_EQ(spec->info.num_labels, 3);
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
