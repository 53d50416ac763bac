// Checkpoint: a model's weights as transformers saves them in a model directory DIR, either
// one safetensors file (DIR/model.safetensors) or, for big models (e5-mistral-7b,
// gte-Qwen2-7B, Qwen3-Embedding-8B, ...), shards listed by DIR/model.safetensors.index.json:
//
//   {"metadata": {"total_size": N}, "weight_map": {"tensor name": "model-00001-of-00002.safetensors", ...}}
//
// as save_pretrained writes it. model.safetensors wins when both are there, as from_pretrained
// decides. Open() parses the index (ParseShardIndex), opens every shard it names (each one
// validated as SafetensorsFile::Open does) and checks that each listed tensor is in the shard
// the index names. The checkpoint's tensors are every tensor of every shard (from_pretrained
// loads whole shards); a tensor in two shards is refused. Errors are kNotFound (no checkpoint,
// a missing shard) or kCorrupt, naming the file.
//
// Without either, DIR/pytorch_model.bin (one torch.save archive, read by the restricted reader
// of torch_checkpoint.h) is the checkpoint, as transformers falls back to it.
//
// Thread safety: immutable after Open(); any thread may read it.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "checkpoint/safetensors.h"
#include "checkpoint/torch_checkpoint.h"
#include "core/status.h"
#include "core/tensor.h"
#include "description/model_files.h"

namespace orchid {

// A parsed model.safetensors.index.json: the shard file names (in order of first mention) and,
// per listed tensor, the index of its shard.
struct ShardIndex {
  std::vector<std::string> shards;
  std::vector<std::pair<std::string, size_t>> weight_map;
};

// Parses an index file's text; `path` names it in errors. Shard names must be plain file names
// (no '/', '\\' or NUL; not "." or ".."), so that a shard is always inside the model directory.
Result<ShardIndex> ParseShardIndex(std::string_view json, const std::string& path);

class Checkpoint {
 public:
  // Largest index file read (a 7B model's is ~30 KB).
  static constexpr size_t kMaxIndexBytes = 64u << 20;

  // DIR's kWeightsFile, else its kWeightsIndexFile and shards (description/model_files.h).
  static Result<std::unique_ptr<Checkpoint>> Open(const std::string& dir);

  // DIR/model.safetensors, the index file of a sharded checkpoint, or DIR/pytorch_model.bin.
  const std::string& path() const { return path_; }
  // Every tensor, shard after shard, each shard's in its file's order.
  const std::vector<const TensorInfo*>& tensors() const { return tensors_; }
  // nullptr when absent.
  const TensorInfo* Find(std::string_view name) const;
  // The tensor as fp32 (SafetensorsFile::ReadF32 of its shard); kNotFound if absent.
  Result<Tensor> ReadF32(std::string_view name) const;
  // The file that holds `name` (path() when none does), for error messages.
  const std::string& FileOf(std::string_view name) const;

 private:
  Checkpoint() = default;
  Status Index(const SafetensorsFile& file);

  std::string path_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::unique_ptr<TorchCheckpointFile> torch_;  // pytorch_model.bin (then files_ is empty)
  std::vector<const TensorInfo*> tensors_;
  std::unordered_map<std::string_view, std::pair<const SafetensorsFile*, const TensorInfo*>>
      index_;
};

}  // namespace orchid
