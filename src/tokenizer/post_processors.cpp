#include "tokenizer/post_processors.h"

#include <string>
#include <utility>
#include <vector>

namespace orchid::tok {
namespace {

// A single-sequence template: special tokens (each possibly several ids) around the sequence.
class TemplatePostProcessor final : public PostProcessor {
 public:
  struct Piece {
    bool is_sequence = false;
    std::vector<int32_t> ids;  // special token ids (empty for the sequence)
    int32_t type_id = 0;
  };
  explicit TemplatePostProcessor(std::vector<Piece> single) : single_(std::move(single)) {
    for (const Piece& p : single_) num_special_ += p.ids.size();
  }

  size_t num_special_tokens() const override { return num_special_; }

  void Process(const TokenSequence& seq, bool add_special_tokens, Encoding* out) const override {
    for (const Piece& p : single_) {
      if (p.is_sequence) {
        out->ids.insert(out->ids.end(), seq.ids.begin(), seq.ids.end());
        out->type_ids.insert(out->type_ids.end(), seq.ids.size(), p.type_id);
        out->offsets.insert(out->offsets.end(), seq.offsets.begin(), seq.offsets.end());
      } else if (add_special_tokens) {
        out->ids.insert(out->ids.end(), p.ids.begin(), p.ids.end());
        out->type_ids.insert(out->type_ids.end(), p.ids.size(), p.type_id);
        out->offsets.insert(out->offsets.end(), p.ids.size(), {0u, 0u});
      }
    }
  }

 private:
  std::vector<Piece> single_;
  size_t num_special_ = 0;
};

using Piece = TemplatePostProcessor::Piece;

Status ParseTemplate(JsonObject o, const std::string& where, std::vector<Piece>* out) {
  // "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [101], "tokens": ["[CLS]"]}, ...}
  JsonObject specials;
  const bool has_specials = o["special_tokens"].get(specials) == simdjson::SUCCESS;
  simdjson::dom::array single;
  if (o["single"].get(single) != simdjson::SUCCESS) {
    return JsonError(where, "\"single\" must be an array of template pieces");
  }
  bool has_sequence = false;
  for (JsonElement item : single) {
    JsonObject piece;
    if (item.get(piece) != simdjson::SUCCESS) return JsonError(where, "bad template piece");
    JsonObject body;
    Piece p;
    uint64_t type_id = 0;
    if (piece["Sequence"].get(body) == simdjson::SUCCESS) {
      std::string_view id;
      ORCHID_RETURN_IF_ERROR(ReadString(body, "id", where, &id, true));
      if (id != "A") {
        return JsonError(where, StrCat({"the single template may only use sequence A, not ", id}));
      }
      p.is_sequence = true;
      has_sequence = true;
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
  if (!has_sequence) return JsonError(where, "the single template has no Sequence piece");
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

// The single-sequence template of one post-processor JSON object.
Status ParseSingle(JsonElement json, std::string_view where, std::vector<Piece>* single) {
  ORCHID_ASSIGN_OR_RETURN(std::string_view type, ComponentType(json, where));
  const std::string ctx = StrCat({where, " (", type, ")"});
  JsonObject o = json.get_object().value_unsafe();
  single->clear();
  Piece seq;
  seq.is_sequence = true;
  if (type == "TemplateProcessing") return ParseTemplate(o, ctx, single);
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    // RobertaProcessing's trim_offsets / add_prefix_space change offsets only.
    Piece cls, sep;
    ORCHID_RETURN_IF_ERROR(ParseBertSpecial(o, "cls", ctx, &cls));
    ORCHID_RETURN_IF_ERROR(ParseBertSpecial(o, "sep", ctx, &sep));
    *single = {cls, seq, sep};
    return Status::Ok();
  }
  if (type == "ByteLevel") {  // trim_offsets changes offsets only; no tokens are added
    *single = {seq};
    return Status::Ok();
  }
  if (type == "Sequence") {
    simdjson::dom::array items;
    if (o["processors"].get(items) != simdjson::SUCCESS) {
      return JsonError(ctx, "\"processors\" must be an array");
    }
    // Each processor wraps the previous one's output; only one may add tokens here.
    *single = {seq};
    size_t k = 0;
    for (JsonElement item : items) {
      std::vector<Piece> inner;
      ORCHID_RETURN_IF_ERROR(ParseSingle(item, StrCat({ctx, "[", std::to_string(k++), "]"}), &inner));
      if (inner.size() == 1) continue;
      if (single->size() != 1) {
        return JsonError(ctx, "more than one processor adding special tokens is not supported");
      }
      *single = std::move(inner);
    }
    return Status::Ok();
  }
  return UnsupportedType(where, "post-processor", type);
}

}  // namespace

Result<std::unique_ptr<PostProcessor>> MakePostProcessor(JsonElement json, std::string_view where) {
  if (json.is_null()) return std::unique_ptr<PostProcessor>();
  std::vector<Piece> single;
  ORCHID_RETURN_IF_ERROR(ParseSingle(json, where, &single));
  return std::unique_ptr<PostProcessor>(std::make_unique<TemplatePostProcessor>(std::move(single)));
}

}  // namespace orchid::tok
