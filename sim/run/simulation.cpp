#include "run/simulation.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "run/cpu_budget.hpp"
#include "run/data_parallel.hpp"
#include "run/model_parallel.hpp"
#include "run/pipeline_schedule.hpp"
#include "run/pipeline_wiring.hpp"
#include "run/resource_estimate.hpp"
#include "run/step_builder.hpp"
#include "run/step_costs.hpp"
#include "workload/layer_list.hpp"
#include "workload/step_memory.hpp"

namespace ironlaw::run {

TraceLevel parse_trace_level(const std::string& text) {
  if (text == "none") return TraceLevel::none;
  if (text == "step") return TraceLevel::step;
  if (text == "op") return TraceLevel::op;
  if (text == "flow") return TraceLevel::flow;
  throw std::invalid_argument("trace level must be none, step, op or flow, got \"" + text + "\"");
}

namespace {

/// A schedule's forward slots only, in its order: an evaluation pass (run.forward_only) runs
/// every microbatch forward through the pipeline and nothing backward. The one schedule whose
/// slots break PipelineSchedule's every-microbatch-backward rule; used only to build the step.
class ForwardOnly final : public PipelineSchedule {
 public:
  explicit ForwardOnly(const PipelineSchedule& inner) : inner_(inner) {}
  std::vector<PipelineSlot> order(int stage, int stages, int microbatches, int virtual_stages) const override {
    auto slots = inner_.order(stage, stages, microbatches, virtual_stages);
    std::erase_if(slots, [](const PipelineSlot& s) { return s.pass != Pass::forward; });
    return slots;
  }
  double in_flight(int stage, int stages, int microbatches, int virtual_stages) const override {
    return inner_.in_flight(stage, stages, microbatches, virtual_stages);
  }

 private:
  const PipelineSchedule& inner_;
};

/// Builds one step: each parallelism adds its tasks (pipeline wiring with the tensor, expert
/// and context parallelism of every pass, then data parallelism), and runs it.
StepMeasurement run_step(detail::World& world, const detail::Costs& costs, const PipelineSchedule& schedule,
                                 const detail::DataParallelStrategy& data_parallel, std::int64_t index,
                                 std::size_t& tasks) {
  detail::StepBuilder b(world, costs, index);
  // The trace's name table lists these first, in this order, whatever the layout uses.
  for (const char* name : {"tp all_reduce", "pp send", "input batch", "ep all_to_all", "cp ring exchange"}) b.name(name);
  b.add_compute_streams();
  detail::PassRunner runner(b);
  if (b.world().scenario.run.forward_only) {
    // Forward only: no gradients, so no gradient collectives and no optimizer step.
    detail::build_pipeline(b, runner, ForwardOnly(schedule));
  } else {
    detail::build_pipeline(b, runner, schedule);
    detail::build_data_parallel(b, data_parallel, schedule);
  }
  const StepMeasurement measured = b.run();
  tasks = b.tasks();
  return measured;
}

/// Pipeline rank `stage` as the memory replay sees it: its slots (input-gradient passes free
/// activations as backward passes do; weight-gradient passes hold none), the layers of its
/// chunks (chunk c of the rank is model chunk stage + c·pp) and whether it holds the first and
/// the last pipeline stage.
workload::StageMemory stage_memory(const config::Scenario& s, const PipelineSchedule& schedule, const Layout& lay,
                                   int stage) {
  workload::StageMemory out;
  for (const PipelineSlot& slot : schedule.order(stage, lay.pp, lay.microbatches, lay.virtual_stages)) {
    if (slot.pass == Pass::weight_grad) continue;
    out.passes.push_back({slot.pass == Pass::forward, slot.microbatch, slot.local_chunk});
  }
  for (int c = 0; c < lay.virtual_stages; ++c)
    out.chunk_layers.push_back(lay.chunk_layers[static_cast<std::size_t>(stage + c * lay.pp)]);
  out.first = stage == 0;
  out.last = stage == lay.pp - 1;
  out.microbatches = lay.microbatches;
  out.torch_pipelining = lay.pp > 1 && s.parallel.pp_runtime == "torch";
  return out;
}

workload::AllocatorRules allocator_rules(const config::DeviceSpec::MemoryAllocator& a, bool expandable) {
  auto bytes = [](double b) { return static_cast<std::uint64_t>(std::llround(b)); };
  workload::AllocatorRules r;
  r.min_block = bytes(a.min_block);
  r.small_size = bytes(a.small_size);
  r.small_buffer = bytes(a.small_buffer);
  r.large_buffer = bytes(a.large_buffer);
  r.min_large_alloc = bytes(a.min_large_alloc);
  r.round_large = bytes(a.round_large);
  r.expandable_segments = expandable;
  return r;
}

}  // namespace

SimulationResult simulate_memory(const config::Scenario& s) {
  SimulationResult res;
  res.layout = resolve_layout(s);
  const Layout& lay = res.layout;
  res.gpus = lay.gpus;
  res.hbm_bytes = s.topology.device.hbm_bytes;
  res.allocator_capacity = allocator_capacity(s.topology.device, lay);
  const auto schedule = make_schedule(s.parallel.pp_schedule, lay.microbatch_group);
  const double in_flight = schedule->in_flight(0, lay.pp, lay.microbatches, lay.virtual_stages);
  config::TrainingSpec per_rank = s.training;  // a CP rank holds 1/cp of each sequence
  per_rank.sequence_length = s.training.sequence_length / lay.cp;
  // ZeRO/FSDP shards model state over every replica of the weights, the CP ranks included:
  // torchtitan's fully_shard takes the dp_shard_cp mesh (parallelize_llama.py, 9dec370) and
  // Megatron-LM's distributed optimizer the data-parallel group with context parallelism; the
  // step's FSDP collectives run over the same dp × cp group (data_parallel.cpp).
  const int zero_ranks = lay.dp * lay.cp;
  res.tokens_per_step = lay.tokens_per_step;
  if (s.model.layer_list) {
    // A layer-list model: MFU counts its own FLOPs (3 × the forward GEMM and convolution FLOPs
    // per sample); a "token" is one sample of training.sequence_length tokens (1 for images).
    const auto cost = workload::layer_model_cost(*s.model.layer_list, lay.microbatch_sequences, s.training.precision);
    res.memory = workload::layer_model_memory(cost, s.training, s.parallel.zero, lay.dp);
    const double samples = lay.tokens_per_step / s.training.sequence_length;
    res.model_flops_per_step = cost.model_flops_per_sample() * samples;
    res.model_flops_6n_per_step = 6 * cost.params() * samples;
  } else {
    res.memory = workload::memory_per_gpu(s.model, per_rank, s.parallel, zero_ranks, static_cast<int>(std::ceil(in_flight)));
    const auto fpt = workload::flops_per_token(s.model, s.training.sequence_length);
    res.model_flops_per_step = fpt.palm * lay.tokens_per_step;
    res.model_flops_6n_per_step = fpt.six_n_active * lay.tokens_per_step;  // metrics.hpp: N a token passes through
  }
  res.memory_reserved = res.memory.total();
  const auto& rules = s.topology.device.memory_allocator;
  if (!s.model.layer_list && rules.present()) {
    // Every pipeline rank (their layers, schedules and root modules differ); the peak over all
    // GPUs, as frameworks report it.
    auto allocator = allocator_rules(rules, s.training.expandable_segments);
    // A cudaMalloc past what the allocator may use fails: PyTorch frees its cache and retries.
    allocator.capacity = static_cast<std::uint64_t>(std::max(0.0, res.allocator_capacity));
    res.memory_reserved = 0;
    for (int stage = 0; stage < lay.pp; ++stage) {
      const auto peaks = workload::replay_step_memory(s.model, per_rank, s.parallel, zero_ranks,
                                                      stage_memory(s, *schedule, lay, stage), allocator);
      if (res.memory_peak_stage < 0 || peaks.reserved > res.memory_reserved) {
        res.memory_reserved = peaks.reserved;
        res.memory_peak_stage = stage;
        res.memory_peak_ledger = peaks.ledger;
      }
      res.memory_allocated_peak = std::max(res.memory_allocated_peak, peaks.allocated);
      res.memory_alloc_retries = std::max(res.memory_alloc_retries, peaks.alloc_retries);
      res.memory_by_stage.push_back({peaks.reserved, peaks.allocated});
    }
  }
  res.out_of_memory = res.memory_reserved > res.allocator_capacity;
  // The config layer has checked that the device has a peak for the precision (validate.cpp).
  res.peak_flops_per_gpu = s.topology.device.chip_peak_flops(s.training.precision);
  return res;
}

SimulationResult simulate(const config::Scenario& s, RecordSink& sink, TraceLevel trace) {
  SimulationResult res = simulate_memory(s);
  if (res.out_of_memory) return res;
  if (s.run.forward_only) {
    if (s.parallel.zero >= 3) {
      // ZeRO 3 gathers each unit's weights before its forward: the strategy hangs them on the
      // step's backward too, so a forward-only pass of it is not built.
      throw InputError(s.where("parallel.zero"), "parallel.zero",
                       "an evaluation (forward-only) pass with ZeRO 3 is not simulated by this version");
    }
    // The forward third of the PaLM count (2·N + 4·L·H·Q·T of 6·N + 12·L·H·Q·T per token).
    res.model_flops_per_step /= 3;
    res.model_flops_6n_per_step /= 3;
  }
  const Layout& lay = res.layout;
  // Bounded in CPU time (run/cpu_budget.hpp): at least the step FLOPs at the best GEMM rate
  // of simulated time must pass, a third of it for a forward-only pass.
  const ResourceEstimate size = estimate_resources(s, lay);
  const SimulationCpuBudget budget(s.name, s.run.forward_only ? size.min_simulated_s / 3 : size.min_simulated_s,
                                   size.driver);
  const auto schedule = make_schedule(s.parallel.pp_schedule, lay.microbatch_group);
  config::TrainingSpec per_rank = s.training;  // a CP rank holds 1/cp of each sequence
  per_rank.sequence_length = s.training.sequence_length / lay.cp;

  detail::World world(s, lay, sink, trace);
  const detail::Costs costs = detail::build_costs(s, lay, per_rank, sink, schedule->splits_backward());
  const auto data_parallel = detail::make_data_parallel(s);

  if (trace == TraceLevel::flow) {
    const std::uint32_t net_resource = sink.intern_resource("network");
    const std::uint32_t flow_name = sink.intern_name("flow");
    world.comm.set_flow_trace(comm::FlowTrace{[&sink, net_resource, flow_name](int src, int, double bytes, Time a, Time b) {
      sink.on_event(EventRecord{src, net_resource, EventKind::flow, flow_name, a.count_ns(), b.count_ns(), 0, bytes});
    }});
  }

  double recompute_flops = 0;  // one rank, one microbatch, all layers
  for (int l = 0; l < s.model.layers; ++l)
    for (const auto& p : costs.layer(l).recompute) recompute_flops += p.total_flops();
  // Recomputation per step over all GPUs: every microbatch on every rank of every pipeline.
  res.hardware_flops_per_step = res.model_flops_per_step;
  if (!s.run.forward_only) res.hardware_flops_per_step += recompute_flops * lay.microbatches * lay.gpus / lay.pp;

  // Link utilisation over time: sampled by events of its own while each step runs, left out
  // of the event count (the samplers only read, so no step changes).
  std::optional<LinkSeriesRecorder> links_over_time;
  if (trace != TraceLevel::none) links_over_time.emplace(world.sim, world.net);
  CpuWatchdog watchdog(world.sim);

  const int steps = std::max(1, s.run.steps);
  int step_index = 0;
  try {
    for (int i = 0; i < steps; ++i) {
      step_index = i;
      std::size_t tasks = 0;
      check_cpu_budget(world.sim.now());
      if (links_over_time) links_over_time->resume();
      watchdog.resume();
      const StepMeasurement step = run_step(world, costs, *schedule, *data_parallel, i, tasks);
      watchdog.pause();
      if (links_over_time) links_over_time->pause();
      StepRecord rec = step.record;
      rec.model_flops = res.model_flops_per_step;
      rec.hardware_flops = res.hardware_flops_per_step;
      rec.tokens = lay.tokens_per_step;
      sink.on_step(rec);
      res.steps.push_back(rec);
      res.comm_s += step.comm_s;
      res.optimizer_s += step.optimizer_s;
      res.tasks += tasks;
      res.ranks_simulated = step.ranks;
    }
  } catch (const KeyedTimeOverflow&) {
    throw;
  } catch (const TimeOverflow& e) {
    // Every key was in range, their combination is not: name what sets the step's length.
    throw KeyedTimeOverflow(s.name + ": step " + std::to_string(step_index) + " outlasts the clock (" + e.what() +
                            "); its length is set by " +
                            (size.time_driver.empty() ? std::string("the device's rates") : size.time_driver) +
                            ", and the link bandwidths and latencies (cluster.topology.*)");
  }
  for (const auto& r : res.steps) {
    res.step_time_s += static_cast<double>(r.end_ns - r.start_ns) * 1e-9;
    res.breakdown() += StepBreakdown::of(r);
  }
  const double n = static_cast<double>(res.steps.size());
  for (double* v : {&res.step_time_s, &res.comm_s, &res.optimizer_s}) *v /= n;
  res.breakdown() /= n;
  for (engine::LinkId id = 0; id < world.net.link_count(); ++id) {
    const auto& st = world.net.link_stats(id);
    if (st.bytes > 0) res.links.push_back({world.net.link_name(id), st.bytes, st.busy.seconds()});
  }
  if (links_over_time) res.link_series = links_over_time->series(kLinkSeriesLinks);
  res.events_executed =
      world.sim.events_executed() - (links_over_time ? links_over_time->events() : 0);
  res.flows_started = world.net.flows_started();
  res.flow_records = world.net.records_started();
  res.resolves = world.net.resolves();
  return res;
}

StepStatistics simulate_step(const config::Scenario& scenario, std::uint64_t seed) {
  config::Scenario s = scenario;
  s.seed = seed;
  NullSink sink;
  const SimulationResult r = simulate(s, sink, TraceLevel::none);
  StepStatistics out;
  out.out_of_memory = r.out_of_memory;
  out.mean_s = r.step_time_s;
  for (const auto& step : r.steps) out.durations_s.push_back(static_cast<double>(step.end_ns - step.start_ns) * 1e-9);
  out.breakdown() = r.breakdown();
  out.tokens_per_step = r.tokens_per_step;
  out.model_flops_per_step = r.model_flops_per_step;
  out.peak_flops_per_gpu = r.peak_flops_per_gpu;
  out.gpus = r.gpus;
  return out;
}

}  // namespace ironlaw::run
