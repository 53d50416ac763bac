// Encode must not allocate in steady state: once a thread's buffers have grown to the largest
// input seen, encoding the same inputs again performs no heap allocation. Counted with a
// replacement of the global operator new (plain forms; it delegates to malloc).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "model_reference.h"
#include "tokenizer/tokenizer.h"

namespace {
thread_local bool g_counting = false;
thread_local size_t g_allocations = 0;

void* CountedAlloc(std::size_t n) {
  if (g_counting) ++g_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
}  // namespace

// These replace the global allocation functions with malloc/free. Once simdjson's new[] and
// this free() are inlined into one function, GCC (at -O1) takes them for a mismatched pair.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n) { return CountedAlloc(n); }
void* operator new[](std::size_t n) { return CountedAlloc(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (g_counting) ++g_allocations;
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  if (g_counting) ++g_allocations;
  return std::malloc(n == 0 ? 1 : n);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace orchid {
namespace {

TEST(TokenizerAllocations, SteadyStateEncodeDoesNotAllocate) {
  {  // the counter works
    g_allocations = 0;
    g_counting = true;
    std::vector<std::string> v(3, std::string(100, 'x'));
    g_counting = false;
    ASSERT_GE(g_allocations, 4u) << v.size();
  }
  size_t checked = 0;
  for (const testing::ReferenceTokenizer& t : testing::GetModelReference().tokenizers) {
    std::unique_ptr<Tokenizer> tok = testing::LoadReferenceTokenizer(t);
    if (!tok) continue;
    Encoding enc;
    EncodeOptions opt;
    for (const testing::ReferenceEncode& e : t.encodes) ASSERT_TRUE(tok->Encode(e.text, opt, &enc).ok());
    size_t allocating_texts = 0;
    std::string first;
    for (const testing::ReferenceEncode& e : t.encodes) {
      g_allocations = 0;
      g_counting = true;
      const Status st = tok->Encode(e.text, opt, &enc);
      g_counting = false;
      ASSERT_TRUE(st.ok());
      if (g_allocations != 0 && allocating_texts++ == 0) first = e.text.substr(0, 60);
      ++checked;
    }
    EXPECT_EQ(allocating_texts, 0u) << t.name << ": encoding allocated in steady state, first on \""
                                    << first << "\"";
  }
  EXPECT_GT(checked, 1000u);
}

}  // namespace
}  // namespace orchid
