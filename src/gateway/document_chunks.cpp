#include "gateway/document_chunks.h"

#include <algorithm>

namespace orchid {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// The last word start t (or the end of the text) in the back half of (begin, target]; target
// itself when there is none there.
size_t BackToWordStart(std::string_view text, const TokenOffsets& offsets, size_t begin,
                       size_t target) {
  const size_t lo = begin + (target - begin) / 2;
  for (size_t t = target; t > lo; --t) {
    if (t == offsets.size() || StartsWord(text, offsets, t)) return t;
  }
  return target;
}

}  // namespace

size_t ChunkOverlap(size_t budget) { return budget / 4; }

bool StartsWord(std::string_view text, const TokenOffsets& offsets, size_t i) {
  if (i == 0) return true;
  const uint32_t begin = offsets[i].first;
  if (begin > offsets[i - 1].second) return true;
  return begin < text.size() && IsSpace(text[begin]);
}

std::pair<size_t, size_t> ChunkBytes(std::string_view text, const TokenOffsets& offsets,
                                     TokenRange range) {
  size_t begin = offsets[range.begin].first, end = begin;
  for (size_t t = range.begin; t < range.end; ++t) end = std::max<size_t>(end, offsets[t].second);
  end = std::min(end, text.size());
  begin = std::min(begin, end);
  while (begin < end && IsSpace(text[begin])) ++begin;
  return {begin, end};
}

Result<std::vector<TokenRange>> PlanChunks(std::string_view text, const TokenOffsets& offsets,
                                           size_t budget, size_t max_chunks,
                                           const ChunkExcess& excess) {
  const size_t n = offsets.size();
  const size_t overlap = ChunkOverlap(budget);
  std::vector<TokenRange> chunks;
  if (budget == 0) return chunks;
  size_t begin = 0;
  while (begin < n && chunks.size() < max_chunks) {
    size_t end = std::min(n, begin + budget);
    if (end < n) end = BackToWordStart(text, offsets, begin, end);
    while (true) {
      Result<size_t> over = excess(TokenRange{begin, end});
      if (!over.ok()) return over.status();
      if (*over == 0) break;
      const size_t cut = std::max<size_t>(*over, 1);
      if (end - begin <= cut) return std::vector<TokenRange>{};
      end = BackToWordStart(text, offsets, begin, end - cut);
    }
    chunks.push_back(TokenRange{begin, end});
    if (end == n) break;
    const size_t next = end > begin + 1 + overlap ? end - overlap : begin + 1;
    begin = BackToWordStart(text, offsets, begin, next);
  }
  return chunks;
}

size_t CodePointOffset(std::string_view text, size_t byte_offset) {
  size_t count = 0;
  for (size_t i = 0; i < byte_offset && i < text.size(); ++i) {
    if ((uint8_t(text[i]) & 0xC0) != 0x80) ++count;
  }
  return count;
}

}  // namespace orchid
