// Split (every behavior, invert, literal and regex patterns, the hand-written GPT-2 / Qwen /
// Llama-3 scanners) and Metaspace against `tokenizers`' pre_tokenize_str
// (tests/fixtures/tokenizer/models_reference.jsonl).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <utility>
#include <vector>

#include "model_reference.h"
#include "tokenizer/components.h"
#include "tokenizer/pre_tokenizers.h"

namespace orchid {
namespace {

TEST(PreTokenizersTest, SplitsMatchReference) {
  size_t compared = 0;
  for (const testing::ReferenceSplit& c : testing::GetModelReference().splits) {
    simdjson::dom::parser parser;
    simdjson::dom::element json;
    ASSERT_EQ(parser.parse(c.pre_tokenizer_json).get(json), simdjson::SUCCESS);
    auto pre = tok::MakePreTokenizer(json, "test");
    ASSERT_TRUE(pre.ok()) << pre.status().ToString();
    tok::NormalizedText text;
    text.AssignIdentity(c.text, 0);
    const tok::Span all{0, static_cast<uint32_t>(c.text.size())};
    std::vector<tok::Span> words;
    tok::NormalizedText rewritten;
    const tok::NormalizedText* src = &text;
    if ((*pre)->rewrites_text()) {
      (*pre)->RewriteAndSplit(text, all, &rewritten, &words);
      src = &rewritten;
    } else {
      (*pre)->PreTokenize(text, all, &words);
    }
    std::vector<std::pair<uint32_t, uint32_t>> offsets;
    std::vector<std::string> pieces;
    for (const tok::Span& w : words) {
      offsets.emplace_back(src->begin[w.begin], src->end[w.end - 1]);
      pieces.emplace_back(src->text.substr(w.begin, w.end - w.begin));
    }
    if (!(*pre)->byte_level()) {  // ByteLevel's character mapping happens in the BPE model
      EXPECT_EQ(pieces, c.pieces) << c.pre_tokenizer_json << " on \"" << c.text << "\"";
    }
    EXPECT_EQ(offsets, c.expected) << c.pre_tokenizer_json << " on \"" << c.text << "\"";
    ++compared;
  }
  EXPECT_GT(compared, 60u);
}

}  // namespace
}  // namespace orchid
