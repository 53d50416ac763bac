#include "engine/lazy_result.h"

#include <gtest/gtest.h>

#include <thread>

namespace orchid {
namespace {

TEST(LazyResultTest, CompletesAcrossThreads) {
  auto [lazy, promise] = LazyResult::Make();
  EXPECT_FALSE(lazy.ready());
  std::thread producer([p = std::move(promise)]() mutable {
    Embeddings e;
    e.rows = 1;
    e.dim = 2;
    e.data = {1.f, 2.f};
    p.Set(std::move(e));
  });
  const auto& r = lazy.wait();
  producer.join();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(lazy.ready());
  EXPECT_EQ(r->data[1], 2.f);
}

TEST(LazyResultTest, SecondSetIgnored) {
  auto [lazy, promise] = LazyResult::Make();
  promise.Set(Status::Internal("first"));
  promise.Set(Embeddings{});
  ASSERT_FALSE(lazy.wait().ok());
  EXPECT_EQ(lazy.wait().status().message(), "first");
}

}  // namespace
}  // namespace orchid
