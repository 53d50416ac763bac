// RunSlices: the per-input work of one request (tokenizing its texts or pairs) spread over
// slices of its inputs, on the calling thread and an Executor's threads.
//
// Slices are offered to the executor, and the calling thread takes every slice no executor
// thread has claimed yet, so a request never waits on an executor that is busy with other
// requests (it waits only for slices already running).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>

#include "gateway/api_error.h"
#include "gateway/executor.h"

namespace orchid {

// Handles inputs [begin, end); returns the first failing input's error, else adds what it
// counted (tokens) to *count.
using SliceFn = std::function<std::optional<ApiError>(size_t begin, size_t end, int64_t* count)>;

// Runs `fn` over [0, n) in up to `parallelism` slices of at least `min_per_slice` inputs (one
// slice, on this thread, when n is small). Returns the error of the lowest failing slice, or
// nullopt with the slices' counts added to *count. Returns only after every claimed slice ended.
std::optional<ApiError> RunSlices(const Executor& executor, int parallelism, size_t n,
                                  size_t min_per_slice, const SliceFn& fn, int64_t* count);

}  // namespace orchid
