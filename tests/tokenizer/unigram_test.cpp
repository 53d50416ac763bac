// Unigram (XLM-R style: Precompiled charsmap, Metaspace, Viterbi) against reference ids of
// Hugging Face `tokenizers` (tests/fixtures/tokenizer/models_reference.jsonl).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model_reference.h"
#include "tokenizer/tokenizer.h"

namespace orchid {
namespace {

TEST(UnigramTest, MatchesReferenceIds) {
  const size_t compared = testing::ExpectReferenceIds("Unigram");
  EXPECT_GT(compared, 300u);
}

TEST(UnigramTest, ViterbiPrefersBestScoreAndFusesUnknowns) {
  // "ab" (-1) beats "a" + "b" (-1.5 -1.5); unknown "xy" is one fused <unk>.
  const char* json = R"({"pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581",
      "prepend_scheme": "never", "split": true},
      "model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.5], ["b", -1.5],
      ["ab", -1.0], ["\u2581", -2.0]]}})";
  auto tok = Tokenizer::FromJson(json);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  Encoding enc;
  ASSERT_TRUE((*tok)->Encode("abxya", {}, &enc).ok());
  EXPECT_EQ(enc.ids, (std::vector<int32_t>{3, 0, 1}));
}

TEST(UnigramTest, RejectsBadCharsmap) {
  const char* json = R"({"normalizer": {"type": "Precompiled", "precompiled_charsmap": "!!"},
      "model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0]]}})";
  auto tok = Tokenizer::FromJson(json, "bad.json");
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("precompiled_charsmap"), std::string::npos);
}

}  // namespace
}  // namespace orchid
