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

// OnReady before completion runs on the completing thread, once, after the result is readable;
// OnReady after completion runs at once on the caller's thread.
TEST(LazyResultTest, OnReadyRunsOnTheCompletingThreadOrAtOnce) {
  auto [lazy, promise] = LazyResult::Make();
  std::thread::id ran_on;
  int runs = 0;
  bool ready_inside = false;
  lazy.OnReady([&, handle = lazy] {
    ran_on = std::this_thread::get_id();
    ++runs;
    ready_inside = handle.ready();
  });
  EXPECT_EQ(runs, 0);
  std::thread producer([p = std::move(promise)]() mutable {
    p.Set(Status::Internal("done"));
    p.Set(Status::Internal("ignored"));  // a second Set runs nothing again
  });
  const std::thread::id producer_id = producer.get_id();
  producer.join();
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(ran_on, producer_id);
  EXPECT_TRUE(ready_inside);
  lazy.OnReady([&] {
    ran_on = std::this_thread::get_id();
    ++runs;
  });
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
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

namespace orchid {
namespace {

// `MakeIt().wait()` must not hand out a reference into a handle destroyed at the end of the
// statement: on a temporary, wait() returns the result by value.
TEST(LazyResultTest, WaitOnTemporaryOutlivesTheHandle) {
  LazyResult::Promise promise;
  auto make = [&] {
    auto [lazy, p] = LazyResult::Make();
    promise = std::move(p);
    return lazy;
  };
  LazyResult pending = make();
  Embeddings e;
  e.rows = 1;
  e.dim = 3;
  e.data = {1.f, 2.f, 3.f};
  promise.Set(std::move(e));
  promise = LazyResult::Promise();  // drop the producer's share, as the engine does
  const auto& r = std::move(pending).wait();
  pending = LazyResult();  // the last handle is gone; r must still be valid
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->data, (std::vector<float>{1.f, 2.f, 3.f}));
}

}  // namespace
}  // namespace orchid
