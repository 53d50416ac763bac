// Cancellation: "the caller has gone away", shared between whoever notices it (the HTTP server
// when a client disconnects, a gRPC call's context) and whoever holds work for it (the
// scheduler's queue, the gateway's calls to workers).
//
// Two ways to learn of it: cancelled() may be polled from any thread at any time, and
// OnCancel() registers a callback that Cancel() runs once, on the thread that calls Cancel()
// (at once, on the registering thread, if Cancel() already ran). A Cancellation made with a poll
// function (a gRPC context's IsCancelled) also reads as cancelled when that says so; such a
// source never runs callbacks, so only pollers see it.
//
// Thread safety: every method may be called from any thread. Callbacks must be quick and must
// not call back into this object.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <vector>

namespace orchid {

class Cancellation {
 public:
  Cancellation() = default;
  explicit Cancellation(std::function<bool()> poll) : poll_(std::move(poll)) {}
  Cancellation(const Cancellation&) = delete;
  Cancellation& operator=(const Cancellation&) = delete;

  // Marks it cancelled and runs the registered callbacks (the first call only).
  void Cancel();
  bool cancelled() const;
  // Runs `callback` when Cancel() is called, or now if it already was. (Const: holders of a
  // const Cancellation may listen, only its owner cancels.)
  void OnCancel(std::function<void()> callback) const;

 private:
  std::function<bool()> poll_;
  std::atomic<bool> cancelled_{false};
  mutable std::mutex mu_;
  mutable std::vector<std::function<void()>> callbacks_;  // until cancelled
};

}  // namespace orchid
