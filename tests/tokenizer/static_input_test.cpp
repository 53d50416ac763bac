// A static model's input rules around a tokenizer (tokenizer/static_input.h): no special tokens,
// model2vec's cut to a number of characters (code points, not bytes) and its unknown token
// dropped after truncation.
#include "tokenizer/static_input.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace orchid {
namespace {

constexpr const char* kWordPiece = R"({"version":"1.0","truncation":null,"padding":null,
  "added_tokens":[
    {"id":0,"content":"[UNK]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
    {"id":1,"content":"[CLS]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
    {"id":2,"content":"[SEP]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
  "normalizer":null,"pre_tokenizer":{"type":"BertPreTokenizer"},
  "post_processor":{"type":"BertProcessing","sep":["[SEP]",2],"cls":["[CLS]",1]},
  "decoder":null,
  "model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##","max_input_chars_per_word":100,
    "vocab":{"[UNK]":0,"[CLS]":1,"[SEP]":2,"a":3,"b":4,"##c":5,"long":6,"##word":7}}})";

std::vector<int32_t> Ids(const Tokenizer& tok, const std::string& text, size_t max_length = 0) {
  EncodeOptions o;  // add_special_tokens = true: the rules ignore it
  o.max_length = max_length;
  Encoding e;
  EXPECT_TRUE(tok.Encode(text, o, &e).ok()) << text;
  EXPECT_EQ(e.offsets.size(), e.ids.size());
  return e.ids;
}

std::unique_ptr<Tokenizer> Make(StaticInputRules rules) {
  auto inner = Tokenizer::FromJson(kWordPiece);
  EXPECT_TRUE(inner.ok()) << inner.status().ToString();
  return WithStaticInputRules(std::move(*inner), rules);
}

TEST(StaticInputTest, NoSpecialTokens) {
  auto tok = Make({});
  EXPECT_EQ(tok->num_special_tokens(), 0u);
  EXPECT_EQ(Ids(*tok, "a b zz longword"), (std::vector<int32_t>{3, 4, 0, 6, 7}));
  Encoding e;
  EXPECT_FALSE(tok->EncodePair("a", "b", EncodeOptions{}, &e).ok());
}

TEST(StaticInputTest, DropsUnknownAfterTruncation) {
  auto tok = Make({0, /*drop_token=*/0});
  EXPECT_EQ(Ids(*tok, "a b zz longword"), (std::vector<int32_t>{3, 4, 6, 7}));
  // model2vec truncates to max_length first, then drops: "zz a b" cut to 2 keeps [UNK] a.
  EXPECT_EQ(Ids(*tok, "zz a b", 2), (std::vector<int32_t>{3}));
  EXPECT_TRUE(Ids(*tok, "zz").empty());
}

TEST(StaticInputTest, CutsCharactersNotBytes) {
  // "é" is two bytes and one character, as Python's s[:n] counts.
  EXPECT_EQ(Ids(*Make({3, 0}), "a \xC3\xA9 b"), (std::vector<int32_t>{3}));
  EXPECT_EQ(Ids(*Make({4, 0}), "a \xC3\xA9 b"), (std::vector<int32_t>{3}));
  EXPECT_EQ(Ids(*Make({5, 0}), "a \xC3\xA9 b"), (std::vector<int32_t>{3, 4}));
  // A word cut in the middle becomes what the tokenizer makes of its start ("lo": unknown).
  EXPECT_TRUE(Ids(*Make({2, 0}), "longword").empty());
  EXPECT_EQ(Ids(*Make({4, -1}), "longword"), (std::vector<int32_t>{6}));
}

}  // namespace
}  // namespace orchid
