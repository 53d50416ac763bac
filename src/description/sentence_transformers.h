// The sentence-transformers files of a model directory: modules.json (which modules run after
// the transformer), the Pooling module's config.json, the Normalize module, and
// sentence_bert_config.json (max_seq_length).
#pragma once

#include <map>
#include <string>
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
};

struct SentenceTransformersConfig {
  bool present = false;  // modules.json exists
  Pooling pooling = Pooling::kMean;
  bool normalize = false;
  int max_seq_length = 0;            // 0: not given
  int word_embedding_dimension = 0;  // from the pooling config; 0: not given
  // Pooling's include_prompt: false leaves a prompt's tokens out of pooling (INSTRUCTOR-style
  // models); the gateway counts them and the engine skips them.
  bool include_prompt = true;
  std::vector<DenseModule> dense;    // after pooling, in order, before Normalize
  // SpladePooling (sparse encoders): max pooling of log(1 + relu(x)), log1p applied this many
  // times (activation_function "relu": 1, "log1p_relu": 2); 0: no SpladePooling.
  int splade_log1p = 0;
};

// Reads DIR's sentence-transformers files. Absent files give the defaults above (mean pooling,
// no normalisation). Modules we cannot run (several pooling modes at once, a Dense with another
// activation or without safetensors weights, ...) are errors naming the file and field, rather
// than silently different embeddings.
Result<SentenceTransformersConfig> ReadSentenceTransformersConfig(const std::string& dir);

// Named prompts from config_sentence_transformers.json ("prompts": {name: text},
// "default_prompt_name"), prepended to a text before tokenization, as sentence-transformers'
// encode(prompt_name=...) does.
struct PromptConfig {
  std::map<std::string, std::string> prompts;
  std::string default_prompt_name;  // empty: none
};

// Absent file or fields → no prompts. A default_prompt_name that names no prompt is an error.
Result<PromptConfig> ReadPromptConfig(const std::string& dir);

}  // namespace orchid
