#include "worker/fair_share.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <queue>
#include <tuple>

namespace orchid {

void FairShare::Admit(PendingRequest* entry, bool shares) {
  const Scheduling& s = entry->request.scheduling;
  const uint64_t flow = s.flow != 0 ? s.flow : --next_own_flow_;  // own flows count down from max
  entry->flow = {s.priority, flow};
  if (!shares) return;
  entry->in_flow = true;
  if (entries_[entry->flow]++ != 0) return;
  // A new flow starts level with the least served flow of its priority.
  double start = 0;
  bool any = false;
  for (auto it = turn_.lower_bound({s.priority, 0});
       it != turn_.end() && it->first.first == s.priority; ++it) {
    start = any ? std::min(start, it->second) : it->second;
    any = true;
  }
  turn_[entry->flow] = start;
}

void FairShare::Retire(const PendingRequest& entry) {
  if (!entry.in_flow) return;
  auto it = entries_.find(entry.flow);
  if (it != entries_.end() && --it->second == 0) {
    entries_.erase(it);
    turn_.erase(entry.flow);
  }
}

bool FairShare::Fill(std::span<const std::shared_ptr<PendingRequest>> group, BatchFiller* batch) {
  std::map<FlowKey, std::deque<const std::shared_ptr<PendingRequest>*>> flows;
  for (const auto& e : group) flows[e->flow].push_back(&e);
  using Turn = std::tuple<double, uint64_t, FlowKey>;  // (turn, first arrival, flow)
  std::priority_queue<Turn, std::vector<Turn>, std::greater<Turn>> turns;
  for (const auto& [key, members] : flows) {
    turns.emplace(turn_[key], (*members.front())->arrival, key);
  }
  while (!turns.empty()) {
    const auto [turn, arrival, key] = turns.top();
    turns.pop();
    auto& members = flows[key];
    const std::shared_ptr<PendingRequest>& e = *members.front();
    const double n = double(e->NextTokens());
    if (!batch->Take(e)) return false;
    turn_[key] = turn + n;
    if (!e->has_more()) members.pop_front();
    if (!members.empty()) turns.emplace(turn + n, (*members.front())->arrival, key);
  }
  return true;
}

}  // namespace orchid
