// The model registry: the one place that reads a model directory's config.json and
// sentence-transformers modules and decides what the model is (family, task, pooling, head,
// native quantization) and which backends can serve it. Engines build the family it names;
// the gateway reads the same description without loading weights or linking any backend.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "description/bert_config.h"
#include "description/deberta_config.h"
#include "description/decoder_config.h"
#include "description/dual_encoder_config.h"
#include "description/lora_adapters.h"
#include "description/model_info.h"
#include "description/modernbert_config.h"
#include "description/rope_encoder_config.h"
#include "description/sentence_transformers.h"
#include "description/static_embedding.h"

namespace orchid {

// The transformer bodies orchid defines (src/families/).
enum class FamilyKind : uint8_t {
  kBert,  // post-LN encoders with absolute positions and exact GELU: BERT, RoBERTa, XLM-RoBERTa,
          // CamemBERT, DistilBERT, MPNet
  kModernBert,   // ModernBERT encoders (pre-LN, rotary, global / sliding-window layers, GeGLU)
  kRopeEncoder,  // post-LN encoders with rotary positions and a gated MLP: NomicBERT, GTE ("new")
  kDeberta,      // DeBERTa-v2 / v3: post-LN, disentangled relative-position attention
  kDecoder,      // Llama-style decoders (Qwen3, Qwen2, Mistral, Llama), causal or bidirectional
                 // (pre-RMSNorm, RoPE, grouped-query attention, SwiGLU)
  kDualEncoder,  // CLIP and SigLIP: a text tower and a vision tower embedding into one space
                 // (description/dual_encoder_config.h)
  kStatic,       // static embeddings: a token table and a mean, no transformer (model2vec,
                 // sentence-transformers' StaticEmbedding; description/static_embedding.h)
};
const char* FamilyName(FamilyKind f);

// What maps the pooled vector to a scorer's logits (kNone for embedders).
enum class HeadKind : uint8_t {
  kNone,
  kBertPooler,            // BERT, GTE *ForSequenceClassification: classifier(tanh(pooler.dense(h)))
  kRobertaClassifier,     // XLM-R / RoBERTa / MPNet: classifier.out_proj(tanh(classifier.dense(h)))
  kDistilBertClassifier,  // DistilBERT: classifier(relu(pre_classifier(h)))
  kModernBertHead,        // ModernBERT: classifier(LayerNorm(gelu(head.dense(h))))
  kDebertaPooler,         // DeBERTa-v2: classifier(gelu(pooler.dense(h)))
  kSpladeMlm,             // SPLADE: the masked-LM head on every token, max-pooled, log1p(relu)
  kYesNoLogit,            // Qwen3-Reranker: logit(yes) - logit(no) from the output projection
};

enum class BackendKind : uint8_t { kCpu, kCuda };
const char* BackendName(BackendKind b);

struct ModelSpec {
  std::string dir;
  std::string config_path;   // DIR/config.json
  FamilyKind family = FamilyKind::kBert;
  HeadKind head = HeadKind::kNone;
  ModelInfo info;  // complete: sizes, task, pooling, labels, pair format, quantization
  // The family's hyper-parameters (only the one of `family` is filled in).
  BertConfig bert;  // position_offset set for XLM-R
  DecoderConfig decoder;
  ModernBertConfig modernbert;
  RopeEncoderConfig rope_encoder;
  DebertaConfig deberta;
  DualEncoderConfig dual_encoder;
  StaticEmbeddingConfig static_embedding;
  // Task adapters (jina-embeddings-v3's LoRA adapters, description/lora_adapters.h), in the
  // order of info.tasks.
  std::vector<LoraAdapterConfig> adapters;
  // sentence-transformers Dense modules after pooling (embedders), in order.
  std::vector<DenseModule> dense;
  // PyLate ColBERT: Dense projections of every token's last hidden state (no bias or Identity
  // activation: pylate.models.Dense), in order; info.late_interaction says how texts are encoded.
  std::vector<DenseModule> token_dense;
  // kSpladeMlm: log1p applications after the max (SentenceTransformersConfig::splade_log1p).
  int splade_log1p = 0;
  // kYesNoLogit: the answer tokens' ids.
  int32_t yes_token = -1;
  int32_t no_token = -1;
};

// Reads DIR and describes the model, or says why it cannot be served (unsupported
// architecture: the message lists what is supported; bad config: file and field).
Result<ModelSpec> DescribeModel(const std::string& dir);

// What can be told of `backend` serving the model before loading it: kUnimplemented naming the
// model, the backend and what it lacks, else Ok. For CUDA that is the pooling mode only; whether
// its kernels run every op of the model is the backend's Supports() (backends/cuda/op_support.h),
// asked while the engine loads and plans the model, before any batch. Engines call this first.
Status CheckBackend(const ModelSpec& spec, BackendKind backend);

// DIR/tokenizer.json, or a static model's: in its StaticEmbedding module's folder; without a
// tokenizer.json, DIR/spiece.model where there is one (SigLIP v1's slow tokenizer; the tokenizer
// library makes its tokenizer.json).
std::string TokenizerPath(const std::string& dir);

}  // namespace orchid
