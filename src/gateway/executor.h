// Executor: "run this task on some other thread". The gateway hands CPU work (JSON, tokenizing,
// formatting replies) to a worker pool through it, so HTTP io threads never do that work; tests
// pass one that runs tasks inline.
#pragma once

#include <functional>

namespace orchid {

using Task = std::function<void()>;
using Executor = std::function<void(Task)>;

}  // namespace orchid
