// The sentence-transformers files of a model directory: modules.json (which modules run after
// the transformer), the Pooling module's config.json, the Normalize module, and
// sentence_bert_config.json (max_seq_length).
#pragma once

#include <map>
#include <string>

#include "core/status.h"
#include "description/model_info.h"

namespace orchid {

struct SentenceTransformersConfig {
  bool present = false;  // modules.json exists
  Pooling pooling = Pooling::kMean;
  bool normalize = false;
  int max_seq_length = 0;            // 0: not given
  int word_embedding_dimension = 0;  // from the pooling config; 0: not given
};

// Reads DIR's sentence-transformers files. Absent files give the defaults above (mean pooling,
// no normalisation). Modules we cannot run (Dense, max pooling, several pooling modes at once,
// ...) are errors naming the file and field, rather than silently different embeddings.
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
