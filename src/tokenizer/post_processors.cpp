#include "tokenizer/post_processors.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace orchid::tok {
namespace {

// Single and pair templates: special tokens (each possibly several ids) around the sequences.
class TemplatePostProcessor final : public PostProcessor {
 public:
  struct Piece {
    int8_t sequence = -1;      // -1: special token; 0: sequence A; 1: sequence B
    std::vector<int32_t> ids;  // special token ids (empty for a sequence)
    int32_t type_id = 0;
  };
  struct Templates {
    std::vector<Piece> single;
    // Empty: no pair template. Without special tokens the sequences keep their template type
    // ids (as `tokenizers` does for every processor: RoBERTa's B stays 0).
    std::vector<Piece> pair;
    OffsetTrim trim;
  };
  explicit TemplatePostProcessor(Templates t) : t_(std::move(t)) {
    for (const Piece& p : t_.single) num_special_ += p.ids.size();
    for (const Piece& p : t_.pair) num_special_pair_ += p.ids.size();
  }

  OffsetTrim offset_trim() const override { return t_.trim; }
  size_t num_special_tokens() const override { return num_special_; }
  size_t num_special_tokens_pair() const override { return num_special_pair_; }

  void Process(const TokenSequence& seq, bool add_special_tokens, Encoding* out) const override {
    for (const Piece& p : t_.single) {
      if (p.sequence >= 0) {
        Append(seq, p.type_id, out);
      } else if (add_special_tokens) {
        AppendSpecial(p, out);
      }
    }
  }

  bool ProcessPair(const TokenSequence& a, const TokenSequence& b, bool add_special_tokens,
                   Encoding* out) const override {
    if (t_.pair.empty()) return false;
    for (const Piece& p : t_.pair) {
      if (p.sequence >= 0) {
        Append(p.sequence == 0 ? a : b, p.type_id, out);
      } else if (add_special_tokens) {
        AppendSpecial(p, out);
      }
    }
    return true;
  }

 private:
  static void Append(const TokenSequence& seq, int32_t type_id, Encoding* out) {
    out->ids.insert(out->ids.end(), seq.ids.begin(), seq.ids.end());
    out->type_ids.insert(out->type_ids.end(), seq.ids.size(), type_id);
    out->offsets.insert(out->offsets.end(), seq.offsets.begin(), seq.offsets.end());
    out->special_tokens_mask.insert(out->special_tokens_mask.end(), seq.ids.size(), 0);
  }
  static void AppendSpecial(const Piece& p, Encoding* out) {
    out->ids.insert(out->ids.end(), p.ids.begin(), p.ids.end());
    out->type_ids.insert(out->type_ids.end(), p.ids.size(), p.type_id);
    out->offsets.insert(out->offsets.end(), p.ids.size(), {0u, 0u});
    out->special_tokens_mask.insert(out->special_tokens_mask.end(), p.ids.size(), 1);
  }

  Templates t_;
  size_t num_special_ = 0;
  size_t num_special_pair_ = 0;
};

using Piece = TemplatePostProcessor::Piece;
using Templates = TemplatePostProcessor::Templates;

// One template list ("single" or "pair") of a TemplateProcessing.
Status ParseTemplateList(JsonObject o, std::string_view key, bool pair, const std::string& where,
                         std::vector<Piece>* out) {
  // "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [101], "tokens": ["[CLS]"]}, ...}
  JsonObject specials;
  const bool has_specials = o["special_tokens"].get(specials) == simdjson::SUCCESS;
  simdjson::dom::array list;
  if (o[key].get(list) != simdjson::SUCCESS) {
    return JsonError(where, StrCat({"\"", key, "\" must be an array of template pieces"}));
  }
  bool has_a = false;
  for (JsonElement item : list) {
    JsonObject piece;
    if (item.get(piece) != simdjson::SUCCESS) return JsonError(where, "bad template piece");
    JsonObject body;
    Piece p;
    uint64_t type_id = 0;
    if (piece["Sequence"].get(body) == simdjson::SUCCESS) {
      std::string_view id;
      ORCHID_RETURN_IF_ERROR(ReadString(body, "id", where, &id, true));
      if (id == "A") {
        p.sequence = 0;
        has_a = true;
      } else if (id == "B" && pair) {
        p.sequence = 1;
      } else {
        return JsonError(where, StrCat({"the ", key, " template may not use sequence ", id}));
      }
    } else if (piece["SpecialToken"].get(body) == simdjson::SUCCESS) {
      std::string_view id;
      ORCHID_RETURN_IF_ERROR(ReadString(body, "id", where, &id, true));
      JsonObject special;
      simdjson::dom::array ids;
      if (!has_specials || specials[id].get(special) != simdjson::SUCCESS ||
          special["ids"].get(ids) != simdjson::SUCCESS) {
        return JsonError(where, StrCat({"special token \"", id, "\" is not in \"special_tokens\""}));
      }
      for (JsonElement v : ids) {
        uint64_t tid = 0;
        if (v.get(tid) != simdjson::SUCCESS || tid > 0x7FFFFFFF) {
          return JsonError(where, StrCat({"bad id for special token \"", id, "\""}));
        }
        p.ids.push_back(static_cast<int32_t>(tid));
      }
    } else {
      return JsonError(where, "template piece must be Sequence or SpecialToken");
    }
    ORCHID_RETURN_IF_ERROR(ReadUint(body, "type_id", where, &type_id, false));
    p.type_id = static_cast<int32_t>(type_id);
    out->push_back(std::move(p));
  }
  if (!has_a) return JsonError(where, StrCat({"the ", key, " template has no Sequence A piece"}));
  return Status::Ok();
}

Status ParseTemplate(JsonObject o, const std::string& where, Templates* out) {
  ORCHID_RETURN_IF_ERROR(ParseTemplateList(o, "single", false, where, &out->single));
  simdjson::dom::element pair;
  if (o["pair"].get(pair) == simdjson::SUCCESS && !pair.is_null()) {
    ORCHID_RETURN_IF_ERROR(ParseTemplateList(o, "pair", true, where, &out->pair));
  }
  return Status::Ok();
}

// BertProcessing: {"sep": ["[SEP]", 102], "cls": ["[CLS]", 101]} → [CLS] A [SEP].
Status ParseBertSpecial(JsonObject o, std::string_view key, const std::string& where,
                        Piece* out) {
  simdjson::dom::array pair;
  uint64_t id = 0;
  if (o[key].get(pair) != simdjson::SUCCESS || pair.size() != 2 ||
      pair.at(1).get(id) != simdjson::SUCCESS || id > 0x7FFFFFFF) {
    return JsonError(where, StrCat({"\"", key, "\" must be [token, id]"}));
  }
  out->ids = {static_cast<int32_t>(id)};
  return Status::Ok();
}

// The templates of one post-processor JSON object.
Status ParseTemplates(JsonElement json, std::string_view where, Templates* t) {
  ORCHID_ASSIGN_OR_RETURN(std::string_view type, ComponentType(json, where));
  const std::string ctx = StrCat({where, " (", type, ")"});
  JsonObject o = json.get_object().value_unsafe();
  *t = Templates();
  Piece a, b;
  a.sequence = 0;
  b.sequence = 1;
  b.type_id = 1;
  if (type == "TemplateProcessing") return ParseTemplate(o, ctx, t);
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    Piece cls, sep;
    ORCHID_RETURN_IF_ERROR(ParseBertSpecial(o, "cls", ctx, &cls));
    ORCHID_RETURN_IF_ERROR(ParseBertSpecial(o, "sep", ctx, &sep));
    t->single = {cls, a, sep};
    if (type == "BertProcessing") {
      Piece sep1 = sep;
      sep1.type_id = 1;
      t->pair = {cls, a, sep, b, sep1};  // type ids 0 … 0 1 … 1
    } else {
      // trim_offsets / add_prefix_space change offsets only (both default to true).
      t->trim.enabled = true;
      t->trim.add_prefix_space = true;
      ORCHID_RETURN_IF_ERROR(ReadBool(o, "trim_offsets", ctx, &t->trim.enabled));
      ORCHID_RETURN_IF_ERROR(ReadBool(o, "add_prefix_space", ctx, &t->trim.add_prefix_space));
      Piece b0 = b;
      b0.type_id = 0;
      t->pair = {cls, a, sep, sep, b0, sep};  // RoBERTa: type ids all 0
    }
    return Status::Ok();
  }
  if (type == "ByteLevel") {  // trim_offsets changes offsets only; no tokens are added
    t->single = {a};
    t->pair = {a, b};
    t->trim.enabled = true;
    t->trim.add_prefix_space = true;
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "trim_offsets", ctx, &t->trim.enabled));
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "add_prefix_space", ctx, &t->trim.add_prefix_space));
    return Status::Ok();
  }
  if (type == "Sequence") {
    simdjson::dom::array items;
    if (o["processors"].get(items) != simdjson::SUCCESS) {
      return JsonError(ctx, "\"processors\" must be an array");
    }
    // Each processor wraps the previous one's output; only one may add tokens here.
    t->single = {a};
    t->pair = {a, b};
    bool have_specials = false;
    OffsetTrim trim;  // a trimming step (ByteLevel) trims whatever else the sequence does
    size_t k = 0;
    for (JsonElement item : items) {
      Templates inner;
      ORCHID_RETURN_IF_ERROR(ParseTemplates(item, StrCat({ctx, "[", std::to_string(k++), "]"}), &inner));
      if (inner.trim.enabled) trim = inner.trim;
      t->trim = trim;
      if (inner.single.size() == 1 && inner.pair.size() == 2) continue;
      if (have_specials) {
        return JsonError(ctx, "more than one processor adding special tokens is not supported");
      }
      have_specials = true;
      *t = std::move(inner);
      t->trim = trim;
    }
    return Status::Ok();
  }
  return UnsupportedType(where, "post-processor", type);
}

}  // namespace

Result<std::unique_ptr<PostProcessor>> MakePostProcessor(JsonElement json, std::string_view where) {
  if (json.is_null()) return std::unique_ptr<PostProcessor>();
  Templates t;
  ORCHID_RETURN_IF_ERROR(ParseTemplates(json, where, &t));
  return std::unique_ptr<PostProcessor>(std::make_unique<TemplatePostProcessor>(std::move(t)));
}

}  // namespace orchid::tok
