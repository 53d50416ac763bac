// Row assembly: an engine batch's rows back to the requests they came from. A request's
// sequences may span several batches; its answer is assembled in sequence order and delivered
// once its last row arrives, cut to its Matryoshka width (EmbedRequest::dimensions) first.
//
// Thread safety: none; the scheduler thread's alone.
#pragma once

#include <vector>

#include "core/status.h"
#include "engine/lazy_result.h"
#include "worker/pending_request.h"

namespace orchid {

// Keeps the first `dims` values of every row and, with `renormalize`, L2-normalises them (rows
// of norm zero stay zero). Requires 1 <= dims <= m->dim.
void TruncateDimensions(Embeddings* m, int dims, bool renormalize);

// Routes `result` (the batch of `slices`, in slice order) to the slices' requests, answering
// each request whose rows are all in. An engine error, or a result of the wrong number of
// rows, fails every request of the batch. `pooled_with_tokens` (ModelInfo::bge_m3): per-token
// answers also carry each sequence's pooled row.
void DeliverRows(const Result<Embeddings>& result, const std::vector<BatchSlice>& slices,
                 bool pooled_with_tokens);

}  // namespace orchid
