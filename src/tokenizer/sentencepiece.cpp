#include "tokenizer/sentencepiece.h"

#include <simdjson.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace orchid {
namespace {

// A protobuf message's fields, one at a time (wire format: varint keys; varint, 64-bit,
// length-delimited and 32-bit values).
class WireReader {
 public:
  WireReader(std::string_view bytes, const std::string& where) : in_(bytes), where_(where) {}

  bool done() const { return pos_ >= in_.size(); }

  // The next field's number and wire type; false at the end or on a malformed key.
  Status Next(uint32_t* field, uint32_t* wire) {
    uint64_t key = 0;
    ORCHID_RETURN_IF_ERROR(Varint(&key));
    *field = uint32_t(key >> 3);
    *wire = uint32_t(key & 7);
    if (*field == 0) return Corrupt("a field numbered 0");
    return Status::Ok();
  }
  Status Varint(uint64_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= in_.size()) return Corrupt("a truncated varint");
      const uint8_t b = uint8_t(in_[pos_++]);
      v |= uint64_t(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        *out = v;
        return Status::Ok();
      }
    }
    return Corrupt("a varint longer than 10 bytes");
  }
  Status Bytes(std::string_view* out) {
    uint64_t n = 0;
    ORCHID_RETURN_IF_ERROR(Varint(&n));
    if (n > in_.size() - pos_) return Corrupt("a length past the end");
    *out = in_.substr(pos_, size_t(n));
    pos_ += size_t(n);
    return Status::Ok();
  }
  Status Fixed32(uint32_t* out) {
    if (in_.size() - pos_ < 4) return Corrupt("a truncated 32-bit value");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(in_[pos_ + size_t(i)])) << (8 * i);
    pos_ += 4;
    *out = v;
    return Status::Ok();
  }
  Status Skip(uint32_t wire) {
    uint64_t v = 0;
    std::string_view s;
    uint32_t f = 0;
    switch (wire) {
      case 0:
        return Varint(&v);
      case 1:
        if (in_.size() - pos_ < 8) return Corrupt("a truncated 64-bit value");
        pos_ += 8;
        return Status::Ok();
      case 2:
        return Bytes(&s);
      case 5:
        return Fixed32(&f);
      default:
        return Corrupt("wire type " + std::to_string(wire));
    }
  }
  Status Corrupt(const std::string& what) const {
    return Status::Corrupt(where_ + ": not a SentencePiece model (" + what + " at byte " +
                           std::to_string(pos_) + ")");
  }

 private:
  std::string_view in_;
  size_t pos_ = 0;
  const std::string& where_;
};

Status Expect(WireReader& r, uint32_t wire, uint32_t want, uint32_t field) {
  if (wire == want) return Status::Ok();
  return r.Corrupt("field " + std::to_string(field) + " of wire type " + std::to_string(wire));
}

Status ReadPiece(std::string_view bytes, const std::string& where, SentencePieceModel::Piece* p) {
  WireReader r(bytes, where);
  bool has_piece = false;
  while (!r.done()) {
    uint32_t field = 0, wire = 0;
    ORCHID_RETURN_IF_ERROR(r.Next(&field, &wire));
    if (field == 1) {
      ORCHID_RETURN_IF_ERROR(Expect(r, wire, 2, field));
      std::string_view s;
      ORCHID_RETURN_IF_ERROR(r.Bytes(&s));
      p->piece.assign(s);
      has_piece = true;
    } else if (field == 2) {
      ORCHID_RETURN_IF_ERROR(Expect(r, wire, 5, field));
      uint32_t bits = 0;
      ORCHID_RETURN_IF_ERROR(r.Fixed32(&bits));
      std::memcpy(&p->score, &bits, sizeof(float));
    } else if (field == 3) {
      ORCHID_RETURN_IF_ERROR(Expect(r, wire, 0, field));
      uint64_t t = 0;
      ORCHID_RETURN_IF_ERROR(r.Varint(&t));
      if (t < 1 || t > 6) return r.Corrupt("piece type " + std::to_string(t));
      p->type = SentencePieceModel::PieceType(int(t));
    } else {
      ORCHID_RETURN_IF_ERROR(r.Skip(wire));
    }
  }
  if (!has_piece) return r.Corrupt("a piece without its text");
  return Status::Ok();
}

Status ReadTrainerSpec(std::string_view bytes, const std::string& where, SentencePieceModel* m) {
  WireReader r(bytes, where);
  while (!r.done()) {
    uint32_t field = 0, wire = 0;
    ORCHID_RETURN_IF_ERROR(r.Next(&field, &wire));
    uint64_t v = 0;
    // sentencepiece_model.proto's TrainerSpec: model_type 3, split_by_whitespace 22,
    // treat_whitespace_as_suffix 24, byte_fallback 35, unk_id 40.
    if (wire == 0 && (field == 3 || field == 22 || field == 24 || field == 35 || field == 40)) {
      ORCHID_RETURN_IF_ERROR(r.Varint(&v));
      if (field == 3) m->model_type = int(v);
      if (field == 22) m->split_by_whitespace = v != 0;
      if (field == 24) m->treat_whitespace_as_suffix = v != 0;
      if (field == 35) m->byte_fallback = v != 0;
      if (field == 40) m->unk_id = int(int32_t(uint32_t(v)));
    } else {
      ORCHID_RETURN_IF_ERROR(r.Skip(wire));
    }
  }
  return Status::Ok();
}

Status ReadNormalizerSpec(std::string_view bytes, const std::string& where, SentencePieceModel* m) {
  WireReader r(bytes, where);
  while (!r.done()) {
    uint32_t field = 0, wire = 0;
    ORCHID_RETURN_IF_ERROR(r.Next(&field, &wire));
    std::string_view s;
    uint64_t v = 0;
    if (field == 1 || field == 2) {
      ORCHID_RETURN_IF_ERROR(Expect(r, wire, 2, field));
      ORCHID_RETURN_IF_ERROR(r.Bytes(&s));
      (field == 1 ? m->normalizer_name : m->precompiled_charsmap).assign(s);
    } else if (wire == 0 && field >= 3 && field <= 5) {
      ORCHID_RETURN_IF_ERROR(r.Varint(&v));
      (field == 3   ? m->add_dummy_prefix
       : field == 4 ? m->remove_extra_whitespaces
                    : m->escape_whitespaces) = v != 0;
    } else {
      ORCHID_RETURN_IF_ERROR(r.Skip(wire));
    }
  }
  return Status::Ok();
}

void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (u < 0x20) {
      static const char* kHex = "0123456789abcdef";
      out->append("\\u00");
      out->push_back(kHex[u >> 4]);
      out->push_back(kHex[u & 15]);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

std::string Base64(std::string_view in) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    const uint32_t v = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8 |
                       uint32_t(uint8_t(in[i + 2]));
    for (int k = 18; k >= 0; k -= 6) out.push_back(kAlphabet[(v >> k) & 63]);
  }
  if (i < in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size()) v |= uint32_t(uint8_t(in[i + 1])) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

// Python's str.isspace() characters (what canonicalize_text's \s+ and str.strip() see), as a
// regex character class of literal UTF-8 characters.
constexpr const char* kPythonWhitespace =
    "[\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \xc2\x85\xc2\xa0\xe1\x9a\x80\xe2\x80\x80-\xe2\x80\x8a"
    "\xe2\x80\xa8\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\x9f\xe3\x80\x80]+";

}  // namespace

Result<SentencePieceModel> ReadSentencePieceModel(std::string_view bytes,
                                                  const std::string& origin) {
  SentencePieceModel m;
  WireReader r(bytes, origin);
  while (!r.done()) {
    uint32_t field = 0, wire = 0;
    ORCHID_RETURN_IF_ERROR(r.Next(&field, &wire));
    if (field >= 1 && field <= 3) {
      ORCHID_RETURN_IF_ERROR(Expect(r, wire, 2, field));
      std::string_view s;
      ORCHID_RETURN_IF_ERROR(r.Bytes(&s));
      if (field == 1) {
        if (m.pieces.size() >= (size_t(1) << 22)) return r.Corrupt("more than 4M pieces");
        ORCHID_RETURN_IF_ERROR(ReadPiece(s, origin, &m.pieces.emplace_back()));
      } else if (field == 2) {
        ORCHID_RETURN_IF_ERROR(ReadTrainerSpec(s, origin, &m));
      } else {
        ORCHID_RETURN_IF_ERROR(ReadNormalizerSpec(s, origin, &m));
      }
    } else {
      ORCHID_RETURN_IF_ERROR(r.Skip(wire));
    }
  }
  if (m.pieces.empty()) return r.Corrupt("no pieces");
  if (m.unk_id < 0 || size_t(m.unk_id) >= m.pieces.size() ||
      m.pieces[size_t(m.unk_id)].type != SentencePieceModel::PieceType::kUnknown) {
    return Status::Corrupt(origin + ": the unknown piece (unk_id " + std::to_string(m.unk_id) +
                           ") is not an unknown-type piece");
  }
  return m;
}

Result<std::string> SiglipTokenizerJson(const SentencePieceModel& m,
                                        const SiglipTokenizerSettings& s,
                                        const std::string& origin) {
  auto refuse = [&origin](const std::string& what) {
    return Status::Unimplemented(origin + ": " + what +
                                 "; orchid reads SigLIP's unigram SentencePiece models");
  };
  if (m.model_type != 1) return refuse("model type " + std::to_string(m.model_type) + " (BPE?)");
  if (m.byte_fallback) return refuse("byte fallback");
  if (!m.split_by_whitespace || m.treat_whitespace_as_suffix) {
    return refuse("no whitespace splitting, or whitespace as a suffix");
  }
  if (!m.escape_whitespaces) return refuse("unescaped whitespace");
  // Each special token (they may coincide: SigLIP's pad is its eos) and its id.
  std::vector<std::pair<std::string, int>> specials;
  for (const std::string* t : {&s.eos_token, &s.unk_token, &s.pad_token}) {
    int id = -1;
    for (size_t i = 0; i < m.pieces.size(); ++i) {
      if (m.pieces[i].piece == *t) id = int(i);
    }
    if (id < 0) return Status::Corrupt(origin + ": the special token \"" + *t + "\" is no piece");
    bool seen = false;
    for (const auto& [token, known] : specials) seen = seen || token == *t;
    if (!seen) specials.emplace_back(*t, id);
  }
  int eos_id = 0;
  for (const auto& [token, id] : specials) {
    if (token == s.eos_token) eos_id = id;
  }
  std::string j = R"({"version":"1.0","truncation":null,"padding":null,"added_tokens":[)";
  for (size_t i = 0; i < specials.size(); ++i) {
    if (i) j += ",";
    j += R"({"id":)" + std::to_string(specials[i].second) + R"(,"content":)";
    AppendJsonString(&j, specials[i].first);
    j += R"(,"single_word":false,"lstrip":true,"rstrip":true,"normalized":false,"special":true})";
  }
  j += R"(],"normalizer":{"type":"Sequence","normalizers":[)";
  // SiglipTokenizer.tokenize: the text's own "▁" are spaces (the "▁" it puts before the text
  // comes last here, where SentencePiece would have kept it: before a non-empty text).
  j += R"({"type":"Replace","pattern":{"String":"▁"},"content":" "},)";
  if (s.do_lower_case) j += R"({"type":"Lowercase"},)";
  // canonicalize_text: string.punctuation removed, whitespace runs made one space, stripped.
  j += R"({"type":"Replace","pattern":{"Regex":"[!-/:-@\\[-`{-~]"},"content":""},)";
  j += R"({"type":"Replace","pattern":{"Regex":)";
  AppendJsonString(&j, kPythonWhitespace);
  j += R"(},"content":" "},{"type":"Strip","strip_left":true,"strip_right":true})";
  // SentencePiece's normalizer.
  if (!m.precompiled_charsmap.empty()) {
    j += R"(,{"type":"Precompiled","precompiled_charsmap":")" + Base64(m.precompiled_charsmap) +
         "\"}";
  } else if (m.normalizer_name != "identity") {
    return refuse("normalizer \"" + m.normalizer_name + "\" without a precompiled map");
  }
  if (m.remove_extra_whitespaces) {
    j += R"(,{"type":"Replace","pattern":{"Regex":" {2,}"},"content":" "})";
    j += R"(,{"type":"Strip","strip_left":true,"strip_right":true})";
  }
  j += R"(,{"type":"Prepend","prepend":"▁"}]},)";
  j +=
      R"("pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"never","split":true},)";
  j += R"("model":{"type":"Unigram","unk_id":)" + std::to_string(m.unk_id) + R"(,"vocab":[)";
  for (size_t i = 0; i < m.pieces.size(); ++i) {
    const SentencePieceModel::Piece& p = m.pieces[i];
    if (i) j += ",";
    j += "[";
    // SentencePiece never matches a control or unused piece in text (the special ones match
    // as added tokens above): such a piece keeps its id under a name no text normalizes to.
    const bool matchable = p.type == SentencePieceModel::PieceType::kNormal ||
                           p.type == SentencePieceModel::PieceType::kUserDefined ||
                           p.type == SentencePieceModel::PieceType::kUnknown;
    AppendJsonString(&j, matchable ? p.piece : "\x01" + p.piece);
    char score[32];
    std::snprintf(score, sizeof(score), "%.9g", double(p.score));
    j += std::string(",") + score + "]";
  }
  j += R"(],"byte_fallback":false},)";
  j +=
      R"("post_processor":{"type":"TemplateProcessing","single":[{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":)";
  AppendJsonString(&j, s.eos_token);
  j += R"(,"type_id":0}}],"pair":[{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":)";
  AppendJsonString(&j, s.eos_token);
  j += R"(,"type_id":0}},{"Sequence":{"id":"B","type_id":0}},{"SpecialToken":{"id":)";
  AppendJsonString(&j, s.eos_token);
  j += R"(,"type_id":0}}],"special_tokens":{)";
  AppendJsonString(&j, s.eos_token);
  j += R"(:{"id":)";
  AppendJsonString(&j, s.eos_token);
  j += R"(,"ids":[)" + std::to_string(eos_id) + R"(],"tokens":[)";
  AppendJsonString(&j, s.eos_token);
  j +=
      R"(]}}},"decoder":{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true}})";
  return j;
}

Result<std::string> SentencePieceFileTokenizerJson(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError(path + ": cannot read");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string config_path =
      (std::filesystem::path(path).parent_path() / "tokenizer_config.json").string();
  simdjson::dom::parser parser;
  simdjson::dom::element config;
  if (parser.load(config_path).get(config) != simdjson::SUCCESS ||
      config.type() != simdjson::dom::element_type::OBJECT) {
    return Status::InvalidArgument(path +
                                   ": a SentencePiece model needs the tokenizer_config.json "
                                   "beside it (which tokenizer class reads it)");
  }
  std::string_view cls;
  if (config["tokenizer_class"].get_string().get(cls) != simdjson::SUCCESS ||
      cls != "SiglipTokenizer") {
    return Status::Unimplemented(
        path +
        ": orchid reads a spiece.model only for SigLIP (tokenizer_class SiglipTokenizer, "
        "not \"" +
        std::string(cls) +
        "\"); save the model's fast tokenizer "
        "(tokenizer.json) with transformers instead");
  }
  SiglipTokenizerSettings settings;
  bool lower = true;
  if (config["do_lower_case"].get_bool().get(lower) == simdjson::SUCCESS) {
    settings.do_lower_case = lower;
  }
  auto token = [&](const char* field, std::string* out) -> Status {
    simdjson::dom::element e;
    if (config[field].get(e) != simdjson::SUCCESS || e.is_null()) return Status::Ok();
    std::string_view v;
    if (e.get_string().get(v) != simdjson::SUCCESS &&
        e["content"].get_string().get(v) != simdjson::SUCCESS) {
      return Status::Corrupt(config_path + ": " + field + " is not a token");
    }
    out->assign(v);
    return Status::Ok();
  };
  ORCHID_RETURN_IF_ERROR(token("eos_token", &settings.eos_token));
  ORCHID_RETURN_IF_ERROR(token("unk_token", &settings.unk_token));
  ORCHID_RETURN_IF_ERROR(token("pad_token", &settings.pad_token));
  ORCHID_ASSIGN_OR_RETURN(SentencePieceModel model, ReadSentencePieceModel(bytes, path));
  return SiglipTokenizerJson(model, settings, path);
}

}  // namespace orchid
