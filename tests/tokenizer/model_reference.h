// Loads tests/fixtures/tokenizer/models_reference.jsonl (written by make_model_reference.py):
// reference outputs of Hugging Face `tokenizers` for the BPE / Unigram / Split unit tests.
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace orchid::testing {

struct ReferenceEncode {
  std::string text;
  bool add_special_tokens;
  std::vector<int32_t> ids;
};

struct ReferenceTokenizer {
  std::string name;
  std::string type;  // "BPE", "Unigram"
  std::string json;  // inline tokenizer.json, or
  std::string file;  // a path in the repo ("" when inline)
  std::vector<ReferenceEncode> encodes;
};

struct ReferenceSplit {
  std::string pre_tokenizer_json;
  std::string text;
  std::vector<std::pair<uint32_t, uint32_t>> expected;
  std::vector<std::string> pieces;
};

struct ModelReference {
  std::vector<ReferenceTokenizer> tokenizers;
  std::vector<ReferenceSplit> splits;
};

inline const ModelReference& GetModelReference() {
  static const ModelReference* ref = [] {
    auto* r = new ModelReference;
    const std::string path =
        std::string(ORCHID_SOURCE_DIR) + "/tests/fixtures/tokenizer/models_reference.jsonl";
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << "cannot read " << path;
    std::map<std::string, size_t> by_name;
    simdjson::dom::parser parser;
    std::string line;
    while (std::getline(in, line)) {
      simdjson::dom::element rec;
      if (parser.parse(line).get(rec) != simdjson::SUCCESS) {
        ADD_FAILURE() << "bad line in " << path;
        continue;
      }
      const std::string_view kind = rec["kind"].get_string().value();
      if (kind == "tokenizer") {
        ReferenceTokenizer t;
        t.name = std::string(rec["name"].get_string().value());
        t.type = std::string(rec["type"].get_string().value());
        std::string_view s;
        if (rec["json"].get(s) == simdjson::SUCCESS) t.json = std::string(s);
        if (rec["file"].get(s) == simdjson::SUCCESS) {
          const std::string rel(s);
          t.file = std::string(ORCHID_SOURCE_DIR) + "/" + rel;
        }
        by_name[t.name] = r->tokenizers.size();
        r->tokenizers.push_back(std::move(t));
      } else if (kind == "encode") {
        ReferenceEncode e;
        e.text = std::string(rec["text"].get_string().value());
        e.add_special_tokens = rec["add_special_tokens"].get_bool().value();
        const simdjson::dom::array ids = rec["ids"].get_array().value();
        for (simdjson::dom::element v : ids) {
          e.ids.push_back(static_cast<int32_t>(v.get_int64().value()));
        }
        r->tokenizers[by_name.at(std::string(rec["tokenizer"].get_string().value()))].encodes.push_back(std::move(e));
      } else if (kind == "split") {
        ReferenceSplit s;
        s.pre_tokenizer_json = simdjson::minify(rec["pre_tokenizer"]);
        s.text = std::string(rec["text"].get_string().value());
        const simdjson::dom::array expected = rec["expected"].get_array().value();
        for (simdjson::dom::element o : expected) {
          const simdjson::dom::array pair = o.get_array().value();
          s.expected.emplace_back(static_cast<uint32_t>(pair.at(0).get_int64().value()),
                                  static_cast<uint32_t>(pair.at(1).get_int64().value()));
        }
        const simdjson::dom::array pieces = rec["pieces"].get_array().value();
        for (simdjson::dom::element p : pieces) {
          s.pieces.emplace_back(p.get_string().value());
        }
        r->splits.push_back(std::move(s));
      }
    }
    return r;
  }();
  return *ref;
}

// Loads a reference tokenizer; nullptr (and a failure) when it cannot be loaded: a file that is
// absent fails the test rather than skipping it (scripts/fetch-test-data.sh lays the files out).
inline std::unique_ptr<Tokenizer> LoadReferenceTokenizer(const ReferenceTokenizer& t) {
  if (!t.file.empty()) {
    if (!std::ifstream(t.file).good()) {
      ADD_FAILURE() << t.name << ": " << t.file << " not found (run scripts/fetch-test-data.sh)";
      return nullptr;
    }
    auto r = Tokenizer::FromFile(t.file);
    EXPECT_TRUE(r.ok()) << t.name << ": " << r.status().ToString();
    return r.ok() ? std::move(r).value() : nullptr;
  }
  auto r = Tokenizer::FromJson(t.json, t.name);
  EXPECT_TRUE(r.ok()) << t.name << ": " << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

inline std::string Ids(const std::vector<int32_t>& v) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size() && i < 32; ++i) os << (i ? "," : "") << v[i];
  if (v.size() > 32) os << ",...(" << v.size() << ")";
  return os.str();
}

// Encodes every reference text of every tokenizer of `type`; returns how many were compared.
inline size_t ExpectReferenceIds(const std::string& type) {
  size_t compared = 0;
  for (const ReferenceTokenizer& t : GetModelReference().tokenizers) {
    if (t.type != type) continue;
    std::unique_ptr<Tokenizer> tok = LoadReferenceTokenizer(t);
    if (!tok) continue;
    Encoding enc;
    size_t mismatches = 0;
    for (const ReferenceEncode& e : t.encodes) {
      EncodeOptions opt;
      opt.add_special_tokens = e.add_special_tokens;
      const Status st = tok->Encode(e.text, opt, &enc);
      EXPECT_TRUE(st.ok()) << t.name << ": " << st.ToString();
      ++compared;
      if (enc.ids != e.ids && ++mismatches <= 5) {
        ADD_FAILURE() << t.name << " (special tokens " << e.add_special_tokens << ") text \""
                      << e.text.substr(0, 80) << "\"\n  orchid    " << Ids(enc.ids)
                      << "\n  reference " << Ids(e.ids);
      }
    }
    EXPECT_EQ(mismatches, 0u) << t.name;
  }
  return compared;
}

}  // namespace orchid::testing
