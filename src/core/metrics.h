// Metrics: counters, gauges and histograms rendered in the Prometheus text exposition format
// (version 0.0.4) for the /metrics endpoints of the gateway and the worker.
//
// A MetricsRegistry owns metric families (one name, one type, one help text) and their
// children (one per label set). Get-or-create calls return a stable pointer that callers keep:
// updating a metric is lock-free (atomics); only creating a child and rendering take the lock.
//
// Thread safety: everything may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace orchid {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void Inc(double v = 1) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Inc(double v = 1) { value_.fetch_add(v, std::memory_order_relaxed); }
  void Dec(double v = 1) { value_.fetch_sub(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  // `bounds`: the buckets' upper bounds, strictly increasing (+Inf is implied).
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  // Per-bucket (non-cumulative) counts, the +Inf bucket last; with sum and count.
  std::vector<uint64_t> bucket_counts() const;
  double sum() const { return sum_.load(std::memory_order_relaxed); }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // bounds_.size() + 1
  std::atomic<double> sum_{0};
  std::atomic<uint64_t> count_{0};
};

// Bucket layouts. Seconds from 50 µs to ~100 s; counts (tokens, sequences) from 1 to ~1M.
std::vector<double> LatencyBuckets();
std::vector<double> ExponentialBuckets(double start, double factor, int count);

class MetricsRegistry {
 public:
  // Get-or-create. The same (name, labels) returns the same object. A name registered with
  // another type (or a histogram with other bounds) throws std::invalid_argument: that is a
  // programming error, caught by the tests.
  Counter* GetCounter(const std::string& name, const std::string& help,
                      const MetricLabels& labels = {});
  Gauge* GetGauge(const std::string& name, const std::string& help,
                  const MetricLabels& labels = {});
  Histogram* GetHistogram(const std::string& name, const std::string& help,
                          const std::vector<double>& bounds, const MetricLabels& labels = {});
  // A gauge read when rendering (queue depth and the like). `read` must stay valid, and safe to
  // call from the rendering thread, for the registry's lifetime.
  void AddGaugeCallback(const std::string& name, const std::string& help,
                        const MetricLabels& labels, std::function<double()> read);

  // Prometheus text format, families in registration order.
  std::string Render() const;
  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Child {
    MetricLabels labels;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
    std::function<double()> read;
  };
  struct Family {
    std::string name;
    std::string help;
    Type type;
    std::vector<std::unique_ptr<Child>> children;
  };
  Child* GetChild(const std::string& name, const std::string& help, Type type,
                  const MetricLabels& labels);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;
  std::map<std::string, Family*> by_name_;
};

}  // namespace orchid
