// FairShare (fair_share.h) alone: bulk flows take turns by tokens, a new flow starts level with
// the least served one, and the requests of one flow share its turn.
#include "worker/fair_share.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace orchid {
namespace {

using Entries = std::vector<std::shared_ptr<PendingRequest>>;

// A bulk request of `flow` (0: its own) with `n` sequences of `len` tokens.
std::shared_ptr<PendingRequest> Bulk(FairShare* share, uint64_t flow, int n, int len,
                                     uint64_t arrival) {
  auto e = std::make_shared<PendingRequest>();
  e->request.sequences.assign(size_t(n), std::vector<int32_t>(size_t(len), 1));
  e->request.scheduling.flow = flow;
  e->arrival = arrival;
  share->Admit(e.get(), /*shares=*/true);
  return e;
}

// How many sequences of each entry a batch of `budget` tokens took. (A batch holds one slice
// per request, so the order of the takes is not visible; their counts are.)
std::vector<size_t> Fill(FairShare* share, const Entries& entries, int64_t budget) {
  BatchFiller batch(budget, budget, 0, /*round_to_budget=*/false);
  share->Fill(entries, &batch);
  std::vector<size_t> taken(entries.size(), 0);
  for (const BatchSlice& s : batch.TakeSlices()) {
    for (size_t i = 0; i < entries.size(); ++i) {
      if (entries[i] == s.entry) taken[i] += s.count;
    }
  }
  return taken;
}

TEST(FairShareTest, FlowsTakeTurnsByTokens) {
  FairShare share;
  // Flow A sends 10-token sequences, flow B 20-token ones: A gets two for each of B's.
  Entries e = {Bulk(&share, 1, 8, 10, 0), Bulk(&share, 2, 8, 20, 1)};
  EXPECT_EQ(Fill(&share, e, 120), (std::vector<size_t>{6, 3}));  // 60 tokens each
}

TEST(FairShareTest, ANewFlowStartsLevelWithTheLeastServed) {
  FairShare share;
  Entries old = {Bulk(&share, 1, 20, 10, 0)};
  EXPECT_EQ(Fill(&share, old, 100), (std::vector<size_t>{10}));  // flow 1 has had 100 tokens
  // A newcomer gets no 100 tokens of catching up (it would take all 4 places): it shares at once.
  Entries both = {old[0], Bulk(&share, 2, 20, 10, 1)};
  EXPECT_EQ(Fill(&share, both, 40), (std::vector<size_t>{2, 2}));
}

TEST(FairShareTest, RequestsOfOneFlowShareItsTurnInArrivalOrder) {
  FairShare share;
  // Two requests of flow 7 against one of flow 8: flow 7's pair gets half, not two thirds, and
  // its second request waits for its first.
  Entries e = {Bulk(&share, 7, 4, 10, 0), Bulk(&share, 7, 4, 10, 1), Bulk(&share, 8, 8, 10, 2)};
  EXPECT_EQ(Fill(&share, e, 80), (std::vector<size_t>{4, 0, 4}));
}

TEST(FairShareTest, AFlowIsForgottenWithItsLastRequest) {
  FairShare share;
  Entries e = {Bulk(&share, 5, 20, 10, 0), Bulk(&share, 6, 10, 10, 1)};
  EXPECT_EQ(Fill(&share, {e[0]}, 50), (std::vector<size_t>{5}));  // flow 5: 50 tokens, 6: none
  share.Retire(*e[1]);                                            // flow 6 leaves, unserved
  // A newcomer starts level with flow 5, the least served flow left. (Were flow 6's turn of 0
  // remembered, the newcomer would start there and take all 4 places.)
  Entries next = {e[0], Bulk(&share, 9, 4, 10, 2)};
  EXPECT_EQ(Fill(&share, next, 40), (std::vector<size_t>{2, 2}));
}

}  // namespace
}  // namespace orchid
