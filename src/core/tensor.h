// Buffer and Tensor: orchid's one storage type for numbers.
//
// Buffer<T> is a 64-byte-aligned array that only grows (Reserve keeps the old allocation when it
// is big enough), so scratch space reused across forward passes is allocated once per high-water
// mark. Tensor is an fp32 row-major array with a shape; model weights are Tensors.
// Neither is thread-safe; both are movable, not copyable (copies of weights are never wanted).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace orchid {

template <typename T>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t n) { Reserve(n); }
  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(Buffer&&) noexcept = default;

  // Makes room for at least n elements; contents are not preserved when it reallocates.
  void Reserve(size_t n) {
    if (n <= capacity_) return;
    const size_t bytes = ((n * sizeof(T) + kAlign - 1) / kAlign) * kAlign;
    void* p = std::aligned_alloc(kAlign, bytes);
    if (p == nullptr) throw std::bad_alloc();
    data_.reset(static_cast<T*>(p));
    capacity_ = n;
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  size_t capacity() const { return capacity_; }

  static constexpr size_t kAlign = 64;

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  size_t capacity_ = 0;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::vector<int64_t> shape) : shape_(std::move(shape)) {
    buf_.Reserve(numel() == 0 ? 1 : numel());
    std::memset(buf_.data(), 0, numel() * sizeof(float));
  }
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  const std::vector<int64_t>& shape() const { return shape_; }
  int rank() const { return int(shape_.size()); }
  int64_t dim(int i) const { return shape_[size_t(i)]; }
  size_t numel() const {
    size_t n = 1;
    for (int64_t d : shape_) n *= size_t(d);
    return n;
  }
  float* data() { return buf_.data(); }
  const float* data() const { return buf_.data(); }

  // "[30522, 384]", for error messages.
  std::string ShapeString() const {
    std::string s = "[";
    for (size_t i = 0; i < shape_.size(); ++i) {
      if (i) s += ", ";
      s += std::to_string(shape_[i]);
    }
    return s + "]";
  }

 private:
  std::vector<int64_t> shape_;
  Buffer<float> buf_;
};

}  // namespace orchid
