// Pair encoding (post-processors' pair templates, token_type_ids) and decoders on a tiny
// WordPiece tokenizer; expected values are those of Hugging Face `tokenizers` 0.23.3 on the same
// tokenizer.json (live comparisons on real tokenizers: tests/e2e/test_tokenizer_pairs_decode.py).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace orchid {
namespace {

std::string TinyJson(const std::string& post, const std::string& decoder) {
  return R"({"version":"1.0","truncation":null,"padding":null,"added_tokens":[
    {"id":0,"content":"[UNK]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
    {"id":1,"content":"[CLS]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
    {"id":2,"content":"[SEP]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
    "normalizer":null,"pre_tokenizer":{"type":"WhitespaceSplit"},"post_processor":)" +
         post + R"(,"decoder":)" + decoder + R"(,
    "model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##",
      "max_input_chars_per_word":100,
      "vocab":{"[UNK]":0,"[CLS]":1,"[SEP]":2,"hello":3,"world":4,"##s":5,"xx":6}}})";
}

constexpr const char* kBert = R"({"type":"BertProcessing","sep":["[SEP]",2],"cls":["[CLS]",1]})";
constexpr const char* kRoberta =
    R"({"type":"RobertaProcessing","sep":["[SEP]",2],"cls":["[CLS]",1],"trim_offsets":true,"add_prefix_space":false})";
constexpr const char* kByteLevel =
    R"({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false})";
constexpr const char* kStripReplace =
    R"({"type":"Sequence","decoders":[{"type":"Strip","content":"x","start":1,"stop":1},{"type":"Replace","pattern":{"String":"l"},"content":"L"}]})";

struct PairCase {
  const char* post;
  bool special;
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;
};

TEST(TokenizerPairsTest, PostProcessorsMatchReference) {
  const std::vector<PairCase> cases = {
      {kBert, true, {1, 3, 4, 5, 2, 4, 3, 2}, {0, 0, 0, 0, 0, 1, 1, 1}},
      {kBert, false, {3, 4, 5, 4, 3}, {0, 0, 0, 1, 1}},
      {kRoberta, true, {1, 3, 4, 5, 2, 2, 4, 3, 2}, {0, 0, 0, 0, 0, 0, 0, 0, 0}},
      {kRoberta, false, {3, 4, 5, 4, 3}, {0, 0, 0, 0, 0}},
      {kByteLevel, true, {3, 4, 5, 4, 3}, {0, 0, 0, 1, 1}},
      {"null", true, {3, 4, 5, 4, 3}, {0, 0, 0, 1, 1}},
  };
  for (const PairCase& c : cases) {
    auto tok = Tokenizer::FromJson(TinyJson(c.post, "null"));
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    EncodeOptions options;
    options.add_special_tokens = c.special;
    Encoding enc;
    ASSERT_TRUE((*tok)->EncodePair("hello worlds", "world hello", options, &enc).ok());
    EXPECT_EQ(enc.ids, c.ids) << c.post << " special=" << c.special;
    EXPECT_EQ(enc.type_ids, c.type_ids) << c.post << " special=" << c.special;
    EXPECT_EQ(enc.offsets.size(), enc.ids.size());
  }
}

TEST(TokenizerPairsTest, TruncationStrategies) {
  auto tok = Tokenizer::FromJson(TinyJson(kBert, "null"));
  ASSERT_TRUE(tok.ok());
  Encoding enc;
  EncodeOptions options;
  options.max_length = 6;  // 3 left for the sequences (3 + 2 tokens)
  ASSERT_TRUE((*tok)->EncodePair("hello worlds", "world hello", options, &enc).ok());
  EXPECT_EQ(enc.ids, (std::vector<int32_t>{1, 3, 4, 2, 4, 2}));  // longest_first: 1 + 1 (+1)
  options.strategy = TruncationStrategy::kOnlySecond;
  EXPECT_FALSE((*tok)->EncodePair("hello worlds", "world hello", options, &enc).ok());  // too short
  options.strategy = TruncationStrategy::kOnlyFirst;
  ASSERT_TRUE((*tok)->EncodePair("hello worlds", "world hello", options, &enc).ok());
  EXPECT_EQ(enc.ids, (std::vector<int32_t>{1, 3, 2, 4, 3, 2}));
  options.side = TruncationSide::kLeft;
  ASSERT_TRUE((*tok)->EncodePair("hello worlds", "world hello", options, &enc).ok());
  EXPECT_EQ(enc.ids, (std::vector<int32_t>{1, 5, 2, 4, 3, 2}));
}

TEST(TokenizerDecodeTest, StripReplaceAndSkipSpecial) {
  auto tok = Tokenizer::FromJson(TinyJson(kBert, kStripReplace));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  std::string text;
  ASSERT_TRUE((*tok)->Decode({6, 3, 6, 1, 4, 0}, false, &text).ok());
  EXPECT_EQ(text, "heLLo[CLS]worLd[UNK]");
  ASSERT_TRUE((*tok)->Decode({6, 3, 6, 1, 4, 0}, true, &text).ok());
  EXPECT_EQ(text, "heLLoworLd");
}

TEST(TokenizerDecodeTest, NoDecoderJoinsWithSpacesAndUnknownDecoderIsAnError) {
  auto tok = Tokenizer::FromJson(TinyJson(kBert, "null"));
  ASSERT_TRUE(tok.ok());
  std::string text;
  ASSERT_TRUE((*tok)->Decode({3, 5, 999}, false, &text).ok());
  EXPECT_EQ(text, "hello ##s");
  auto odd = Tokenizer::FromJson(TinyJson(kBert, R"({"type":"CTC"})"));
  ASSERT_TRUE(odd.ok());  // loading still works; only Decode fails
  EXPECT_FALSE((*odd)->Decode({3}, false, &text).ok());
}

}  // namespace
}  // namespace orchid
