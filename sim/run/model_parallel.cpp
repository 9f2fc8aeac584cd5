#include "run/model_parallel.hpp"

#include <algorithm>

namespace ironlaw::run::detail {

using comm::CollectiveOp;

TensorParallel::TensorParallel(StepBuilder& b) : b_(b), name_(b.name("tp all_reduce")) {}

void TensorParallel::add_group(int first) { streams_.emplace(first, b_.add_stream("tp" + std::to_string(first))); }

TaskId TensorParallel::all_reduce(const std::vector<int>& group) {
  std::vector<int> global;
  for (int l : group) global.push_back(b_.ranks()[static_cast<std::size_t>(l)]);
  const StreamId stream = streams_.at(global.front());
  return b_.collective(CollectiveOp::all_reduce, std::move(global), b_.costs().activation_bytes, name_, group, stream);
}

ExpertParallel::ExpertParallel(StepBuilder& b) : b_(b), name_(b.name("ep all_to_all")) {}

TaskId ExpertParallel::all_to_all(int local, const PassKey& key, int part) {
  const Layout& lay = b_.layout();
  const int rank = b_.ranks()[static_cast<std::size_t>(local)];
  const std::vector<int> group = lay.ep_group(rank);
  return b_.shared({SharedKind::expert_all_to_all, group.front(), key, part, 0}, [&] {
    std::vector<std::vector<int>> groups;
    if (b_.world().scenario.run.detail == "full") {
      groups.push_back(group);
    } else {
      Coord c = lay.coord_of(rank);
      for (int block = 0; block < lay.dp / lay.ep; ++block) {
        c[Dim::dp] = block * lay.ep;
        groups.push_back(lay.ep_group(lay.rank_of(c)));
      }
    }
    return b_.collectives(CollectiveOp::all_to_all, std::move(groups), b_.costs().all_to_all_bytes, name_,
                          b_.simulated(group));
  });
}

ContextParallel::ContextParallel(StepBuilder& b) : b_(b), name_(b.name("cp ring exchange")) {}

std::pair<TaskId, TaskId> ContextParallel::ring_attention(int local, const Part& part, EventKind kind,
                                                          std::uint32_t name, TaskId gate, TaskId before,
                                                          const PassKey& key, int part_index) {
  const int rank = b_.ranks()[static_cast<std::size_t>(local)];
  const std::vector<int> ring = b_.layout().group(rank, Dim::cp);
  TaskId first = kNoTask, last = kNoTask, previous_exchange = kNoTask;
  for (int step = 0; step < part.ring_steps; ++step) {
    const TaskId block = b_.compute(local, kind, part.ops, name);
    if (gate != kNoTask) b_.depend(gate, block);
    if (previous_exchange != kNoTask) b_.depend(previous_exchange, block);
    if (first == kNoTask) first = block;
    last = block;
    if (step + 1 == part.ring_steps) break;
    const TaskId exchange = b_.shared({SharedKind::ring_exchange, ring.front(), key, part_index, step}, [&] {
      std::vector<std::pair<int, int>> hops;
      for (std::size_t i = 0; i < ring.size(); ++i) hops.emplace_back(ring[i], ring[(i + 1) % ring.size()]);
      const TaskId id = b_.sends(std::move(hops), part.ring_bytes, name_, b_.simulated(ring));
      if (previous_exchange != kNoTask) b_.depend(previous_exchange, id);
      return id;
    });
    // The first block leaves once this rank has computed it (the task before the ring) and
    // any collective it waits on is done; it travels while the local block is computed.
    if (step == 0) {
      if (before != kNoTask) b_.depend(before, exchange);
      if (gate != kNoTask) b_.depend(gate, exchange);
    }
    previous_exchange = exchange;
  }
  return {first, last};
}

PassRunner::PassTasks PassRunner::run(const std::vector<int>& group, const PartList& parts, EventKind kind,
                                      std::uint32_t name, std::vector<TaskId>& gates, const PassKey& key) {
  PassTasks out{std::vector<TaskId>(group.size(), kNoTask), std::vector<TaskId>(group.size(), kNoTask)};
  std::vector<TaskId> async_gates(group.size(), kNoTask);  // collectives beside the current (wgrad) part
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Part& part = parts[i];
    std::vector<TaskId> tasks(group.size());
    for (std::size_t g = 0; g < group.size(); ++g) {
      if (part.ring_steps > 0) {
        const auto [first, last] = cp_.ring_attention(group[g], part, kind, name, gates[g], out.last[g], key, static_cast<int>(i));
        tasks[g] = last;
        if (out.first[g] == kNoTask) out.first[g] = first;
      } else {
        tasks[g] = b_.compute(group[g], kind, part.ops, name);
        if (gates[g] != kNoTask) b_.depend(gates[g], tasks[g]);
        if (out.first[g] == kNoTask) out.first[g] = tasks[g];
      }
      out.last[g] = tasks[g];
    }
    gates = async_gates;  // the part after the async one waits for its collective
    std::fill(async_gates.begin(), async_gates.end(), kNoTask);
    if (part.after == After::all_to_all) {
      // Each TP rank is in its own EP group (ranks that differ in dp only); the group's
      // all-to-all is one task shared with the other TP groups in it.
      for (std::size_t g = 0; g < group.size(); ++g) {
        gates[g] = ep_.all_to_all(group[g], key, static_cast<int>(i));
        b_.depend(tasks[g], gates[g]);
      }
    } else if (part.after != After::none) {
      const TaskId c = tp_.all_reduce(group);
      for (TaskId t : tasks) b_.depend(t, c);
      for (std::size_t g = 0; g < group.size(); ++g) (part.after == After::sync ? gates : async_gates)[g] = c;
    }
  }
  for (std::size_t g = 0; g < group.size(); ++g)
    if (async_gates[g] != kNoTask) gates[g] = async_gates[g];
  return out;
}

}  // namespace ironlaw::run::detail
