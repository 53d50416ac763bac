// Shared by the fuzz targets: finding the real tokenizers they load once, and loading them.
// Paths come from the compile definition ORCHID_SOURCE_DIR (the repo; the tokenizers are laid
// out under tests/data by scripts/fetch-test-data.sh), overridable at run time with the
// environment variable of the same name.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer.h"

namespace orchid::fuzz {

inline std::string DirFromEnv(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}
inline std::string SourcePath(const std::string& rel) {
  return DirFromEnv("ORCHID_SOURCE_DIR", ORCHID_SOURCE_DIR) + "/" + rel;
}

// A fuzzer without its tokenizer would fuzz nothing: failing to load is fatal.
inline std::unique_ptr<Tokenizer> LoadOrDie(const std::string& path) {
  auto t = Tokenizer::FromFile(path);
  if (!t.ok()) {
    std::fprintf(stderr, "fuzz: cannot load %s: %s\n", path.c_str(), t.status().ToString().c_str());
    std::abort();
  }
  return std::move(t).value();
}

// Encodes TEXT with and without special tokens and with truncation from both sides, checking
// what must hold for any input: parallel vectors of one length, ids in the vocabulary, offsets
// inside the text, the same result when encoded twice.
// CHECK_IDS: ids inside [0, vocab_size) (a fuzzed tokenizer.json's template may name any id).
inline void EncodeAndCheck(const Tokenizer& tok, std::string_view text, Encoding* enc,
                           bool check_ids = true) {
  const EncodeOptions variants[] = {
      {},
      {.add_special_tokens = false},
      {.add_special_tokens = true, .max_length = 8, .side = TruncationSide::kLeft},
  };
  for (const EncodeOptions& opt : variants) {
    enc->clear();
    Status st = tok.Encode(text, opt, enc);
    if (!st.ok()) continue;
    if (enc->ids.size() != enc->type_ids.size() || enc->ids.size() != enc->offsets.size())
      std::abort();
    if (opt.max_length != 0 && enc->ids.size() > opt.max_length &&
        opt.max_length >= tok.num_special_tokens()) {
      std::abort();
    }
    for (size_t i = 0; i < enc->ids.size(); ++i) {
      if (check_ids && (enc->ids[i] < 0 || enc->ids[i] >= tok.vocab_size())) std::abort();
      auto [b, e] = enc->offsets[i];
      if (b > e || e > text.size()) std::abort();
    }
  }
  // Deterministic: a second encode (now served partly from the models' per-thread word caches)
  // gives the same tokens.
  Encoding first, again;
  if (tok.Encode(text, {}, &first).ok()) {
    if (!tok.Encode(text, {}, &again).ok() || first.ids != again.ids ||
        first.offsets != again.offsets) {
      std::abort();
    }
  }
}

}  // namespace orchid::fuzz
