// What a served model is, as the engine, the worker and the gateway all see it: its task,
// widths, pooling, pair format and native quantization. Plain data, no kernels: the gateway
// includes this without linking any backend. The registry (registry.h) fills it in from
// config.json and the sentence-transformers modules.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace orchid {

enum class Pooling : uint8_t {
  kNone = 0,   // no pooling: (reserved for per-token output)
  kMean,       // mean over the sequence's tokens
  kCls,        // first token
  kLastToken,  // last token of the sequence
  // sentence-transformers' other Pooling modes:
  kMax,           // per dimension, the largest value over the sequence's tokens
  kMeanSqrtLen,   // the sum over the tokens / sqrt(number of tokens)
  kWeightedMean,  // tokens weighted by their position 1..n: sum(i h_i) / sum(i)
};

const char* PoolingName(Pooling p);

// What a model's output rows are.
enum class ModelTask : uint8_t {
  kEmbed,  // one pooled (optionally normalised) vector of hidden_size values per sequence
  kScore,  // rerankers / cross-encoders: the family's head maps the pooled vector to
           // num_labels logits
};

// How a scorer's logit becomes the relevance score the APIs return when raw scores are not
// asked for (sentence-transformers' CrossEncoder default for one label: sigmoid).
enum class ScoreActivation : uint8_t { kSigmoid, kIdentity };

// How a scorer's (query, document) pair becomes one input sequence.
enum class PairFormat : uint8_t {
  kTokenizerPair,      // the tokenizer's pair template with token types (BERT / XLM-R
                       // cross-encoders: [CLS] q [SEP] d [SEP])
  kQwen3RerankerChat,  // Qwen3-Reranker's chat template around <Instruct>, <Query>, <Document>,
                       // one single sequence; the model's head gives logit(yes) - logit(no)
};

// Output encodings a model asks for natively (pplx-embed: int8 = round(tanh(x) * 127)).
enum class NativeQuantization : uint8_t { kNone, kTanhInt8 };

// PyLate / ColBERT late interaction (config_sentence_transformers.json of a model whose Dense
// projection runs on every token): each text becomes one normalised vector per token, and a
// query scores a document by MaxSim. The prefixes are tokens inserted after the first token
// ("" none); queries are padded with the tokenizer's mask token to query_length (expansion),
// which the other tokens do not attend to unless attend_to_expansion_tokens; documents drop
// the tokens that skiplist_words name (convert_tokens_to_ids: an unknown word names [UNK]).
struct LateInteraction {
  bool enabled = false;
  std::string query_prefix = "[Q] ", document_prefix = "[D] ";
  int query_length = 32, document_length = 180;
  bool do_query_expansion = true;
  bool attend_to_expansion_tokens = false;
  std::vector<std::string> skiplist_words;
  int dim = 0;  // Stanford ColBERT's artifact.metadata "dim" (the projection's width); 0: not given

  bool operator==(const LateInteraction&) const = default;
};

// A dual encoder's vision tower (CLIP, SigLIP at a fixed resolution): what one image becomes in
// a batch. Each image is one sequence of tokens() tokens: CLIP's class token (token id 1,
// position 0) then the patches (token id 0) in row-major order, position by position; SigLIP has
// no class token. Each token carries a pixel row of patch_dim() values (RaggedBatch::pixels).
struct ImageInput {
  int image_size = 0;  // 0: the model has no vision tower
  int patch_size = 0;
  bool class_token = false;
  bool enabled() const { return image_size > 0; }
  int patches_per_side() const { return patch_size > 0 ? image_size / patch_size : 0; }
  int tokens() const { return patches_per_side() * patches_per_side() + (class_token ? 1 : 0); }
  int patch_dim() const { return 3 * patch_size * patch_size; }
  bool operator==(const ImageInput&) const = default;
};

// How a dual encoder's text tower wants its token ids (the gateway applies it after the
// tokenizer): CLIP pools where its text ends (the first end-of-text token, or with the legacy
// eos_token_id 2 the first occurrence of the largest id, as transformers' CLIPTextTransformer
// does) and attends causally, so the tokens after that point change nothing and are dropped;
// SigLIP was trained on texts padded to 64 tokens and pools the last position, so every text is
// padded with pad_id to pad_to tokens (the model card's padding="max_length"), whatever batch it
// is in.
struct TextInput {
  enum class End : uint8_t { kAsTokenized, kFirstEos, kFirstMaxId };
  End end = End::kAsTokenized;
  int32_t eos_id = -1;  // kFirstEos
  int pad_to = 0;       // > 0: pad (and truncate) to this many tokens
  int32_t pad_id = 0;
  bool operator==(const TextInput&) const = default;
};

struct ModelInfo {
  std::string architecture;  // e.g. "BertModel", "XLMRobertaModel", "Qwen3Model"
  int32_t vocab_size = 0;
  // Token types the model embeds (BERT: 2). 1 for models without them: type ids must be 0.
  int type_vocab_size = 1;
  int hidden_size = 0;  // width of the transformer and of the pooled vector
  // Embedders with sentence-transformers Dense modules: the width of the last one's output (the
  // embedding); 0: hidden_size.
  int embedding_dim = 0;
  // Positions a sequence may use (0 .. max_position_embeddings - 1), after any offset the
  // family adds (XLM-R numbers positions from padding_idx + 1).
  int max_position_embeddings = 0;
  int max_seq_length = 0;  // the longest input the model accepts (sentence-transformers)
  // Where max_seq_length comes from: the file and field, or the flag that capped it (/info and
  // the start-up log say it; ResolveMaxInputLength's rules).
  std::string max_seq_length_source;
  Pooling default_pooling = Pooling::kMean;
  bool default_normalize = false;  // sentence-transformers' 2_Normalize module present
  bool causal = false;             // decoder attention (each token sees only earlier ones)
  ModelTask task = ModelTask::kEmbed;
  int num_labels = 0;  // scorers: logits per sequence (1 for rerankers)
  // Scorers: each logit's name (config.json's id2label; empty: LABEL_0, LABEL_1, ...), and
  // whether the labels are independent (problem_type multi_label_classification: a sigmoid per
  // label in /predict) rather than exclusive classes (a softmax over them).
  std::vector<std::string> labels;
  bool multi_label = false;
  ScoreActivation score_activation = ScoreActivation::kSigmoid;
  PairFormat pair_format = PairFormat::kTokenizerPair;
  NativeQuantization native_quantization = NativeQuantization::kNone;
  // SPLADE (sentence-transformers' SpladePooling over a masked-LM head): each output row is
  // vocab_size sparse term weights, max over the tokens of log(1 + relu(MLM logit)); served by
  // /embed_sparse, refused by the dense embedding routes.
  bool sparse = false;
  // sentence-transformers' Pooling include_prompt: false leaves a prompt's tokens out of pooling
  // (the gateway counts them: EmbedRequest::pool_skip).
  bool include_prompt = true;
  LateInteraction late_interaction;
  // BGE-M3 (FlagEmbedding's BGEM3FlagModel; gateway/bge_m3.h): the pooled row is the dense
  // vector (CLS, normalised), and the per-token projection gives each token
  // [colbert_linear(h) (hidden_size values) | sparse_linear(h) (one logit)], so one pass serves
  // dense, lexical (sparse) and multi-vector (ColBERT) output. Per-token passes keep the pooled
  // row too (Embeddings::pooled).
  bool bge_m3 = false;
  // Late interaction: the width of each token's vector (the projection's out_features); 0 for
  // other models, whose per-token output is the last hidden state.
  int token_embedding_dim = 0;

  // Task adapters (jina-embeddings-v3's LoRA adapters), by the task names requests use
  // ("retrieval.query", ...); RaggedBatch::adapters and EmbedRequest::adapter number them from
  // 1. Empty: the model has none (a request naming a task is refused).
  std::vector<std::string> tasks;
  // The Matryoshka widths config.json allows (`matryoshka_dimensions`); empty: any width up to
  // output_dim(). A request's `dimensions` outside a non-empty list is refused, as vLLM
  // refuses it.
  std::vector<int> matryoshka_dimensions;

  // How the engine multiplies the transformer's linear layers: "float32", "bfloat16" or "int8"
  // (empty: not told, from older workers).
  std::string dtype;
  // --dtype int8: the start-up fidelity check (runtime/cpu_engine.h), the cosine between the
  // int8 and the float32 outputs of the same model over built-in texts. samples 0: not measured.
  struct Fidelity {
    int samples = 0;
    double mean_cosine = 0.0;
    double min_cosine = 0.0;
    // Where the numbers come from, for the log: measured at this start (and where they were
    // kept for the next), or read back from a kept check (runtime/int8_cache.h).
    std::string source;
  };
  Fidelity fidelity;

  // What the engine chose to run its ops on, where a choice was made at load time and why
  // (the CUDA engine: "attention" -> "cudnn fused SDPA ... cuDNN 9.19.0 ..." or "own kernel
  // (pipelined) ...; cuDNN not loaded: ..."), in order, for /info ("engine") and the start-up
  // log. Empty from the CPU engine and from older workers.
  struct EngineFact {
    std::string name, value;
  };
  std::vector<EngineFact> engine_facts;

  // Dual encoders (CLIP, SigLIP): the vision tower's input (image.enabled()) and the text
  // tower's rules. Text and images embed into the same output_dim() space.
  ImageInput image;
  TextInput text;

  // Width of the rows the engine returns: hidden_size for embedders, num_labels for scorers.
  int output_dim() const {
    return task == ModelTask::kScore ? num_labels
                                     : (embedding_dim > 0 ? embedding_dim : hidden_size);
  }
  // Width of per-token output rows (/embed_all, late interaction).
  int token_dim() const { return token_embedding_dim > 0 ? token_embedding_dim : hidden_size; }
  // Label i's name: labels[i], or transformers' default "LABEL_<i>".
  std::string label(int i) const {
    return size_t(i) < labels.size() ? labels[size_t(i)] : "LABEL_" + std::to_string(i);
  }
};

}  // namespace orchid
