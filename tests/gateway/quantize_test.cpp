// Quantized embedding outputs: the fixed-range int8/uint8 scheme (sentence-transformers'
// quantize_embeddings with ranges [-1, 1]), pplx-embed's tanh int8, packed sign bits; and the
// OpenAI / Cohere reply shapes that carry them.
#include "gateway/quantize.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <vector>

#include "gateway/embeddings_response.h"

namespace orchid {
namespace {

std::vector<int32_t> Q(const std::vector<float>& x, EncodingFormat f,
                       NativeQuantization native = NativeQuantization::kNone) {
  std::vector<int32_t> out;
  QuantizeRow(x.data(), int(x.size()), f, native, &out);
  return out;
}

TEST(QuantizeTest, FixedRangeInt8AndUint8MatchSentenceTransformers) {
  // numpy: ((x - (-1)) / (2 / 255)).astype(uint8), and - 128 before .astype(int8).
  const std::vector<float> x = {1.0f, -1.0f, 0.0f, 0.5f, -0.5f, 0.999f, 3.0f, -7.0f};
  EXPECT_EQ(Q(x, EncodingFormat::kUint8),
            (std::vector<int32_t>{255, 0, 127, 191, 63, 254, 255, 0}));
  EXPECT_EQ(Q(x, EncodingFormat::kInt8),
            (std::vector<int32_t>{127, -128, 0, 63, -64, 126, 127, -128}));
}

TEST(QuantizeTest, NativeTanhInt8) {
  const std::vector<float> x = {0.5f, -10.0f, 0.0f, 10.0f};
  // round(tanh(0.5) * 127) = round(58.69) = 59.
  EXPECT_EQ(Q(x, EncodingFormat::kInt8, NativeQuantization::kTanhInt8),
            (std::vector<int32_t>{59, -127, 0, 127}));
  EXPECT_EQ(Q(x, EncodingFormat::kUint8, NativeQuantization::kTanhInt8),
            (std::vector<int32_t>{187, 1, 128, 255}));
}

TEST(QuantizeTest, BinaryPacksSignBitsHighBitFirst) {
  // Signs 1 0 0 1 0 1 1 0 | 1 (padded with zeros): 0b10010110 = 150, 0b10000000 = 128.
  const std::vector<float> x = {1, -1, 0, 2, -3, 0.1f, 0.2f, -0.1f, 5};
  EXPECT_EQ(Q(x, EncodingFormat::kUbinary), (std::vector<int32_t>{150, 128}));
  EXPECT_EQ(Q(x, EncodingFormat::kBinary), (std::vector<int32_t>{22, 0}));
  // The binary formats ignore the native scheme (the sign is the same).
  EXPECT_EQ(Q(x, EncodingFormat::kUbinary, NativeQuantization::kTanhInt8),
            (std::vector<int32_t>{150, 128}));
}

TEST(QuantizeTest, RepliesCarryIntegersInOpenAiAndCohereShapes) {
  EmbeddingMatrix m;
  m.rows = 2;
  m.dim = 3;
  m.data = {0.5f, -0.5f, 1.0f, -1.0f, 0.0f, 0.25f};
  simdjson::dom::parser parser;
  std::string body = WriteOpenAiEmbeddingsResponse(
      m, EmbeddingOutput{EncodingFormat::kInt8, {}, NativeQuantization::kNone}, "m", 7);
  simdjson::dom::element doc = parser.parse(body);
  std::vector<int64_t> row;
  for (simdjson::dom::element v : simdjson::dom::array(doc["data"].at(1)["embedding"])) {
    row.push_back(int64_t(v));
  }
  EXPECT_EQ(row, (std::vector<int64_t>{-128, 0, 31}));
  EXPECT_EQ(int64_t(doc["usage"]["total_tokens"]), 7);

  body = WriteOpenAiEmbeddingsResponse(
      m,
      EmbeddingOutput{EncodingFormat::kFloat,
                      {EncodingFormat::kFloat, EncodingFormat::kUbinary, EncodingFormat::kUint8},
                      NativeQuantization::kNone},
      "m", 7);
  doc = parser.parse(body);
  EXPECT_TRUE(doc["data"].error());
  EXPECT_EQ(std::string_view(doc["response_type"]), "embeddings_by_type");
  EXPECT_EQ(double(doc["embeddings"]["float"].at(0).at(1)), -0.5);
  EXPECT_EQ(int64_t(doc["embeddings"]["ubinary"].at(0).at(0)), 0b10100000);
  EXPECT_EQ(int64_t(doc["embeddings"]["uint8"].at(1).at(2)), 159);
  EXPECT_EQ(simdjson::dom::array(doc["embeddings"]["uint8"]).size(), 2u);
}

}  // namespace
}  // namespace orchid
