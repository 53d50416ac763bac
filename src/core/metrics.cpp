#include "core/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace orchid {
namespace {

bool ValidName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

void AppendEscaped(std::string* out, const std::string& s, bool quote) {
  for (char c : s) {
    if (c == '\\') {
      *out += "\\\\";
    } else if (c == '\n') {
      *out += "\\n";
    } else if (quote && c == '"') {
      *out += "\\\"";
    } else {
      *out += c;
    }
  }
}

void AppendNumber(std::string* out, double v) {
  if (std::isnan(v)) {
    *out += "NaN";
  } else if (std::isinf(v)) {
    *out += v > 0 ? "+Inf" : "-Inf";
  } else if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.0f", v);
    *out += buf;
  } else {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.9g", v);
    *out += buf;
  }
}

// `{a="x",b="y"}` with an optional extra label (le for histogram buckets); empty when none.
void AppendLabels(std::string* out, const MetricLabels& labels, const char* extra_name = nullptr,
                  const std::string& extra_value = {}) {
  if (labels.empty() && extra_name == nullptr) return;
  *out += '{';
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) *out += ',';
    first = false;
    *out += k;
    *out += "=\"";
    AppendEscaped(out, v, true);
    *out += '"';
  }
  if (extra_name != nullptr) {
    if (!first) *out += ',';
    *out += extra_name;
    *out += "=\"";
    *out += extra_value;
    *out += '"';
  }
  *out += '}';
}

void AppendSample(std::string* out, const std::string& name, const MetricLabels& labels,
                  double value, const char* extra_name = nullptr,
                  const std::string& extra_value = {}) {
  *out += name;
  AppendLabels(out, labels, extra_name, extra_value);
  *out += ' ';
  AppendNumber(out, value);
  *out += '\n';
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
  for (size_t i = 1; i < bounds_.size(); ++i) {
    if (!(bounds_[i] > bounds_[i - 1])) {
      throw std::invalid_argument("histogram bounds must be strictly increasing");
    }
  }
  counts_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  const size_t b = size_t(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  counts_[b].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::bucket_counts() const {
  std::vector<uint64_t> out(bounds_.size() + 1);
  for (size_t i = 0; i < out.size(); ++i) out[i] = counts_[i].load(std::memory_order_relaxed);
  return out;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> b;
  double v = start;
  for (int i = 0; i < count; ++i, v *= factor) b.push_back(v);
  return b;
}

std::vector<double> LatencyBuckets() {
  // 50 µs .. ~105 s, doubling.
  return ExponentialBuckets(50e-6, 2, 22);
}

MetricsRegistry::Child* MetricsRegistry::GetChild(const std::string& name,
                                                  const std::string& help, Type type,
                                                  const MetricLabels& labels) {
  if (!ValidName(name)) throw std::invalid_argument("invalid metric name: " + name);
  for (const auto& [k, v] : labels) {
    if (!ValidName(k) || k.find(':') != std::string::npos || k == "le") {
      throw std::invalid_argument("invalid label name: " + k);
    }
  }
  Family* family = nullptr;
  if (auto it = by_name_.find(name); it != by_name_.end()) {
    family = it->second;
    if (family->type != type) {
      throw std::invalid_argument("metric " + name + " registered with another type");
    }
  } else {
    auto f = std::make_unique<Family>();
    f->name = name;
    f->help = help;
    f->type = type;
    family = f.get();
    by_name_[name] = family;
    families_.push_back(std::move(f));
  }
  for (const auto& child : family->children) {
    if (child->labels == labels) return child.get();
  }
  auto child = std::make_unique<Child>();
  child->labels = labels;
  family->children.push_back(std::move(child));
  return family->children.back().get();
}

Counter* MetricsRegistry::GetCounter(const std::string& name, const std::string& help,
                                     const MetricLabels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Child* c = GetChild(name, help, Type::kCounter, labels);
  if (!c->counter) c->counter = std::make_unique<Counter>();
  return c->counter.get();
}

Gauge* MetricsRegistry::GetGauge(const std::string& name, const std::string& help,
                                 const MetricLabels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Child* c = GetChild(name, help, Type::kGauge, labels);
  if (c->read) throw std::invalid_argument("gauge " + name + " is read through a callback");
  if (!c->gauge) c->gauge = std::make_unique<Gauge>();
  return c->gauge.get();
}

Histogram* MetricsRegistry::GetHistogram(const std::string& name, const std::string& help,
                                         const std::vector<double>& bounds,
                                         const MetricLabels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Child* c = GetChild(name, help, Type::kHistogram, labels);
  if (!c->histogram) {
    c->histogram = std::make_unique<Histogram>(bounds);
  } else if (c->histogram->bounds() != bounds) {
    throw std::invalid_argument("histogram " + name + " registered with other buckets");
  }
  return c->histogram.get();
}

void MetricsRegistry::AddGaugeCallback(const std::string& name, const std::string& help,
                                       const MetricLabels& labels, std::function<double()> read) {
  std::lock_guard<std::mutex> lock(mu_);
  Child* c = GetChild(name, help, Type::kGauge, labels);
  if (c->gauge || c->read) throw std::invalid_argument("gauge " + name + " already exists");
  c->read = std::move(read);
}

std::string MetricsRegistry::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  out.reserve(4096);
  for (const auto& f : families_) {
    out += "# HELP ";
    out += f->name;
    out += ' ';
    AppendEscaped(&out, f->help, false);
    out += "\n# TYPE ";
    out += f->name;
    out += f->type == Type::kCounter ? " counter\n"
           : f->type == Type::kGauge ? " gauge\n"
                                     : " histogram\n";
    for (const auto& c : f->children) {
      if (c->counter) {
        AppendSample(&out, f->name, c->labels, c->counter->value());
      } else if (c->gauge) {
        AppendSample(&out, f->name, c->labels, c->gauge->value());
      } else if (c->read) {
        AppendSample(&out, f->name, c->labels, c->read());
      } else if (c->histogram) {
        const Histogram& h = *c->histogram;
        const std::vector<uint64_t> counts = h.bucket_counts();
        uint64_t cumulative = 0;
        for (size_t i = 0; i < counts.size(); ++i) {
          cumulative += counts[i];
          std::string le;
          if (i < h.bounds().size()) {
            AppendNumber(&le, h.bounds()[i]);
          } else {
            le = "+Inf";
          }
          AppendSample(&out, f->name + "_bucket", c->labels, double(cumulative), "le", le);
        }
        AppendSample(&out, f->name + "_sum", c->labels, h.sum());
        // The count is the +Inf bucket, so the two always agree within one scrape.
        AppendSample(&out, f->name + "_count", c->labels, double(cumulative));
      }
    }
  }
  return out;
}

}  // namespace orchid
