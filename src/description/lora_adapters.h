// Task adapters: LoRA adapters in a model directory's subfolders, one per task, as
// jinaai/jina-embeddings-v3-hf ships them for transformers + PEFT:
//
//   DIR/config.json, DIR/model.safetensors           the base model
//   DIR/retrieval_query/adapter_config.json          PEFT's LoraConfig (peft_type "LORA")
//   DIR/retrieval_query/adapter_model.safetensors    lora_A / lora_B per targeted module
//   DIR/retrieval_passage/...  DIR/separation/...  DIR/classification/...  DIR/text_matching/...
//
// which the reference loads with model.load_adapter(DIR, adapter_name=T,
// adapter_kwargs={"subfolder": T}) and model.set_adapter(T). Requests name a task as Jina's API
// does ("retrieval.query", "retrieval.passage", "separation", "classification",
// "text-matching"); the folder's own name is accepted too. Every subfolder holding an
// adapter_config.json is an adapter.
//
// Only what the engine computes exactly is accepted: plain LoRA (no DoRA, no bias, no
// per-module rank or alpha patterns, no modules_to_save, not fan_in_fan_out); anything else is
// refused at start-up naming the file and the field.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace orchid {

struct LoraAdapterConfig {
  std::string task;                         // the name requests use ("retrieval.query")
  std::string folder;                       // the subfolder ("retrieval_query")
  std::string dir;                          // DIR/folder
  int rank = 0;                             // r
  double alpha = 0;                         // lora_alpha
  bool rslora = false;                      // use_rslora: alpha / sqrt(r) instead of alpha / r
  std::vector<std::string> target_modules;  // as adapter_config.json lists them (informational)

  // PEFT's scaling of B A.
  double scale() const;
};

// The task name of an adapter folder: Jina's API names for jina-embeddings-v3-hf's folders
// (retrieval_query -> retrieval.query, retrieval_passage -> retrieval.passage, text_matching ->
// text-matching), the folder's name otherwise.
std::string TaskOfAdapterFolder(std::string_view folder);

// Reads one adapter_config.json (PATH), for the adapter in FOLDER.
Result<LoraAdapterConfig> ReadLoraAdapterConfig(const std::string& path, const std::string& folder);

// Every adapter of DIR (none: empty), Jina's task order first (retrieval.query,
// retrieval.passage, separation, classification, text-matching), then by name. An adapter
// folder without adapter_model.safetensors is an error naming it.
Result<std::vector<LoraAdapterConfig>> ReadLoraAdapters(const std::string& dir);

}  // namespace orchid
