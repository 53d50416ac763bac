// TEI's /tokenize and /decode handlers on all-MiniLM-L6-v2's tokenizer. Expected bodies are what
// text-embeddings-inference builds from Hugging Face `tokenizers` 0.23.3 on the same
// tokenizer.json (ids, character offsets, special_tokens_mask, tokens; decode), computed with:
//   t = Tokenizer.from_file(...); e = t.encode(s, add_special_tokens=...)
//   special ? {id, text: token, special, null, null} : {id, text: s[a:b], special, a, b}
#include "gateway/tokenize_routes.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace orchid {
namespace {

class TokenizeRoutesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto tok = Tokenizer::FromFile(std::string(ORCHID_SOURCE_DIR) +
                                   "/models/all-MiniLM-L6-v2/tokenizer.json");
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    tok_ = std::move(tok).value().release();
  }
  static const Tokenizer& tok() { return *tok_; }
  static Tokenizer* tok_;
};
Tokenizer* TokenizeRoutesTest::tok_ = nullptr;

TEST_F(TokenizeRoutesTest, TokenizeGivesCharacterOffsetsAndMarksTemplateTokensSpecial) {
  // "[SEP]" typed in the text is an added token, not a template one: special false, as TEI.
  const HttpResponse r = HandleTokenize(tok(), R"({"inputs": "Héllo [SEP] 日本!"})", 0);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body,
            R"([[{"id":101,"text":"[CLS]","special":true,"start":null,"stop":null},)"
            R"({"id":7592,"text":"Héllo","special":false,"start":0,"stop":5},)"
            R"({"id":102,"text":"[SEP]","special":false,"start":6,"stop":11},)"
            R"({"id":1864,"text":"日","special":false,"start":12,"stop":13},)"
            R"({"id":1876,"text":"本","special":false,"start":13,"stop":14},)"
            R"({"id":999,"text":"!","special":false,"start":14,"stop":15},)"
            R"({"id":102,"text":"[SEP]","special":true,"start":null,"stop":null}]])");
}

TEST_F(TokenizeRoutesTest, TokenizeBatchWithoutSpecialTokens) {
  const HttpResponse r = HandleTokenize(
      tok(), R"({"inputs": ["a b", ""], "add_special_tokens": false, "prompt_name": null})", 0);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body,
            R"([[{"id":1037,"text":"a","special":false,"start":0,"stop":1},)"
            R"({"id":1038,"text":"b","special":false,"start":2,"stop":3}],[]])");
}

TEST_F(TokenizeRoutesTest, TokenizeValidationErrorsUseTeiShape) {
  struct Case {
    const char* body;
    int status;
    const char* message;
  };
  const Case cases[] = {
      {R"(not json)", 422, nullptr},
      {R"([1, 2])", 422, "request body must be a JSON object"},
      {R"({})", 422, "missing field `inputs`"},
      {R"({"inputs": []})", 422, "`inputs` cannot be empty"},
      {R"({"inputs": 3})", 422, "`inputs` must be a string or an array of strings"},
      {R"({"inputs": ["a", 3]})", 422, "`inputs[1]` must be a string"},
      {R"({"inputs": "a", "add_special_tokens": "yes"})", 422,
       "`add_special_tokens` must be a boolean"},
      {R"({"inputs": "a", "prompt_name": 1})", 422, "`prompt_name` must be a string"},
      {R"({"inputs": ["a", "b", "c"]})", 413, "batch size 3 > maximum allowed batch size 2"},
  };
  for (const Case& c : cases) {
    const HttpResponse r = HandleTokenize(tok(), c.body, 2);
    EXPECT_EQ(r.status, c.status) << c.body;
    EXPECT_NE(r.body.find(R"("error_type":"Validation")"), std::string::npos) << r.body;
    if (c.message != nullptr) {
      EXPECT_EQ(r.body, std::string(R"({"error":")") + c.message +
                            R"(","error_type":"Validation"})")
          << c.body;
    }
  }
  const std::string bad_utf8 = "{\"inputs\": \"a\xff\"}";
  const HttpResponse r = HandleTokenize(tok(), bad_utf8, 0);
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(r.body.find("not valid UTF-8"), std::string::npos) << r.body;
}

TEST_F(TokenizeRoutesTest, DecodeSingleAndBatch) {
  HttpResponse r = HandleDecode(tok(), R"({"ids": [101, 7592, 1010, 2088, 102]})", 0);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"(["hello, world"])");

  r = HandleDecode(tok(), R"({"ids": [[101, 7592, 1010, 2088, 102], [], [7592, 999999]],
                              "skip_special_tokens": false})",
                   0);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"(["[CLS] hello, world [SEP]","","hello"])");

  r = HandleDecode(tok(), R"({"ids": []})", 0);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"([""])");
}

// Ids written as whole decimals (JSON Schema integers) decode as integers; an integer beyond 64
// bits, valid JSON, is out of range rather than a parse error; null flags are the default.
TEST_F(TokenizeRoutesTest, DecodeTakesIntegersInAnySpelling) {
  HttpResponse r = HandleDecode(tok(), R"({"ids": [101.0, 7592, 1.01e3, 2088, 102],
                                           "skip_special_tokens": null, "x": 123456789012345678901})",
                                0);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, R"(["hello, world"])");
  r = HandleDecode(tok(), R"({"ids": [1, 123456789012345678901234]})", 0);
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_NE(r.body.find("`ids[1]` must be a token id"), std::string::npos) << r.body;
}

TEST_F(TokenizeRoutesTest, DecodeValidationErrors) {
  struct Case {
    const char* body;
    int status;
    const char* message;
  };
  const Case cases[] = {
      {R"({})", 422, "missing field `ids`"},
      {R"({"ids": "x"})", 422,
       "`ids` must be an array of token ids or an array of arrays of token ids"},
      {R"({"ids": [1, -2]})", 422,
       "`ids[1]` must be a token id (an integer from 0 to 2147483647)"},
      {R"({"ids": [1, 2.5]})", 422,
       "`ids[1]` must be a token id (an integer from 0 to 2147483647)"},
      {R"({"ids": [[1], 2]})", 422, "`ids[1]` must be an array of token ids"},
      {R"({"ids": [1], "skip_special_tokens": 1})", 422,
       "`skip_special_tokens` must be a boolean"},
      {R"({"ids": [[1], [2], [3]]})", 413, "batch size 3 > maximum allowed batch size 2"},
  };
  for (const Case& c : cases) {
    const HttpResponse r = HandleDecode(tok(), c.body, 2);
    EXPECT_EQ(r.status, c.status) << c.body;
    EXPECT_EQ(r.body, std::string(R"({"error":")") + c.message + R"(","error_type":"Validation"})")
        << c.body;
  }
}

}  // namespace
}  // namespace orchid
