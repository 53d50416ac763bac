// BPE tokenizers (byte-level Qwen3 / GPT-2 style, byte-fallback Gemma3 style, unk fusion, a
// PCRE2 split regex) against reference ids of Hugging Face `tokenizers`
// (tests/fixtures/tokenizer/models_reference.jsonl, written by make_model_reference.py).
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "model_reference.h"
#include "tokenizer/tokenizer.h"

namespace orchid {
namespace {

using testing::GetModelReference;
using testing::LoadReferenceTokenizer;

TEST(BpeTest, MatchesReferenceIds) {
  const size_t compared = testing::ExpectReferenceIds("BPE");
  EXPECT_GT(compared, 1000u);  // the four tiny tokenizers at least
}

TEST(BpeTest, ConcurrentEncodesAgree) {
  for (const testing::ReferenceTokenizer& t : GetModelReference().tokenizers) {
    if (t.name != "tiny-byte-level-bpe") continue;
    std::unique_ptr<Tokenizer> tok = LoadReferenceTokenizer(t);
    ASSERT_NE(tok, nullptr);
    std::vector<std::thread> threads;
    std::vector<size_t> mismatches(4, 0);
    for (size_t k = 0; k < 4; ++k) {
      threads.emplace_back([&, k] {
        Encoding enc;
        for (int round = 0; round < 3; ++round) {
          for (const testing::ReferenceEncode& e : t.encodes) {
            EncodeOptions opt;
            opt.add_special_tokens = e.add_special_tokens;
            if (!tok->Encode(e.text, opt, &enc).ok() || enc.ids != e.ids) ++mismatches[k];
          }
        }
      });
    }
    for (std::thread& th : threads) th.join();
    for (size_t m : mismatches) EXPECT_EQ(m, 0u);
  }
}

TEST(BpeTest, RejectsBadModels) {
  const char* bad_merge = R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}})";
  auto r = Tokenizer::FromJson(bad_merge, "bad.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("\"ab\" is not in the vocab"), std::string::npos) << r.status().ToString();

  const char* dropout = R"({"model": {"type": "BPE", "dropout": 0.1, "vocab": {}, "merges": []}})";
  EXPECT_FALSE(Tokenizer::FromJson(dropout).ok());

  const char* bad_regex = R"({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(unclosed"},
      "behavior": "Isolated", "invert": false}, "model": {"type": "BPE", "vocab": {}, "merges": []}})";
  r = Tokenizer::FromJson(bad_regex, "regex.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not compile"), std::string::npos) << r.status().ToString();
}

TEST(BpeTest, MergesAsStringsAndPairsAgree) {
  const char* strings = R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "abb": 3},
      "merges": ["a b", "ab b"]}})";
  const char* pairs = R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "abb": 3},
      "merges": [["a", "b"], ["ab", "b"]]}})";
  for (const char* json : {strings, pairs}) {
    auto tok = Tokenizer::FromJson(json);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    Encoding enc;
    ASSERT_TRUE((*tok)->Encode("abbab", {}, &enc).ok());
    EXPECT_EQ(enc.ids, (std::vector<int32_t>{3, 2}));
  }
}

}  // namespace
}  // namespace orchid
