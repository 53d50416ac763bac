#include "description/deberta_config.h"

#include <fmt/format.h>

#include <string_view>

#include "description/json_file.h"

namespace orchid {
namespace {

// pos_att_type: a list (["p2c", "c2p"]) or, in older configs, a "p2c|c2p" string.
Status ReadPosAttType(const JsonFile& f, DebertaConfig* c) {
  simdjson::dom::element v;
  if (f.root()["pos_att_type"].get(v) || v.is_null()) return Status::Ok();
  std::vector<std::string_view> kinds;
  simdjson::dom::array list;
  std::string_view text;
  if (!v.get_array().get(list)) {
    for (simdjson::dom::element e : list) {
      std::string_view k;
      if (e.get_string().get(k)) return f.FieldError("pos_att_type", "must hold strings");
      kinds.push_back(k);
    }
  } else if (!v.get_string().get(text)) {
    while (!text.empty()) {
      const size_t bar = text.find('|');
      kinds.push_back(text.substr(0, bar));
      text = bar == std::string_view::npos ? std::string_view() : text.substr(bar + 1);
    }
  } else {
    return f.FieldError("pos_att_type", "must be a list of strings or a \"|\"-separated string");
  }
  for (std::string_view k : kinds) {
    while (!k.empty() && k.front() == ' ') k.remove_prefix(1);
    while (!k.empty() && k.back() == ' ') k.remove_suffix(1);
    if (k == "c2p") {
      c->c2p = true;
    } else if (k == "p2c") {
      c->p2c = true;
    } else if (!k.empty()) {
      return f.FieldError("pos_att_type",
                          fmt::format("has \"{}\"; only \"c2p\" and \"p2c\" are supported", k));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<DebertaConfig> ReadDebertaConfig(const std::string& path) {
  ORCHID_ASSIGN_OR_RETURN(JsonFile f, JsonFile::Read(path));
  DebertaConfig c;
  ORCHID_RETURN_IF_ERROR(f.Size("vocab_size", 1 << 24, &c.vocab_size));
  ORCHID_RETURN_IF_ERROR(f.Size("hidden_size", 1 << 16, &c.hidden_size));
  ORCHID_RETURN_IF_ERROR(f.Size("num_hidden_layers", 1024, &c.num_hidden_layers));
  ORCHID_RETURN_IF_ERROR(f.Size("num_attention_heads", 1024, &c.num_attention_heads));
  ORCHID_RETURN_IF_ERROR(f.Size("intermediate_size", 1 << 18, &c.intermediate_size));
  ORCHID_RETURN_IF_ERROR(f.Size("max_position_embeddings", 1 << 20, &c.max_position_embeddings));
  if (c.hidden_size % c.num_attention_heads != 0) {
    return f.FieldError("num_attention_heads", fmt::format("({}) does not divide hidden_size ({})",
                                                           c.num_attention_heads, c.hidden_size));
  }
  ORCHID_ASSIGN_OR_RETURN(int64_t head_size, f.Int("attention_head_size", c.head_dim()));
  if (head_size != c.head_dim()) {
    return f.FieldError("attention_head_size", "must be hidden_size / num_attention_heads");
  }
  ORCHID_ASSIGN_OR_RETURN(int64_t embedding_size, f.Int("embedding_size", c.hidden_size));
  if (embedding_size != c.hidden_size) {
    return f.FieldError("embedding_size",
                        "differs from hidden_size; embedding projections are "
                        "not supported");
  }
  ORCHID_ASSIGN_OR_RETURN(int64_t conv, f.Int("conv_kernel_size", 0));
  if (conv != 0) {
    return f.FieldError("conv_kernel_size",
                        "is set; DeBERTa's convolution layer is not "
                        "supported");
  }
  for (const char* field : {"hidden_act", "pooler_hidden_act"}) {
    ORCHID_ASSIGN_OR_RETURN(std::string act, f.String(field, "gelu"));
    if (act != "gelu") {
      return f.FieldError(field, fmt::format("is \"{}\"; only \"gelu\" is supported", act));
    }
  }
  ORCHID_ASSIGN_OR_RETURN(int64_t pooler, f.Int("pooler_hidden_size", c.hidden_size));
  if (pooler != c.hidden_size) {
    return f.FieldError("pooler_hidden_size", "must equal hidden_size");
  }
  ORCHID_ASSIGN_OR_RETURN(double eps, f.Number("layer_norm_eps", 1e-7));
  if (!(eps > 0 && eps < 1)) return f.FieldError("layer_norm_eps", "must be in (0, 1)");
  c.layer_norm_eps = float(eps);
  ORCHID_ASSIGN_OR_RETURN(int64_t types, f.Int("type_vocab_size", 0));
  if (types < 0 || types > (1 << 16)) return f.FieldError("type_vocab_size", "is out of range");
  c.type_vocab_size = int(types);
  ORCHID_ASSIGN_OR_RETURN(c.position_biased_input, f.Bool("position_biased_input", true));
  ORCHID_ASSIGN_OR_RETURN(c.relative_attention, f.Bool("relative_attention", false));
  ORCHID_ASSIGN_OR_RETURN(c.share_att_key, f.Bool("share_att_key", false));
  ORCHID_RETURN_IF_ERROR(ReadPosAttType(f, &c));
  if (!c.relative_attention) c.c2p = c.p2c = false;
  ORCHID_ASSIGN_OR_RETURN(std::string norm_rel, f.String("norm_rel_ebd", "none"));
  c.norm_rel_embeddings = norm_rel.find("layer_norm") != std::string::npos;
  ORCHID_ASSIGN_OR_RETURN(int64_t buckets, f.Int("position_buckets", -1));
  ORCHID_ASSIGN_OR_RETURN(int64_t max_rel, f.Int("max_relative_positions", -1));
  if (buckets > (1 << 16) || max_rel > (1 << 20)) {
    return f.FieldError("position_buckets", "or max_relative_positions is out of range");
  }
  c.position_buckets = int(buckets);
  c.max_relative_positions = max_rel < 1 ? c.max_position_embeddings : int(max_rel);
  if (c.position_buckets > 0 && c.position_buckets < 4) {
    return f.FieldError("position_buckets", "must be at least 4");
  }
  if (c.position_buckets > 0 && c.max_relative_positions <= c.position_buckets / 2 + 1) {
    return f.FieldError("max_relative_positions", "must exceed position_buckets / 2 + 1");
  }
  ORCHID_ASSIGN_OR_RETURN(int64_t pad, f.Int("pad_token_id", 0));
  if (pad < 0 || pad >= c.vocab_size) {
    return f.FieldError("pad_token_id", "is out of the vocabulary");
  }
  c.pad_token_id = int(pad);
  ORCHID_RETURN_IF_ERROR(ReadClassifierLabels(f, &c.num_labels, &c.labels, &c.multi_label));
  return c;
}

}  // namespace orchid
