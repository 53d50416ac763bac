// Long-document reranking: where a document too long for a cross-encoder's window is cut into
// chunks, each scored beside the query as if it were a document of its own.
//
// A chunk is a run of the document's tokens (from encoding the document alone, without special
// tokens) of at most `budget` tokens, the room the window leaves beside the query and the pair's
// special tokens. Chunk k+1 starts ChunkOverlap(budget) tokens (a quarter of the budget) before
// chunk k ends, so that a passage cut at one edge is whole in the next chunk. Both edges move
// back to the nearest word start (a token after whitespace, or the first token) when there is
// one in the back half of what precedes them in the chunk, so that chunks rarely cut a word and
// a chunk's text tokenizes as the same words. At most `max_chunks` chunks, the first ones.
// Thread safety: free functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace orchid {

using TokenOffsets = std::vector<std::pair<uint32_t, uint32_t>>;  // byte [begin, end) per token

struct TokenRange {
  size_t begin = 0;  // the first token
  size_t end = 0;    // one past the last token
  bool operator==(const TokenRange&) const = default;
};

// Tokens shared by consecutive chunks: budget / 4.
size_t ChunkOverlap(size_t budget);

// True when token i of `text` begins a word: the first token, a token after a gap in the
// offsets (whitespace the tokenizer dropped), or one whose text starts with whitespace.
bool StartsWord(std::string_view text, const TokenOffsets& offsets, size_t i);

// The bytes [begin, end) of `text` that tokens `range` cover, leading whitespace left out.
std::pair<size_t, size_t> ChunkBytes(std::string_view text, const TokenOffsets& offsets,
                                     TokenRange range);

// How many tokens the model's sequence for a chunk (query, special tokens and the chunk's own
// text re-tokenized) has over the window: 0 when it fits. An error ends the plan with it.
using ChunkExcess = std::function<Result<size_t>(TokenRange)>;

// The chunks of a document of offsets.size() tokens. `excess` is asked about each chunk before
// it is kept; a chunk over the window is shortened by its excess (and back to a word start) and
// asked about again, so that the last range asked about with the answer 0 is each kept chunk.
// Empty when a chunk cannot fit even at one token (the query leaves no room).
Result<std::vector<TokenRange>> PlanChunks(std::string_view text, const TokenOffsets& offsets,
                                           size_t budget, size_t max_chunks,
                                           const ChunkExcess& excess);

// The number of Unicode code points in text[0, byte_offset): the character offset clients
// index strings with (Python's str).
size_t CodePointOffset(std::string_view text, size_t byte_offset);

}  // namespace orchid
