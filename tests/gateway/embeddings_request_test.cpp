#include "gateway/embeddings_request.h"

#include <gtest/gtest.h>

#include <limits>

namespace orchid {
namespace {

EmbeddingsRequest Parse(std::string_view body) {
  EmbeddingsRequest r;
  auto err = ParseOpenAiEmbeddingsRequest(body, &r);
  EXPECT_FALSE(err.has_value()) << body << " → " << (err ? err->message : "");
  return r;
}

ApiError ParseError(std::string_view body) {
  EmbeddingsRequest r;
  auto err = ParseOpenAiEmbeddingsRequest(body, &r);
  EXPECT_TRUE(err.has_value()) << body;
  return err.value_or(ApiError{});
}

TEST(EmbeddingsRequestTest, AcceptsEveryInputShape) {
  EXPECT_EQ(Parse(R"({"input":"hi"})").texts, std::vector<std::string>{"hi"});
  EXPECT_EQ(Parse(R"({"input":["a","b"]})").texts, (std::vector<std::string>{"a", "b"}));
  auto ids = Parse(R"({"input":[101,7592,102]})");
  ASSERT_EQ(ids.token_ids.size(), 1u);
  EXPECT_EQ(ids.token_ids[0], (std::vector<int32_t>{101, 7592, 102}));
  auto batch = Parse(R"({"input":[[1,2],[3]]})");
  EXPECT_EQ(batch.token_ids, (std::vector<std::vector<int32_t>>{{1, 2}, {3}}));
  EXPECT_TRUE(batch.texts.empty());
}

TEST(EmbeddingsRequestTest, ReadsOptionalFields) {
  auto r = Parse(R"({"input":"x","model":"m","encoding_format":"base64","dimensions":64,
                     "user":"u","truncate":true,"unknown":{"a":[1]}})");
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.encoding_format, EncodingFormat::kBase64);
  EXPECT_EQ(r.dimensions, 64);
  EXPECT_EQ(r.truncate, std::optional<bool>(true));
  EXPECT_FALSE(r.normalize.has_value());
  auto d = Parse(R"({"input":"x","model":null,"encoding_format":null,"dimensions":null})");
  EXPECT_FALSE(d.model.has_value());
  EXPECT_EQ(d.encoding_format, EncodingFormat::kFloat);
  EXPECT_FALSE(d.dimensions.has_value());
  EXPECT_EQ(d.truncate, std::nullopt);  // unset: the server's --auto-truncate decides
  EXPECT_EQ(Parse(R"({"input":"x","truncate":false})").truncate, std::optional<bool>(false));
  EXPECT_EQ(Parse(R"({"input":"x","truncate":null})").truncate, std::nullopt);
}

TEST(EmbeddingsRequestTest, RejectsBadRequestsWithParam) {
  struct Case {
    const char* body;
    const char* param;  // "" = null
  };
  const Case cases[] = {
      {"", ""},
      {"{", ""},
      {"[1,2]", ""},
      {"\"input\"", ""},
      {R"({"model":"m"})", "input"},
      {R"({"input":null})", "input"},
      {R"({"input":""})", "input"},
      {R"({"input":[]})", "input"},
      {R"({"input":["a",""]})", "input[1]"},
      {R"({"input":["a",1]})", "input[1]"},
      {R"({"input":[1,"a"]})", "input[1]"},
      {R"({"input":[1.5]})", "input[0]"},
      {R"({"input":[-1]})", "input[0]"},
      {R"({"input":[99999999999]})", "input[0]"},
      {R"({"input":[18446744073709551615]})", "input[0]"},
      {R"({"input":[[1],[]]})", "input[1]"},
      {R"({"input":[[1],["a"]]})", "input[1][0]"},
      {R"({"input":[[1],2]})", "input[1]"},
      {R"({"input":{"a":1}})", "input"},
      {R"({"input":5})", "input"},
      {R"({"input":true})", "input"},
      {R"({"input":"x","model":5})", "model"},
      {R"({"input":"x","encoding_format":"int4"})", "encoding_format"},
      {R"({"input":"x","encoding_format":1})", "encoding_format"},
      {R"({"input":"x","dimensions":"8"})", "dimensions"},
      {R"({"input":"x","dimensions":8.5})", "dimensions"},
      {R"({"input":"x","truncate":"yes"})", "truncate"},
  };
  for (const Case& c : cases) {
    ApiError e = ParseError(c.body);
    EXPECT_EQ(e.http_status, 400) << c.body;
    EXPECT_EQ(e.type, "invalid_request_error") << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_FALSE(e.message.empty()) << c.body;
  }
}

TEST(EmbeddingsRequestTest, RejectsInvalidUtf8) {
  ApiError e = ParseError("{\"input\":\"bad \xff\xfe\"}");
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.code, "invalid_utf8");
  ApiError lone = ParseError(R"({"input":"\udc00"})");
  EXPECT_EQ(lone.http_status, 400);
}

TEST(EmbeddingsRequestTest, ParsesTeiEmbed) {
  EmbeddingsRequest r;
  ASSERT_FALSE(ParseTeiEmbedRequest(R"({"inputs":"a b"})", &r).has_value());
  EXPECT_EQ(r.texts, std::vector<std::string>{"a b"});
  EXPECT_EQ(r.normalize, true);
  EXPECT_EQ(r.truncate, std::nullopt);
  ASSERT_FALSE(ParseTeiEmbedRequest(R"({"inputs":["a","b"],"normalize":false,"truncate":true})", &r)
                   .has_value());
  EXPECT_EQ(r.texts.size(), 2u);
  EXPECT_EQ(r.normalize, false);
  EXPECT_EQ(r.truncate, std::optional<bool>(true));
  EXPECT_TRUE(ParseTeiEmbedRequest(R"({"inputs":[1,2]})", &r).has_value());
  EXPECT_TRUE(ParseTeiEmbedRequest(R"({"input":"a"})", &r).has_value());
  EXPECT_TRUE(ParseTeiEmbedRequest(R"({"inputs":"a","normalize":1})", &r).has_value());
}

TEST(EmbeddingsRequestTest, ReadsQuantizedFormatsEmbeddingTypesAndTruncationDirection) {
  EXPECT_EQ(Parse(R"({"input":"x","encoding_format":"int8"})").encoding_format,
            EncodingFormat::kInt8);
  EXPECT_EQ(Parse(R"({"input":"x","encoding_format":"ubinary"})").encoding_format,
            EncodingFormat::kUbinary);
  auto r = Parse(R"({"input":"x","embedding_types":["float","binary","float","uint8"],
                     "truncate":true,"truncation_direction":"Left"})");
  // Repeated types are written once.
  EXPECT_EQ(r.embedding_types,
            (std::vector<EncodingFormat>{EncodingFormat::kFloat, EncodingFormat::kBinary,
                                         EncodingFormat::kUint8}));
  EXPECT_EQ(r.truncation_direction, TruncationSide::kLeft);
  EXPECT_EQ(Parse(R"({"input":"x"})").truncation_direction, TruncationSide::kRight);
  EXPECT_EQ(ParseError(R"({"input":"x","embedding_types":[]})").param, "embedding_types");
  EXPECT_EQ(ParseError(R"({"input":"x","embedding_types":["int8",4]})").param,
            "embedding_types[1]");
  EXPECT_EQ(ParseError(R"({"input":"x","truncation_direction":"middle"})").param,
            "truncation_direction");
  EmbeddingsRequest tei;
  ASSERT_FALSE(
      ParseTeiEmbedRequest(R"({"inputs":"a","truncation_direction":"left"})", &tei).has_value());
  EXPECT_EQ(tei.truncation_direction, TruncationSide::kLeft);
}

// JSON Schema counts 3.0 as an integer (schemathesis sends such numbers): integer fields take
// whole numbers in any spelling, and refuse fractions.
TEST(EmbeddingsRequestTest, IntegersMayBeSpelledAsWholeDecimals) {
  EXPECT_EQ(Parse(R"({"input":[101.0,7592,1e2]})").token_ids[0],
            (std::vector<int32_t>{101, 7592, 100}));
  auto r = Parse(R"({"input":"x","dimensions":2.0,"priority":-3.0})");
  EXPECT_EQ(r.dimensions, 2);
  EXPECT_EQ(r.scheduling.priority, -3);
  EXPECT_EQ(ParseError(R"({"input":"x","priority":2.5})").param, "priority");
  EXPECT_EQ(ParseError(R"({"input":"x","dimensions":2.5})").param, "dimensions");
  EXPECT_EQ(ParseError(R"({"input":[1.5]})").param, "input[0]");
  EXPECT_EQ(ParseError(R"({"input":[1e10]})").code, "invalid_token_id");
}

// Integers beyond 64 bits are valid JSON (Python writes them); simdjson's DOM cannot hold them,
// so they are read as doubles: an unknown field with one is ignored, a known one is out of range.
TEST(EmbeddingsRequestTest, IntegersBeyond64BitsAreValidJson) {
  auto r = Parse(R"({"x":-400725404172496732160,"y":{"z":[123456789012345678901234]},
                     "input":"123456789012345678901234567"})");
  EXPECT_EQ(r.texts, std::vector<std::string>{"123456789012345678901234567"});  // strings kept
  EXPECT_EQ(ParseError(R"({"input":"x","priority":40725404172496732160})").param, "priority");
  EXPECT_EQ(ParseError(R"({"input":[40725404172496732160]})").code, "invalid_token_id");
  // A huge dimensions is read as int64's largest (the service refuses it against the model).
  EXPECT_EQ(Parse(R"({"input":"x","dimensions":12345678901234567890123})").dimensions,
            std::numeric_limits<int64_t>::max());
}

// Every documented optional field is checked for its type (a wrong one is a 400 naming it).
TEST(EmbeddingsRequestTest, OptionalFieldsAreCheckedForTheirType) {
  EXPECT_EQ(ParseError(R"({"normalize":[],"input":"x"})").param, "normalize");
  EXPECT_EQ(Parse(R"({"input":"x","normalize":false})").normalize, std::optional<bool>(false));
  EXPECT_EQ(Parse(R"({"input":"x","normalize":null})").normalize, std::nullopt);
  EXPECT_EQ(ParseError(R"({"input":"x","user":5})").param, "user");
  EXPECT_FALSE(Parse(R"({"input":"x","user":null})").model.has_value());
  EXPECT_EQ(ParseError(R"({"input":"x","input_type":"search_query"})").param, "input_type");
  EXPECT_EQ(ParseError(R"({"input":"x","embedding_types":"float"})").param, "embedding_types");
  // truncation_direction: the documented spellings, TEI's included, and no others.
  EXPECT_EQ(Parse(R"({"input":"x","truncation_direction":"Right"})").truncation_direction,
            TruncationSide::kRight);
  EXPECT_EQ(ParseError(R"({"input":"x","truncation_direction":"LEFT"})").param,
            "truncation_direction");
}

EmbeddingsRequest ParseCohere(std::string_view body, CohereApiVersion v = CohereApiVersion::kV2) {
  EmbeddingsRequest r;
  auto err = ParseCohereEmbedRequest(body, v, &r);
  EXPECT_FALSE(err.has_value()) << body << " → " << (err ? err->message : "");
  return r;
}

TEST(CohereEmbedRequestTest, MapsCoheresFieldsOntoTheEmbeddingsRequest) {
  auto r = ParseCohere(R"({"model":"m","texts":["a","b"],"input_type":"search_query",
                           "truncate":"START","max_tokens":16,"output_dimension":256,
                           "embedding_types":["int8","float"],"priority":2,"images":[]})");
  EXPECT_EQ(r.texts, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.input_type, "query");
  EXPECT_EQ(r.truncate, std::optional<bool>(true));
  EXPECT_EQ(r.truncation_direction, TruncationSide::kLeft);
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_EQ(r.dimensions, 256);
  EXPECT_EQ(r.embedding_types,
            (std::vector<EncodingFormat>{EncodingFormat::kInt8, EncodingFormat::kFloat}));
  EXPECT_EQ(r.scheduling.priority, 2);
  EXPECT_EQ(ParseCohere(R"({"texts":["a"],"input_type":"search_document"})").input_type,
            "document");
  EXPECT_EQ(ParseCohere(R"({"texts":["a"],"input_type":"clustering"})").input_type, "clustering");
  // Defaults: Cohere's END truncation; v2 answers floats by type, v1 a plain list.
  auto d = ParseCohere(R"({"texts":["a"]})");
  EXPECT_EQ(d.truncate, std::optional<bool>(true));
  EXPECT_EQ(d.truncation_direction, TruncationSide::kRight);
  EXPECT_EQ(d.embedding_types, std::vector<EncodingFormat>{EncodingFormat::kFloat});
  EXPECT_TRUE(ParseCohere(R"({"texts":["a"]})", CohereApiVersion::kV1).embedding_types.empty());
  EXPECT_EQ(ParseCohere(R"({"texts":["a"],"truncate":"NONE"})").truncate,
            std::optional<bool>(false));
  EXPECT_EQ(
      ParseCohere(R"({"inputs":[{"content":[{"type":"text","text":"a"}]}],"texts":null})").texts,
      std::vector<std::string>{"a"});
}

}  // namespace
}  // namespace orchid
