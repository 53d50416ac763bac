#include "families/lora_weights.h"

#include <charconv>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "checkpoint/safetensors.h"

namespace orchid {
namespace {

// Which layer a module name is, and where its delta lands.
struct Target {
  enum Kind { kWord, kType, kPooler, kQkv, kO, kFc1, kFc2 } kind = kWord;
  int layer = -1;
  int row_offset = 0;  // in the fused QKV projection
  int rows = 0;        // the B rows the target expects
  int k = 0;           // A's width
};

bool Consume(std::string_view* s, std::string_view prefix) {
  if (s->substr(0, prefix.size()) != prefix) return false;
  s->remove_prefix(prefix.size());
  return true;
}

// The target of `module` (a key without its lora_* suffix), or nullopt.
std::optional<Target> TargetOf(std::string_view module, int layers, int H, int I, int vocab,
                               int types) {
  Consume(&module, "base_model.model.");
  // An outer prefix (roberta., model.) before the body's names.
  for (std::string_view body : {"embeddings.word_embeddings", "embeddings.token_type_embeddings",
                                "pooler.dense", "encoder.layers.", "layers."}) {
    const size_t at = module.find(body);
    if (at != std::string_view::npos && (at == 0 || module[at - 1] == '.')) {
      module.remove_prefix(at);
      break;
    }
  }
  Target t;
  if (module == "embeddings.word_embeddings" || module == "embeddings.token_type_embeddings") {
    t.kind = module == "embeddings.word_embeddings" ? Target::kWord : Target::kType;
    t.rows = H;
    t.k = t.kind == Target::kWord ? vocab : types;
    return t;
  }
  if (module == "pooler.dense") {
    t.kind = Target::kPooler;
    t.rows = t.k = H;
    return t;
  }
  if (!Consume(&module, "encoder.layers.") && !Consume(&module, "layers.")) return std::nullopt;
  const size_t dot = module.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  int layer = -1;
  const auto [end, ec] = std::from_chars(module.data(), module.data() + dot, layer);
  if (ec != std::errc() || end != module.data() + dot || layer < 0 || layer >= layers) {
    return std::nullopt;
  }
  module.remove_prefix(dot + 1);
  t.layer = layer;
  t.k = H;
  t.rows = H;
  if (module == "mixer.Wqkv") {
    t.kind = Target::kQkv;
    t.rows = 3 * H;
  } else if (module == "self_attn.q_proj" || module == "self_attn.k_proj" ||
             module == "self_attn.v_proj") {
    t.kind = Target::kQkv;
    t.row_offset = module[10] == 'q' ? 0 : module[10] == 'k' ? H : 2 * H;
  } else if (module == "mixer.out_proj" || module == "self_attn.o_proj") {
    t.kind = Target::kO;
  } else if (module == "mlp.fc1") {
    t.kind = Target::kFc1;
    t.rows = I;
  } else if (module == "mlp.fc2") {
    t.kind = Target::kFc2;
    t.k = I;
  } else {
    return std::nullopt;
  }
  return t;
}

struct Suffix {
  std::string_view text;
  bool embedding, a;
};
constexpr Suffix kSuffixes[] = {
    {".lora_A.weight", false, true},          {".lora_B.weight", false, false},
    {".lora_embedding_A.weight", true, true}, {".lora_embedding_B.weight", true, false},
    {".lora_embedding_A", true, true},        {".lora_embedding_B", true, false},
};

}  // namespace

Result<LoraWeights> ReadLoraWeights(const std::vector<LoraAdapterConfig>& adapters, int layers,
                                    int hidden, int intermediate, int vocab, int types) {
  LoraWeights out;
  out.layers.resize(size_t(layers));
  for (size_t ai = 0; ai < adapters.size(); ++ai) {
    const LoraAdapterConfig& cfg = adapters[ai];
    const std::string path = cfg.dir + "/adapter_model.safetensors";
    ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file, SafetensorsFile::Open(path));
    // module -> (A, B) tensor names
    std::map<std::string, std::pair<std::string, std::string>> pairs;
    for (const TensorInfo& t : file->tensors()) {
      std::string_view name = t.name;
      bool embedding = false, is_a = false;
      for (const Suffix& s : kSuffixes) {
        if (name.size() > s.text.size() && name.substr(name.size() - s.text.size()) == s.text) {
          name.remove_suffix(s.text.size());
          embedding = s.embedding;
          is_a = s.a;
          break;
        }
      }
      if (name.size() == t.name.size()) {
        return Status::Corrupt(path + ": tensor \"" + t.name +
                               "\" is not a LoRA weight (lora_A / lora_B / lora_embedding_A / "
                               "lora_embedding_B)");
      }
      auto& p = pairs[std::string(name) + (embedding ? "#embedding" : "")];
      (is_a ? p.first : p.second) = t.name;
    }
    for (const auto& [key, names] : pairs) {
      const bool embedding = key.size() > 10 && key.substr(key.size() - 10) == "#embedding";
      const std::string module = embedding ? key.substr(0, key.size() - 10) : key;
      if (names.first.empty() || names.second.empty()) {
        return Status::Corrupt(path + ": " + module + " has only one of its two LoRA matrices");
      }
      std::optional<Target> target = TargetOf(module, layers, hidden, intermediate, vocab, types);
      const bool table = target && (target->kind == Target::kWord || target->kind == Target::kType);
      if (!target || table != embedding) {
        return Status::Unimplemented(
            path + ": the adapter changes " + module +
            ", which orchid does not apply adapters to (the word and token type embeddings and "
            "each layer's query / key / value, output, fc1 and fc2 projections)");
      }
      ORCHID_ASSIGN_OR_RETURN(Tensor a, file->ReadF32(names.first));
      ORCHID_ASSIGN_OR_RETURN(Tensor b, file->ReadF32(names.second));
      // (PEFT's embedding layer: lora_embedding_A [r, vocab], lora_embedding_B [width, r]; the
      // same shapes as a linear layer's with k = the vocabulary.)
      const int64_t r = a.rank() == 2 ? a.dim(0) : -1;
      if (a.rank() != 2 || b.rank() != 2 || a.dim(1) != target->k || b.dim(1) != r ||
          b.dim(0) != target->rows) {
        return Status::Corrupt(path + ": " + module + "'s LoRA matrices do not fit the layer " +
                               "(A must be [r, " + std::to_string(target->k) + "], B [" +
                               std::to_string(target->rows) + ", r])");
      }
      if (r != cfg.rank) {
        return Status::Corrupt(path + ": " + module + " has rank " + std::to_string(r) +
                               " but adapter_config.json says r = " + std::to_string(cfg.rank));
      }
      ops::LoraPart part;
      part.adapter = int(ai) + 1;
      part.row_offset = target->row_offset;
      part.scale = float(cfg.scale());
      out.storage.push_back(std::move(a));
      part.a = &out.storage.back();
      out.storage.push_back(std::move(b));
      part.b = &out.storage.back();
      if (target->kind == Target::kPooler) continue;  // not on the embedding's path
      if (target->kind == Target::kWord || target->kind == Target::kType) {
        (target->kind == Target::kWord ? out.word : out.type).push_back(part);
        continue;
      }
      LoraLayerParts& l = out.layers[size_t(target->layer)];
      switch (target->kind) {
        case Target::kQkv:
          l.qkv.push_back(part);
          break;
        case Target::kO:
          l.o.push_back(part);
          break;
        case Target::kFc1:
          l.fc1.push_back(part);
          break;
        case Target::kFc2:
          l.fc2.push_back(part);
          break;
        case Target::kWord:
        case Target::kType:
        case Target::kPooler:
          break;
      }
    }
  }
  return out;
}

}  // namespace orchid
