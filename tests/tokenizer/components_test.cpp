// StripAccents, added tokens' single_word, ByteLevel trim_offsets and special_tokens_mask on
// tiny tokenizers. Expected values are those of Hugging Face `tokenizers` 0.23.3 on the same
// tokenizer.json (live comparisons on real tokenizers, every code point included:
// tests/e2e/test_tokenizer_components.py; the Whitespace / Punctuation / Digits splits are in
// pre_tokenizers_test.cpp).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <utility>
#include <vector>

#include "tokenizer/components.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/tokenizer.h"

namespace orchid {
namespace {

using Offsets = std::vector<std::pair<uint32_t, uint32_t>>;

std::string Normalize(const std::string& normalizer_json, const std::string& text) {
  simdjson::dom::parser parser;
  simdjson::dom::element json;
  EXPECT_EQ(parser.parse(normalizer_json).get(json), simdjson::SUCCESS);
  auto n = tok::MakeNormalizer(json, "test");
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  tok::NormalizedText out;
  (*n)->NormalizeRaw(text, 0, &out);
  EXPECT_EQ(out.begin.size(), out.text.size());
  return out.text;
}

TEST(StripAccentsTest, RemovesEveryCombiningMarkWithoutDecomposing) {
  // Mn (U+0301), Me (U+20DD) and Mc (U+0903) go; é and ñ stay (precomposed: StripAccents does
  // not decompose), and so does U+0897, a mark only since Unicode 16, which the reference's
  // tables predate.
  EXPECT_EQ(Normalize(R"({"type":"StripAccents"})",
                      "H\u00e9llo e\u0301 \u00f1 a\u20dd\u0903b \u0897x"),
            "H\u00e9llo e \u00f1 ab \u0897x");
  EXPECT_EQ(Normalize(R"({"type":"Sequence","normalizers":[{"type":"NFKD"},{"type":"StripAccents"}]})",
                      "H\u00e9llo \u01c5 \ufb01 \u00f1"),
            "Hello Dz fi n");
}

// TokenizerOptions::lowercase (sentence-transformers' do_lower_case): a Lowercase step before
// the file's own normalizer, or alone when it has none; offsets still point into the raw text.
TEST(LowercaseOptionTest, LowercasesBeforeTheFilesNormalizer) {
  for (const char* normalizer : {"null", R"({"type":"NFC"})"}) {
    SCOPED_TRACE(normalizer);
    const std::string json =
        std::string(R"({"version":"1.0","truncation":null,"padding":null,"added_tokens":[],)") +
        R"("normalizer":)" + normalizer +
        R"(,"pre_tokenizer":{"type":"WhitespaceSplit"},"post_processor":null,"decoder":null,)"
        R"("model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##",)"
        R"("max_input_chars_per_word":100,"vocab":{"[UNK]":0,"hello":1,"Hello":2,"wörld":3}}})";
    auto cased = Tokenizer::FromJson(json);
    auto lower = Tokenizer::FromJson(json, "tokenizer.json", TokenizerOptions{true});
    ASSERT_TRUE(cased.ok() && lower.ok());
    Encoding enc;
    ASSERT_TRUE((*cased)->Encode("Hello WÖRLD", {}, &enc).ok());
    EXPECT_EQ(enc.ids, (std::vector<int32_t>{2, 0}));
    ASSERT_TRUE((*lower)->Encode("Hello WÖRLD", {}, &enc).ok());
    EXPECT_EQ(enc.ids, (std::vector<int32_t>{1, 3}));
    ASSERT_EQ(enc.offsets.size(), 2u);
    EXPECT_EQ(enc.offsets[1], (std::pair<uint32_t, uint32_t>{6, 12}));  // "WÖRLD": 6 bytes
  }
}

TEST(SingleWordTest, WordCharactersAreRustRegexWord) {
  const std::string json =
      R"({"version":"1.0","truncation":null,"padding":null,"added_tokens":[{"id":2,"content":"xq",)"
      R"("single_word":true,"lstrip":false,"rstrip":false,"normalized":false,"special":false}],)"
      R"("normalizer":null,"pre_tokenizer":{"type":"WhitespaceSplit"},"post_processor":null,)"
      R"("decoder":null,"model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##",)"
      R"("max_input_chars_per_word":100,"vocab":{"[UNK]":0,"a":1,"xq":2,"##xq":3}}})";
  auto tok = Tokenizer::FromJson(json);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  struct Case {
    const char* neighbour;
    bool word;  // the reference does not match "xq" next to it
  };
  const Case cases[] = {
      {"\u0897", true},  {"\u00b2", false}, {"\u216b", true},  {"\u200d", true},
      {"_", true},       {"\u00b7", false}, {"\u0903", true},  {"\u20dd", true},
      {"\U0001F130", true}, {"\u3007", true}, {"-", false},
  };
  Encoding enc;
  for (const Case& c : cases) {
    const std::string n = c.neighbour;
    ASSERT_TRUE((*tok)->Encode(n + "xq", {}, &enc).ok());
    const std::vector<int32_t> before = c.word ? std::vector<int32_t>{0} : std::vector<int32_t>{0, 2};
    EXPECT_EQ(enc.ids, before) << n << "xq";
    ASSERT_TRUE((*tok)->Encode("xq" + n, {}, &enc).ok());
    const std::vector<int32_t> after = c.word ? std::vector<int32_t>{0} : std::vector<int32_t>{2, 0};
    EXPECT_EQ(enc.ids, after) << "xq" << n;
  }
}

std::string TinyByteLevel(bool add_prefix_space) {
  return std::string(
             R"({"version":"1.0","truncation":null,"padding":null,"added_tokens":[],"normalizer":null,)"
             R"("pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false},)"
             R"("post_processor":{"type":"ByteLevel","add_prefix_space":)") +
         (add_prefix_space ? "true" : "false") +
         R"(,"trim_offsets":true,"use_regex":true},"decoder":null,"model":{"type":"BPE","dropout":null,)"
         R"("unk_token":null,"continuing_subword_prefix":null,"end_of_word_suffix":null,"fuse_unk":false,)"
         R"("byte_fallback":false,"ignore_merges":false,"vocab":{"Ġ":0,"h":1,"i":2,"Ġh":3,"hi":4,"Ġhi":5,"ĠĠ":6},)"
         R"("merges":[["h","i"],["Ġ","hi"],["Ġ","Ġ"]]}})";
}

TEST(TrimOffsetsTest, ByteLevelTrimsSpacesOffTokenOffsets) {
  struct Case {
    bool add_prefix_space;
    const char* text;
    std::vector<int32_t> ids;
    Offsets offsets;
  };
  const std::vector<Case> cases = {
      {true, " hi  hi ", {5, 0, 5, 0}, {{0, 3}, {4, 4}, {5, 7}, {8, 8}}},
      {true, "hi   ", {4, 6, 0}, {{0, 2}, {4, 4}, {5, 5}}},
      {true, "  hi", {0, 5}, {{0, 0}, {2, 4}}},
      {false, " hi  hi ", {5, 0, 5, 0}, {{1, 3}, {4, 4}, {5, 7}, {8, 8}}},
      {false, "  hi", {0, 5}, {{1, 1}, {2, 4}}},
  };
  for (const Case& c : cases) {
    auto tok = Tokenizer::FromJson(TinyByteLevel(c.add_prefix_space));
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    Encoding enc;
    ASSERT_TRUE((*tok)->Encode(c.text, {}, &enc).ok());
    EXPECT_EQ(enc.ids, c.ids) << c.text;
    EXPECT_EQ(enc.offsets, c.offsets) << c.text << " add_prefix_space=" << c.add_prefix_space;
  }
}

TEST(SpecialTokensMaskTest, MarksOnlyThePostProcessorsTokens) {
  auto tok = Tokenizer::FromFile(std::string(ORCHID_SOURCE_DIR) +
                                 "/models/all-MiniLM-L6-v2/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  Encoding enc;
  ASSERT_TRUE((*tok)->Encode("hello [SEP] w\u00f6rld [MASK]", {}, &enc).ok());
  EXPECT_EQ(enc.ids, (std::vector<int32_t>{101, 7592, 102, 2088, 103, 102}));
  EXPECT_EQ(enc.special_tokens_mask, (std::vector<uint8_t>{1, 0, 0, 0, 0, 1}));
  EncodeOptions plain;
  plain.add_special_tokens = false;
  ASSERT_TRUE((*tok)->Encode("hello [SEP]", plain, &enc).ok());
  EXPECT_EQ(enc.special_tokens_mask, (std::vector<uint8_t>{0, 0}));
  ASSERT_TRUE((*tok)->EncodePair("a", "b", {}, &enc).ok());
  EXPECT_EQ(enc.special_tokens_mask, (std::vector<uint8_t>{1, 0, 1, 0, 1}));
}

}  // namespace
}  // namespace orchid
