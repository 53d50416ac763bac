#include "core/metrics.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace orchid {
namespace {

TEST(Metrics, SameNameAndLabelsGiveTheSameMetric) {
  MetricsRegistry r;
  Counter* a = r.GetCounter("x_total", "help", {{"code", "OK"}});
  Counter* b = r.GetCounter("x_total", "help", {{"code", "OK"}});
  Counter* c = r.GetCounter("x_total", "help", {{"code", "UNAVAILABLE"}});
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Metrics, WrongTypeOrBadNameThrows) {
  MetricsRegistry r;
  r.GetCounter("x_total", "help");
  EXPECT_THROW(r.GetGauge("x_total", "help"), std::invalid_argument);
  EXPECT_THROW(r.GetCounter("1bad", "help"), std::invalid_argument);
  EXPECT_THROW(r.GetCounter("ok", "help", {{"le", "1"}}), std::invalid_argument);
  r.GetHistogram("h", "help", {1, 2});
  EXPECT_THROW(r.GetHistogram("h", "help", {1, 3}), std::invalid_argument);
  EXPECT_THROW(Histogram({2, 1}), std::invalid_argument);
}

TEST(Metrics, RendersTextFormat) {
  MetricsRegistry r;
  r.GetCounter("req_total", "Requests \\ served\nby code", {{"code", "a\"b"}})->Inc(3);
  r.GetGauge("depth", "Queue depth")->Set(2.5);
  r.AddGaugeCallback("live", "Read at scrape", {}, [] { return 7.0; });
  Histogram* h = r.GetHistogram("lat_seconds", "Latency", {0.1, 1});
  h->Observe(0.05);
  h->Observe(0.1);  // on the bound: counts in that bucket (le is inclusive)
  h->Observe(5);
  const std::string text = r.Render();
  EXPECT_EQ(text,
            "# HELP req_total Requests \\\\ served\\nby code\n"
            "# TYPE req_total counter\n"
            "req_total{code=\"a\\\"b\"} 3\n"
            "# HELP depth Queue depth\n"
            "# TYPE depth gauge\n"
            "depth 2.5\n"
            "# HELP live Read at scrape\n"
            "# TYPE live gauge\n"
            "live 7\n"
            "# HELP lat_seconds Latency\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{le=\"0.1\"} 2\n"
            "lat_seconds_bucket{le=\"1\"} 2\n"
            "lat_seconds_bucket{le=\"+Inf\"} 3\n"
            "lat_seconds_sum 5.15\n"
            "lat_seconds_count 3\n");
}

TEST(Metrics, ConcurrentUpdatesAreNotLost) {
  MetricsRegistry r;
  Counter* c = r.GetCounter("n_total", "n");
  Histogram* h = r.GetHistogram("v", "v", ExponentialBuckets(1, 2, 4));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c->Inc();
        h->Observe(double(i % 10));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c->value(), 40000);
  EXPECT_EQ(h->count(), 40000u);
  uint64_t total = 0;
  for (uint64_t n : h->bucket_counts()) total += n;
  EXPECT_EQ(total, 40000u);
}

}  // namespace
}  // namespace orchid
