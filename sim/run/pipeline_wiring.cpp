#include "run/pipeline_wiring.hpp"

#include <optional>

namespace ironlaw::run::detail {

namespace {

/// Entry and exit tasks of every (rank, microbatch, chunk of the rank, direction), for pipeline
/// sends: direction 0 the forward, 1 the pass that sends gradients back (backward or
/// input_grad). A rank holds the chunks of its stage only (chunk = local chunk · stages +
/// stage), so the table has room for `chunk_count / stages` chunks per rank, not all of them
/// (Megatron's 1T row: 512 ranks × 512 microbatches × 1 chunk, not × 64).
struct SlotTable {
  SlotTable(std::size_t ranks, int microbatches, int chunk_count, int stages)
      : m(microbatches), chunks(chunk_count), pp(stages), held(chunk_count / stages),
        entry(ranks * static_cast<std::size_t>(microbatches) * static_cast<std::size_t>(held) * 2, kNoTask),
        exit(entry.size(), kNoTask), next(entry.size(), entry.size()), first(ranks, entry.size()) {}
  std::size_t index(std::size_t local, int mb, int chunk, Pass pass) const {
    return ((local * static_cast<std::size_t>(m) + static_cast<std::size_t>(mb)) * static_cast<std::size_t>(held) +
            static_cast<std::size_t>(chunk / pp)) * 2 + (pass == Pass::forward ? 0 : 1);
  }
  int m, chunks, pp, held;
  std::vector<TaskId> entry, exit;
  /// The index of the slot the rank runs next (entry.size() after its last), and of each rank's
  /// first slot (entry.size() for a rank with none), for DeepSpeed's blocking sends.
  std::vector<std::size_t> next, first;
  static bool is_backward(std::size_t index) { return index % 2 == 1; }
};

/// Pipeline sends: activations forward to the next chunk, gradients backward to the previous.
///
/// Under DeepSpeed's pipeline engine (parallel.pp_runtime deepspeed) every transfer is a
/// rendezvous on both ranks' streams (deepspeed/runtime/pipe/p2p.py: dist.send / dist.recv, or
/// a broadcast in a two-rank group, without async_op: each NCCL operation is ordered after the
/// rank's earlier work and the rank's later work after it), issued in the order of the
/// TrainSchedule's commands (deepspeed/runtime/pipe/schedule.py, unchanged from 2020 to 2023).
/// Each rank then runs one chain: its passes in schedule order and, between two passes, the
/// transfers of the step that follows the first. After a forward step comes a backward step:
/// SendActivation (the forward's output) then RecvGrad (for that step's backward); after a
/// backward step, a forward step: RecvActivation (for its forward) then SendGrad (the backward's
/// input gradient) — or, when no forward follows (the cool-down), SendGrad then the next
/// backward step's RecvGrad; in the warm-up, a forward step follows a forward step across an
/// idle backward step: SendActivation then RecvActivation. A transfer starts when both the
/// sender's and the receiver's chains reach it, and each chain goes on when it is done.
/// Otherwise (Megatron's and torch's runtimes: asynchronous sends) a send starts when the pass
/// that produced it ends and the pass that consumes it waits for it.
void add_sends(StepBuilder& b, const SlotTable& slots) {
  const Layout& lay = b.layout();
  const std::uint32_t pp_name = b.name("pp send");
  const double bytes = b.costs().activation_bytes / lay.tp;  // Megatron's scatter/gather: 1/tp per TP rank
  const bool blocking = b.world().scenario.parallel.pp_runtime == "deepspeed";
  // DeepSpeed: the transfer out of each slot (its result) and into each slot (its input).
  std::vector<TaskId> out_of(blocking ? slots.entry.size() : 0, kNoTask);
  std::vector<TaskId> into(blocking ? slots.entry.size() : 0, kNoTask);
  for (std::size_t i = 0; i < b.ranks().size(); ++i) {
    const int r = b.ranks()[i];
    const Coord c = lay.coord_of(r);
    for (int chunk = 0; chunk + 1 < slots.chunks; ++chunk) {
      if (lay.stage_of_chunk(chunk) != c[Dim::pp]) continue;
      Coord nc = c;
      nc[Dim::pp] = lay.stage_of_chunk(chunk + 1);
      const int dst = lay.rank_of(nc);
      const auto dl = static_cast<std::size_t>(b.local_of(dst));
      for (int mb = 0; mb < slots.m; ++mb) {
        const auto fwd = [&](std::size_t local, int ch) { return slots.index(local, mb, ch, Pass::forward); };
        const auto bwd = [&](std::size_t local, int ch) { return slots.index(local, mb, ch, Pass::backward); };
        if (dst == r) {  // consecutive chunks on one rank (pp = 1 with virtual stages): no send
          b.depend(slots.exit[fwd(i, chunk)], slots.entry[fwd(dl, chunk + 1)]);
          if (slots.exit[bwd(dl, chunk + 1)] != kNoTask) b.depend(slots.exit[bwd(dl, chunk + 1)], slots.entry[bwd(i, chunk)]);
          continue;
        }
        const TaskId f = b.send(r, dst, bytes, pp_name, {static_cast<int>(i), static_cast<int>(dl)});
        if (blocking) {
          out_of[fwd(i, chunk)] = f;
          into[fwd(dl, chunk + 1)] = f;
        } else {
          b.depend(slots.exit[fwd(i, chunk)], f);
          b.depend(f, slots.entry[fwd(dl, chunk + 1)]);
        }
        if (slots.exit[bwd(dl, chunk + 1)] == kNoTask) continue;  // forward only (an evaluation pass)
        const TaskId g = b.send(dst, r, bytes, pp_name, {static_cast<int>(dl), static_cast<int>(i)});
        if (blocking) {
          out_of[bwd(dl, chunk + 1)] = g;
          into[bwd(i, chunk)] = g;
        } else {
          b.depend(slots.exit[bwd(dl, chunk + 1)], g);
          b.depend(g, slots.entry[bwd(i, chunk)]);
        }
      }
    }
  }
  if (!blocking) return;
  for (std::size_t i = 0; i < b.ranks().size(); ++i) {
    std::size_t slot = slots.first[i];
    if (slot >= slots.entry.size()) continue;
    TaskId at = into[slot];  // the first pass's input (RecvActivation before the first forward)
    const auto chain = [&](TaskId next) {
      if (next == kNoTask) return;
      if (at != kNoTask) b.depend(at, next);
      at = next;
    };
    chain(slots.entry[slot]);
    while (true) {
      at = slots.exit[slot];  // the pass itself: its entry to its exit
      const std::size_t following = slots.next[slot];
      const bool more = following < slots.entry.size();
      if (SlotTable::is_backward(slot) && more && !SlotTable::is_backward(following)) {
        chain(into[following]);  // RecvActivation, then
        chain(out_of[slot]);     // SendGrad
      } else {
        chain(out_of[slot]);               // SendActivation or SendGrad, then
        if (more) chain(into[following]);  // RecvGrad or RecvActivation
      }
      if (!more) break;
      slot = following;
      chain(slots.entry[slot]);
    }
  }
}

/// The parts of a backward-direction pass: the fused backward, or one of its halves.
const PartList& backward_parts(Pass pass, const PartList& fused, const PartList& input_grad,
                               const PartList& weight_grad) {
  if (pass == Pass::input_grad) return input_grad;
  if (pass == Pass::weight_grad) return weight_grad;
  return fused;
}

}  // namespace

void build_pipeline(StepBuilder& b, PassRunner& runner, const PipelineSchedule& schedule) {
  const Layout& lay = b.layout();
  const Costs& costs = b.costs();
  const auto& s = b.world().scenario;
  const int L = s.model.layers;
  const int m = lay.microbatches;
  const std::vector<int>& ranks = b.ranks();
  const std::size_t n = ranks.size();
  UnitTasks& units = b.units();
  b.name("pp send");  // the trace's name table lists it before the layers

  std::vector<std::uint32_t> layer_names;
  for (int l = 0; l < L; ++l) layer_names.push_back(b.name("layer" + std::to_string(l)));
  const std::uint32_t embed_name = b.name("embedding");
  const std::uint32_t head_name = b.name("head");

  const int chunks = lay.chunks();
  SlotTable slots(n, m, chunks, lay.pp);

  // TP groups among the simulated ranks: the local indices of ranks that differ only in tp.
  std::vector<std::vector<int>> tp_groups;
  for (std::size_t i = 0; i < n; ++i) {
    const int r = ranks[i];
    if (lay.coord_of(r)[Dim::tp] != 0) continue;
    std::vector<int> g;
    for (int member : lay.group(r, Dim::tp)) g.push_back(b.local_of(member));
    if (lay.tp > 1) runner.tensor_parallel().add_group(r);
    tp_groups.push_back(std::move(g));
  }

  // DeepSpeed's pipeline engine under TP partitions what it passes between stages
  // (PipelineEngine.is_pipe_partitioned, is_grad_partitioned; deepspeed/runtime/pipe/engine.py):
  // each TP rank sends its 1/tp, and PartitionedTensor.full() all-gathers the whole over the TP
  // group with its copies (Costs::pipe_gather_in/out) — the received activations before a
  // forward (_exec_forward_pass), and before a backward both the stage's own output, kept as
  // its partition since the forward, and the received gradient (_exec_backward_pass); the
  // received part is cloned before a forward, and what is sent is cloned out of the full tensor
  // (Costs::pipe_partition).
  const bool deepspeed = s.parallel.pp_runtime == "deepspeed" && lay.tp > 1 && lay.pp > 1;
  const std::uint32_t partition_name = deepspeed ? b.name("pipe partition") : 0;

  // What one slot lays, item by item: a unit's pass (through a PassRunner::Cursor, part by
  // part), an input-batch wait, the last stage's labels, or DeepSpeed's partition copy and
  // PartitionedTensor.full().
  struct Item {
    enum class Kind : std::uint8_t { pass, data, labels, partition, full };
    Kind kind = Kind::pass;
    const PartList* parts = nullptr;
    EventKind event = EventKind::forward;
    std::uint32_t name = 0;
    int unit = 0;
    PassPart part = PassPart::forward;
  };
  // One slot being laid for one TP group: its items, the cursor of the pass in progress, and
  // what it has laid so far.
  struct SlotRun {
    PipelineSlot slot;
    int chunk = 0;
    std::vector<Item> items;
    std::size_t next = 0;
    std::optional<PassRunner::Cursor> cursor;
    Item current;
    std::vector<TaskId> gates, entry, exit;
    bool done() const { return next == items.size() && !cursor; }
  };

  const bool co_schedule = s.parallel.moe_a2a_overlap;
  for (const auto& group : tp_groups) {
    const int stage = lay.coord_of(ranks[static_cast<std::size_t>(group.front())])[Dim::pp];
    const auto order = schedule.order(stage, lay.pp, m, lay.virtual_stages);
    std::vector<TaskId> gates(group.size(), kNoTask);
    std::vector<std::size_t> previous(group.size(), slots.next.size());  // the member's last slot

    // The items of a slot, in the order its pass runs them.
    const auto items_of = [&](const PipelineSlot& slot, int chunk) {
      std::vector<Item> items;
      const int first = lay.first_layer(chunk);
      const int count = lay.chunk_layers[static_cast<std::size_t>(chunk)];
      const bool first_chunk = chunk == 0, last_chunk = chunk == chunks - 1;
      const int mb = slot.microbatch;
      const auto pass = [&](const PartList& parts, EventKind kind, std::uint32_t name, int unit, PassPart part) {
        if (!parts.empty()) items.push_back({Item::Kind::pass, &parts, kind, name, unit, part});  // e.g. no embedding W pass
      };
      const auto other = [&](Item::Kind kind, EventKind event) { items.push_back({kind, nullptr, event, 0, 0, PassPart::forward}); };
      if (deepspeed && slot.pass == Pass::forward && !first_chunk) {
        other(Item::Kind::partition, EventKind::forward);
        other(Item::Kind::full, EventKind::forward);
      }
      if (deepspeed && slot.pass != Pass::forward && !last_chunk) {
        other(Item::Kind::full, EventKind::backward);  // the stage's own output
        other(Item::Kind::full, EventKind::backward);  // the received gradient
      }
      if (slot.pass == Pass::forward) {
        if (first_chunk && b.world().data.enabled()) other(Item::Kind::data, EventKind::forward);
        if (first_chunk) pass(costs.embed_forward, EventKind::forward, embed_name, L, PassPart::forward);
        for (int l = first; l < first + count; ++l) {
          const LayerCosts& lc = costs.layer(l);
          // The step's first microbatch casts the weights Transformer Engine caches for the rest.
          const PartList& parts = mb == 0 && !lc.first_forward.empty() ? lc.first_forward : lc.forward;
          pass(parts, EventKind::forward, layer_names[static_cast<std::size_t>(l)], l, PassPart::forward);
        }
        // The last stage's labels (pp > 1), needed by the loss in the head's forward.
        if (last_chunk && !first_chunk && b.world().data.enabled()) other(Item::Kind::labels, EventKind::forward);
        if (last_chunk) pass(costs.head_forward, EventKind::forward, head_name, L + 1, PassPart::forward);
      } else {
        const Pass p = slot.pass;
        if (last_chunk)
          pass(backward_parts(p, costs.head_backward, costs.head_input_grad, costs.head_weight_grad), EventKind::backward,
               head_name, L + 1, PassPart::backward);
        for (int l = first + count - 1; l >= first; --l) {
          const auto name = layer_names[static_cast<std::size_t>(l)];
          const LayerCosts& lc = costs.layer(l);
          // The recompute precedes the pass that needs the activations first.
          if (p != Pass::weight_grad) pass(lc.recompute, EventKind::recompute, name, l, PassPart::recompute);
          pass(backward_parts(p, lc.backward, lc.input_grad, lc.weight_grad), EventKind::backward, name, l,
               PassPart::backward);
        }
        if (first_chunk)
          pass(backward_parts(p, costs.embed_backward, costs.embed_input_grad, costs.embed_weight_grad),
               EventKind::backward, embed_name, L, PassPart::backward);
      }
      // What is sent is cloned out of the full tensor first: the output (not from the last
      // stage), the input gradient (not from the first).
      if (deepspeed && (slot.pass == Pass::forward ? !last_chunk : !first_chunk))
        other(Item::Kind::partition, slot.pass == Pass::forward ? EventKind::forward : EventKind::backward);
      return items;
    };

    const auto open = [&](SlotRun& r, const PipelineSlot& slot) {
      r.slot = slot;
      r.chunk = slot.local_chunk * lay.pp + stage;
      r.items = items_of(slot, r.chunk);
      r.gates = gates;
      r.entry.assign(group.size(), kNoTask);
      r.exit.assign(group.size(), kNoTask);
    };
    // Records a pass's first and last tasks in the slot and in the unit tables.
    const auto note = [&](SlotRun& r, const PassRunner::PassTasks& p, int unit) {
      const int mb = r.slot.microbatch;
      for (std::size_t g = 0; g < group.size(); ++g) {
        if (r.entry[g] == kNoTask) r.entry[g] = p.first[g];
        r.exit[g] = p.last[g];
        if (r.slot.pass == Pass::forward) {
          auto& ff = units.at(units.fwd_first, group[g], mb, unit);
          if (ff == kNoTask) ff = p.first[g];
          units.at(units.fwd_last, group[g], mb, unit) = p.last[g];
        } else {
          auto& bf = units.at(units.bwd_first, group[g], mb, unit);
          if (bf == kNoTask) bf = p.first[g];  // the recompute, if any, comes first
          units.at(units.bwd_last, group[g], mb, unit) = p.last[g];
        }
      }
    };
    // A DeepSpeed copy on every member, after what the member waits for.
    const auto copy = [&](SlotRun& r, const TimedOps& ops, EventKind kind) {
      std::vector<TaskId> out(group.size());
      for (std::size_t g = 0; g < group.size(); ++g) {
        out[g] = b.compute(group[g], kind, ops, partition_name);
        if (r.gates[g] != kNoTask) b.depend(r.gates[g], out[g]);
        r.gates[g] = kNoTask;
        if (r.entry[g] == kNoTask) r.entry[g] = out[g];
        r.exit[g] = out[g];
      }
      return out;
    };
    // Lays the slot's next part (or its next item that is not a pass).
    const auto advance = [&](SlotRun& r) {
      if (!r.cursor) {
        if (r.next == r.items.size()) return;
        r.current = r.items[r.next++];
        const Item& it = r.current;
        switch (it.kind) {
          case Item::Kind::data:
            for (int local : group) b.data(local);
            return;
          case Item::Kind::labels:
            for (int local : group)
              if (b.world().data.role(ranks[static_cast<std::size_t>(local)]) == data::GpuRole::labels) b.data(local);
            return;
          case Item::Kind::partition:
            copy(r, costs.pipe_partition, it.event);
            return;
          case Item::Kind::full: {  // PartitionedTensor.full()
            const TaskId ag =
                runner.tensor_parallel().all_gather(group, kNoTask, copy(r, costs.pipe_gather_in, it.event), false);
            std::fill(r.gates.begin(), r.gates.end(), ag);
            copy(r, costs.pipe_gather_out, it.event);
            return;
          }
          case Item::Kind::pass:
            r.cursor.emplace(runner, group, *it.parts, it.event, it.name, r.gates,
                             PassKey{r.slot.microbatch, it.unit, it.part});
            break;
        }
      }
      r.cursor->step();
      if (r.cursor->done()) {
        note(r, r.cursor->tasks(), r.current.unit);
        r.cursor.reset();
      }
    };
    // Closes a laid slot: its entry and exit, for the pipeline sends.
    const auto close = [&](SlotRun& r) {
      if (r.slot.pass == Pass::weight_grad) return;  // nothing waits for a W pass across stages
      for (std::size_t g = 0; g < group.size(); ++g) {
        const auto local = static_cast<std::size_t>(group[g]);
        const std::size_t index = slots.index(local, r.slot.microbatch, r.chunk, r.slot.pass);
        if (previous[g] < slots.next.size()) slots.next[previous[g]] = index;
        if (previous[g] == slots.next.size()) slots.first[local] = index;
        previous[g] = index;
        slots.entry[index] = r.entry[g];
        // A pass whose last part ended in a synchronous collective is done when it is.
        slots.exit[index] = r.gates[g] != kNoTask ? r.gates[g] : r.exit[g];
      }
    };

    for (std::size_t k = 0; k < order.size(); ++k) {
      // parallel.moe_a2a_overlap: a backward and the forward right after it in the stage's
      // order are laid together, their parts alternating on the compute streams, the backward's
      // first (Megatron-core's combined 1F1B, model_chunk_schedule_plan.py: combine_bwd beside
      // the forward's attention, the forward's dispatch beside the backward's expert MLP, the
      // backward's dispatch beside the forward's expert MLP, the forward's combine beside the
      // backward's attention), so that each all-to-all runs while the other pass computes.
      if (co_schedule && order[k].pass == Pass::backward && k + 1 < order.size() &&
          order[k + 1].pass == Pass::forward) {
        SlotRun bwd, fwd;
        open(bwd, order[k]);
        open(fwd, order[k + 1]);
        while (!bwd.done() || !fwd.done()) {
          advance(bwd);
          advance(fwd);
        }
        close(bwd);
        close(fwd);
        // The pair's later slot holds back the next one (its last collective, if any).
        gates = fwd.gates;
        for (std::size_t g = 0; g < group.size(); ++g)
          if (gates[g] == kNoTask) gates[g] = bwd.gates[g];
        ++k;
        continue;
      }
      SlotRun run;
      open(run, order[k]);
      while (!run.done()) advance(run);
      close(run);
      gates = run.gates;
    }
  }

  if (chunks > 1) add_sends(b, slots);
}

}  // namespace ironlaw::run::detail
