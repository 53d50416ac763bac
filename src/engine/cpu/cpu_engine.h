// CpuEngine: runs a Model on the CPU on its own engine thread.
//
// Submit() queues the batch and returns a LazyResult at once; the engine thread validates the
// batch, runs Model::Forward, pools each sequence (mean / CLS / last token over cu_seqlens) and
// L2-normalises where asked, then completes the result. Batches run in submission order.
// Destruction finishes queued batches, then joins the thread.
#pragma once

#include <memory>

#include "engine/engine.h"

namespace orchid {

struct CpuEngineOptions {
  int num_threads = 0;  // threads for BLAS and ops; 0 = all cores
};

std::unique_ptr<Engine> MakeCpuEngine(std::unique_ptr<Model> model, CpuEngineOptions options = {});

}  // namespace orchid
