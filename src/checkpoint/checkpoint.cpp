#include "checkpoint/checkpoint.h"

#include <simdjson.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace orchid {
namespace {

std::string ErrPrefix(const std::string& path) { return "checkpoint index " + path + ": "; }

bool PlainFileName(std::string_view s) {
  return !s.empty() && s != "." && s != ".." && s.find_first_of(std::string_view("/\\\0", 3)) ==
                                                    std::string_view::npos;
}

Result<std::string> ReadIndexFile(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return Status::IoError(ErrPrefix(path) + "cannot read: " + ec.message());
  if (size > Checkpoint::kMaxIndexBytes) {
    return Status::Corrupt(ErrPrefix(path) + "is " + std::to_string(size) +
                           " bytes, over the limit of " +
                           std::to_string(Checkpoint::kMaxIndexBytes));
  }
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return Status::IoError(ErrPrefix(path) + "cannot read");
  return text;
}

}  // namespace

Result<ShardIndex> ParseShardIndex(std::string_view json, const std::string& path) {
  const std::string pre = ErrPrefix(path);
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json.data(), json.size());
  simdjson::dom::element root;
  if (auto err = parser.parse(padded).get(root)) {
    return Status::Corrupt(pre + "not valid JSON: " + simdjson::error_message(err));
  }
  simdjson::dom::object obj;
  if (root.get_object().get(obj)) return Status::Corrupt(pre + "not a JSON object");
  simdjson::dom::element map_el;
  if (obj["weight_map"].get(map_el)) return Status::Corrupt(pre + "no \"weight_map\"");
  simdjson::dom::object map;
  if (map_el.get_object().get(map)) return Status::Corrupt(pre + "\"weight_map\" is not an object");

  ShardIndex out;
  std::unordered_map<std::string, size_t> shard_of_name;
  std::unordered_map<std::string_view, bool> seen;
  for (auto field : map) {
    const std::string_view tensor = field.key;
    std::string_view shard;
    if (field.value.get_string().get(shard)) {
      return Status::Corrupt(pre + "tensor \"" + std::string(tensor) +
                             "\": its shard is not a string");
    }
    if (!PlainFileName(shard)) {
      return Status::Corrupt(pre + "tensor \"" + std::string(tensor) + "\": shard \"" +
                             std::string(shard) + "\" is not a file name in the model directory");
    }
    if (!seen.emplace(tensor, true).second) {
      return Status::Corrupt(pre + "tensor \"" + std::string(tensor) + "\" is listed twice");
    }
    auto [it, added] = shard_of_name.emplace(std::string(shard), out.shards.size());
    if (added) out.shards.emplace_back(shard);
    out.weight_map.emplace_back(std::string(tensor), it->second);
  }
  if (out.weight_map.empty()) return Status::Corrupt(pre + "\"weight_map\" lists no tensor");
  return out;
}

Status Checkpoint::Index(const SafetensorsFile& file) {
  for (const TensorInfo& t : file.tensors()) {
    auto [it, added] = index_.emplace(std::string_view(t.name), std::make_pair(&file, &t));
    if (!added) {
      return Status::Corrupt(ErrPrefix(path_) + "tensor \"" + t.name + "\" is in two shards, " +
                             it->second.first->path() + " and " + file.path());
    }
    tensors_.push_back(&t);
  }
  return Status::Ok();
}

Result<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& dir) {
  std::unique_ptr<Checkpoint> c(new Checkpoint());
  std::error_code ec;
  const std::string single = dir + "/" + kWeightsFile;
  if (std::filesystem::exists(single, ec)) {
    c->path_ = single;
    ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> f, SafetensorsFile::Open(single));
    c->files_.push_back(std::move(f));
    ORCHID_RETURN_IF_ERROR(c->Index(*c->files_.back()));
    return c;
  }
  c->path_ = dir + "/" + kWeightsIndexFile;
  if (!std::filesystem::exists(c->path_, ec)) {
    const std::string bin = dir + "/" + kTorchWeightsFile;
    if (!std::filesystem::exists(bin, ec)) return NoWeightsIn(dir);
    c->path_ = bin;
    ORCHID_ASSIGN_OR_RETURN(c->torch_, TorchCheckpointFile::Open(bin));
    for (const TensorInfo& t : c->torch_->tensors()) {
      c->index_.emplace(std::string_view(t.name), std::make_pair(nullptr, &t));
      c->tensors_.push_back(&t);
    }
    return c;
  }
  ORCHID_ASSIGN_OR_RETURN(const std::string text, ReadIndexFile(c->path_));
  ORCHID_ASSIGN_OR_RETURN(const ShardIndex idx, ParseShardIndex(text, c->path_));
  for (const std::string& shard : idx.shards) {
    auto f = SafetensorsFile::Open(dir + "/" + shard);
    if (!f.ok()) {
      return Status(f.status().code(), ErrPrefix(c->path_) + "shard " + shard + ": " +
                                           f.status().message());
    }
    c->files_.push_back(std::move(*f));
    ORCHID_RETURN_IF_ERROR(c->Index(*c->files_.back()));
  }
  for (const auto& [name, shard] : idx.weight_map) {
    const SafetensorsFile& want = *c->files_[shard];
    auto it = c->index_.find(name);
    if (it == c->index_.end() || it->second.first != &want) {
      return Status::Corrupt(ErrPrefix(c->path_) + "tensor \"" + name + "\" is not in " +
                             want.path() + ", the shard the index names" +
                             (it == c->index_.end() ? "" : " (it is in " +
                                                               it->second.first->path() + ")"));
    }
  }
  return c;
}

const TensorInfo* Checkpoint::Find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second.second;
}

Result<Tensor> Checkpoint::ReadF32(std::string_view name) const {
  auto it = index_.find(name);
  if (it == index_.end()) {
    return Status::NotFound(path_ + ": no tensor named \"" + std::string(name) + "\"");
  }
  if (it->second.first == nullptr) return torch_->ReadF32(name);
  return it->second.first->ReadF32(name);
}

const std::string& Checkpoint::FileOf(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() || it->second.first == nullptr ? path_ : it->second.first->path();
}

}  // namespace orchid
