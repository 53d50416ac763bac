// The sentence-transformers files of a model directory, read as sentence-transformers reads
// them (2.x to 6.x layouts): modules.json (which modules run after the transformer), the Pooling
// module's config.json, the Normalize and Dense modules, the Transformer module's
// sentence_bert_config.json, config_sentence_transformers.json (prompts, the similarity
// function, a cross-encoder's activation), and where the maximum input length comes from when
// sentence-transformers and transformers files disagree (ResolveMaxInputLength).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "description/model_info.h"

namespace orchid {

// A sentence-transformers Dense module: y = activation(x W^T + b) on the pooled vector, its
// weights in DIR/<path>/model.safetensors ("linear.weight" [out, in], "linear.bias").
struct DenseModule {
  std::string dir;  // DIR/<path>
  int in_features = 0, out_features = 0;
  bool bias = true;
  bool tanh = false;  // activation_function Tanh; otherwise Identity
  // PyTorch state dicts (torch.save) whose "weight" / "bias" rows are stacked into this one
  // layer, each with its rows (BGE-M3's colbert_linear.pt and sparse_linear.pt); empty: the
  // layer is DIR/model.safetensors' linear.weight / linear.bias.
  std::vector<std::pair<std::string, int>> torch_parts;
};

struct SentenceTransformersConfig {
  bool present = false;  // modules.json exists
  Pooling pooling = Pooling::kMean;
  bool normalize = false;
  // The Transformer module's own limit (sentence_bert_config.json or a legacy sibling:
  // tokenizer_args / processor_kwargs model_max_length, else max_seq_length); 0: not given.
  int max_seq_length = 0;
  std::string max_seq_length_source;  // the file and field it came from
  // sentence_bert_config.json do_lower_case: texts lowercased before tokenization.
  bool do_lower_case = false;
  int word_embedding_dimension = 0;  // from the pooling config; 0: not given
  // Pooling's include_prompt: false leaves a prompt's tokens out of pooling (INSTRUCTOR-style
  // models); the gateway counts them and the engine skips them.
  bool include_prompt = true;
  std::vector<DenseModule> dense;    // after pooling, in order, before Normalize
  // PyLate (ColBERT): Dense modules right after the transformer, without pooling, applied to
  // every token (pylate.models.Dense.Dense); in order.
  std::vector<DenseModule> token_dense;
  // SpladePooling (sparse encoders): max pooling of log(1 + relu(x)), log1p applied this many
  // times (activation_function "relu": 1, "log1p_relu": 2); 0: no SpladePooling.
  int splade_log1p = 0;
  // A CLIPModel module (sentence-transformers' dual encoder, text and images) in place of
  // Transformer + Pooling.
  bool clip_module = false;
};

// Reads DIR's sentence-transformers files. Absent files give the defaults above (mean pooling,
// no normalisation). Modules we cannot run (several pooling modes at once, a Dense with another
// activation or without safetensors weights, ...) are errors naming the file and field, rather
// than silently different embeddings.
Result<SentenceTransformersConfig> ReadSentenceTransformersConfig(const std::string& dir);

// The longest input a model takes, and where that number comes from (a file and field, for
// /info and the start-up log).
struct MaxInputLength {
  int tokens = 0;
  std::string source;
};

// sentence-transformers' rule for the truncation length (6.3's Transformer module; 3.x-5.x
// agree), then orchid's engine limit:
//  1. with modules.json, the Transformer module's own limit (st.max_seq_length), as given;
//  2. else tokenizer_config.json's model_max_length (transformers reads an absent one as 1e30),
//     capped at config.json's max_position_embeddings (config_max_positions; <= 0: none);
//  3. above 1e20 transformers does not truncate at all: the model's positions are the limit;
//  4. the result is capped at usable_positions, the positions orchid's engine can embed.
// A malformed tokenizer_config.json is an error naming it.
Result<MaxInputLength> ResolveMaxInputLength(const std::string& dir,
                                             const SentenceTransformersConfig& st,
                                             int config_max_positions, int usable_positions);

// How a cross-encoder's logit becomes its default score, as sentence-transformers' CrossEncoder
// decides (6.3; older releases wrote the places further down): config_sentence_transformers.json
// "activation_fn", else config.json "sentence_transformers": {"activation_fn"} (4.x, 5.x), else
// config.json "sbert_ce_default_activation_function" (2.x, 3.x), else sigmoid for one label and
// identity for several. Only torch's Sigmoid and Identity are supported (an error otherwise).
Result<ScoreActivation> ReadCrossEncoderActivation(const std::string& dir, int num_labels);

// How sentence-transformers compares two embeddings (config_sentence_transformers.json
// similarity_fn_name; SentenceTransformer.similarity): cosine, dot product, and the negated
// euclidean and manhattan distances.
enum class SimilarityFunction : uint8_t { kCosine, kDot, kEuclidean, kManhattan };
const char* SimilarityName(SimilarityFunction f);
// The similarity of two vectors of n floats, in double.
double Similarity(SimilarityFunction f, const float* a, const float* b, int n);

// What config_sentence_transformers.json says about encoding and comparing texts: named prompts
// ("prompts": {name: text}, "default_prompt_name"), prepended to a text before tokenization as
// sentence-transformers' encode(prompt_name=...) does, and the similarity function.
struct EncodeConfig {
  std::map<std::string, std::string> prompts;
  std::string default_prompt_name;  // empty: none
  SimilarityFunction similarity = SimilarityFunction::kCosine;
};

// PyLate's ColBERT settings in config_sentence_transformers.json (query_prefix, document_prefix,
// query_length, document_length, do_query_expansion, attend_to_expansion_tokens,
// skiplist_words), with PyLate's defaults for absent fields; enabled when the file says
// similarity_fn_name "MaxSim" or model_type "ColBERT".
Result<LateInteraction> ReadLateInteractionConfig(const std::string& dir);

// Stanford ColBERT's HF_ColBERT layout, as PyLate reads it: artifact.metadata's query_token_id /
// doc_token_id (the prefix tokens, default [unused0] / [unused1]), query_maxlen, doc_maxlen,
// attend_to_mask_tokens and dim (default 128); PyLate's defaults for the rest (expansion on,
// punctuation skiplist). Enabled; a missing file gives the defaults.
Result<LateInteraction> ReadStanfordColbertConfig(const std::string& dir);

// Absent file or fields → no prompts, cosine similarity (sentence-transformers' default; 2.x
// wrote no similarity_fn_name, and 6.3 keeps cosine for a name it does not know). A
// default_prompt_name that names no prompt is an error.
Result<EncodeConfig> ReadEncodeConfig(const std::string& dir);

}  // namespace orchid
