// Where long documents are cut for chunked reranking (document_chunks.h): chunk sizes, the
// overlap, word-start edges, shortening a chunk whose re-tokenized text is over the window, the
// chunk limit, and byte spans to code points.
#include "gateway/document_chunks.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace orchid {
namespace {

// One token per space-separated word, as a WordPiece tokenizer gives for short words.
TokenOffsets WordOffsets(std::string_view text) {
  TokenOffsets out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    size_t j = i;
    while (j < text.size() && text[j] != ' ') ++j;
    if (j > i) out.emplace_back(uint32_t(i), uint32_t(j));
    i = j;
  }
  return out;
}

// "w0 w1 ... w{n-1}".
std::string Words(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s.append(i ? " w" : "w").append(std::to_string(i));
  return s;
}

ChunkExcess AlwaysFits(std::vector<TokenRange>* asked = nullptr) {
  return [asked](TokenRange r) -> Result<size_t> {
    if (asked) asked->push_back(r);
    return size_t(0);
  };
}

TEST(DocumentChunksTest, OverlapIsAQuarterOfTheBudget) {
  EXPECT_EQ(ChunkOverlap(8), 2u);
  EXPECT_EQ(ChunkOverlap(11), 2u);
  EXPECT_EQ(ChunkOverlap(499), 124u);
  EXPECT_EQ(ChunkOverlap(3), 0u);
}

TEST(DocumentChunksTest, ChunksOfWholeWordsOverlapByAQuarter) {
  const std::string text = Words(20);
  Result<std::vector<TokenRange>> plan = PlanChunks(text, WordOffsets(text), 8, 100, AlwaysFits());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  // Budget 8, overlap 2: each chunk starts 2 tokens before the previous one ends.
  EXPECT_EQ(*plan, (std::vector<TokenRange>{{0, 8}, {6, 14}, {12, 20}}));
}

TEST(DocumentChunksTest, OnlyTheFirstMaxChunks) {
  const std::string text = Words(20);
  Result<std::vector<TokenRange>> plan = PlanChunks(text, WordOffsets(text), 8, 2, AlwaysFits());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(*plan, (std::vector<TokenRange>{{0, 8}, {6, 14}}));
  plan = PlanChunks(text, WordOffsets(text), 8, 1, AlwaysFits());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(*plan, (std::vector<TokenRange>{{0, 8}}));
}

TEST(DocumentChunksTest, EdgesMoveBackToWordStarts) {
  // "unbelievable" is three contiguous tokens (un, believ, able) after three one-token words.
  const std::string text = "aa bb cc unbelievable dd ee ff gg";
  const TokenOffsets offsets = {{0, 2},   {3, 5},   {6, 8},   {9, 11},  {11, 17},
                                {17, 21}, {22, 24}, {25, 27}, {28, 30}, {31, 33}};
  EXPECT_TRUE(StartsWord(text, offsets, 0));
  EXPECT_TRUE(StartsWord(text, offsets, 3));
  EXPECT_FALSE(StartsWord(text, offsets, 4));
  EXPECT_FALSE(StartsWord(text, offsets, 5));
  // Budget 5 would end the first chunk inside "unbelievable" (after "believ"): it ends before
  // the word instead. Overlap 1: the next chunk starts at "cc" and holds the word whole.
  std::vector<TokenRange> asked;
  Result<std::vector<TokenRange>> plan = PlanChunks(text, offsets, 5, 100, AlwaysFits(&asked));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(*plan, (std::vector<TokenRange>{{0, 3}, {2, 7}, {6, 10}}));
  EXPECT_EQ(asked, *plan);  // every chunk asked about once, in order
}

TEST(DocumentChunksTest, AWordLongerThanHalfAChunkIsCutAtATokenBoundary) {
  // One 12-token word ("aaaaaaaaaaaa" as 12 one-byte tokens) after a short word.
  const std::string text = "x aaaaaaaaaaaa";
  TokenOffsets offsets = {{0, 1}};
  for (uint32_t b = 2; b < 14; ++b) offsets.emplace_back(b, b + 1);
  Result<std::vector<TokenRange>> plan = PlanChunks(text, offsets, 6, 100, AlwaysFits());
  ASSERT_TRUE(plan.ok());
  // The word start at 1 is not in the back half of (0, 6]: the chunk keeps its 6 tokens.
  EXPECT_EQ((*plan)[0], (TokenRange{0, 6}));
  EXPECT_EQ(plan->back().end, offsets.size());
}

TEST(DocumentChunksTest, AChunkOverTheWindowIsShortenedByItsExcess) {
  const std::string text = Words(20);
  std::vector<TokenRange> asked;
  // Re-tokenized, a chunk of more than 5 words is 2 tokens per word over 5 (a tokenizer that
  // splits the chunk's text otherwise than the whole document's).
  auto excess = [&asked](TokenRange r) -> Result<size_t> {
    asked.push_back(r);
    const size_t n = r.end - r.begin;
    return n > 5 ? 2 * (n - 5) : 0;
  };
  Result<std::vector<TokenRange>> plan = PlanChunks(text, WordOffsets(text), 8, 2, excess);
  ASSERT_TRUE(plan.ok());
  // 8 words are 6 tokens over: 2 words are left, which fit.
  EXPECT_EQ(asked[0], (TokenRange{0, 8}));
  EXPECT_EQ(asked[1], (TokenRange{0, 2}));
  ASSERT_EQ(plan->size(), 2u);
  EXPECT_EQ((*plan)[0], (TokenRange{0, 2}));
  // The next chunk starts one token on (the chunk is shorter than the overlap) and is shortened
  // the same way.
  EXPECT_EQ((*plan)[1], (TokenRange{1, 3}));
}

TEST(DocumentChunksTest, NoRoomMeansNoChunks) {
  const std::string text = Words(10);
  auto never = [](TokenRange) -> Result<size_t> { return size_t(3); };
  Result<std::vector<TokenRange>> plan = PlanChunks(text, WordOffsets(text), 4, 10, never);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->empty());
  plan = PlanChunks(text, WordOffsets(text), 0, 10, AlwaysFits());
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->empty());
}

TEST(DocumentChunksTest, ErrorsEndThePlan) {
  const std::string text = Words(10);
  auto failing = [](TokenRange) -> Result<size_t> {
    return Status::InvalidArgument("invalid UTF-8");
  };
  Result<std::vector<TokenRange>> plan = PlanChunks(text, WordOffsets(text), 4, 10, failing);
  EXPECT_FALSE(plan.ok());
}

TEST(DocumentChunksTest, BytesLeaveOutLeadingWhitespace) {
  // A SentencePiece-style tokenizer whose tokens cover the space before them.
  const std::string text = "ab cd ef";
  const TokenOffsets offsets = {{0, 2}, {2, 5}, {5, 8}};
  EXPECT_TRUE(StartsWord(text, offsets, 1));
  EXPECT_EQ(ChunkBytes(text, offsets, {1, 3}), (std::pair<size_t, size_t>{3, 8}));
  EXPECT_EQ(ChunkBytes(text, offsets, {0, 1}), (std::pair<size_t, size_t>{0, 2}));
  // Offsets past the text (a tokenizer bug) give an empty span, not one past the end.
  const TokenOffsets past = {{0, 2}, {12, 14}};
  EXPECT_EQ(ChunkBytes(text, past, {1, 2}), (std::pair<size_t, size_t>{8, 8}));
}

TEST(DocumentChunksTest, CodePointOffsets) {
  const std::string text = "h\xC3\xA9llo \xE4\xB8\x96\xE7\x95\x8C!";  // "héllo 世界!"
  EXPECT_EQ(CodePointOffset(text, 0), 0u);
  EXPECT_EQ(CodePointOffset(text, 3), 2u);            // after "hé"
  EXPECT_EQ(CodePointOffset(text, 7), 6u);            // after "héllo "
  EXPECT_EQ(CodePointOffset(text, text.size()), 9u);  // the whole text
  EXPECT_EQ(CodePointOffset(text, 100), 9u);          // past the end
}

}  // namespace
}  // namespace orchid
