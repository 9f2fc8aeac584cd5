#include "report/planner.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <stdexcept>
#include <new>
#include <numeric>
#include <thread>
#include <tuple>

#include "config/schema.hpp"
#include "core/error.hpp"
#include "core/records.hpp"
#include "core/time.hpp"
#include "report/metrics.hpp"
#include "run/layout.hpp"
#include "run/pipeline_schedule.hpp"
#include "run/resource_estimate.hpp"
#include "run/simulation.hpp"
#include "workload/model_cost.hpp"

namespace ironlaw::report {

namespace {

std::vector<std::string> accepted_choices(const std::string& key) {
  for (const auto& k : config::scenario_key_table())
    if (k.key == key) return k.choices;
  return {};
}

/// The first problem of a refusal as "KEY: message".
std::string first_problem(const std::vector<Diagnostic>& ds, const char* fallback) {
  if (ds.empty()) return fallback;
  return (ds.front().key.empty() ? "" : ds.front().key + ": ") + ds.front().message;
}

/// The key named in a status ("invalid: parallel.tp: ..." → "invalid: parallel.tp").
std::string reason_class(const std::string& status) {
  const auto colon = status.find(": ");
  if (colon == std::string::npos) return status;
  const auto second = status.find(": ", colon + 2);
  if (status.rfind("invalid", 0) == 0 || status.rfind("not simulated", 0) == 0) {
    return second == std::string::npos ? status : status.substr(0, second);
  }
  return status.substr(0, colon);
}

/// Applies the row's layout to `s` (parallel.dp auto, nodes from the GPU count).
void apply(config::Scenario& s, const PlanRow& r) {
  s.nodes = r.gpus / s.topology.node.gpus;
  s.parallel.tp = r.tp;
  s.parallel.pp = r.pp;
  s.parallel.cp = r.cp;
  s.parallel.dp = 0;
  s.parallel.ep = r.ep;
  s.parallel.zero = r.zero;
  s.parallel.microbatch_size = r.microbatch_size;
  s.parallel.pp_schedule = r.schedule;
  s.parallel.virtual_stages = r.virtual_stages;
  s.parallel.sequence_parallel = r.sequence_parallel;
  s.training.activation_checkpointing = r.recompute;
  s.training.precision = r.precision;
}

double sum_time(const std::vector<workload::Op>& ops, const config::DeviceSpec& device, const std::string& precision) {
  double t = 0;
  for (const auto& op : ops) t += workload::op_time(op, device, precision).seconds();
  return t;
}

/// Per-microbatch pass times of one layer kind on one GPU [s].
struct PassTimes {
  double forward = 0, backward = 0, recompute = 0, weight_grad = 0, attention = 0;
};

PassTimes layer_times(const config::Scenario& s, const config::TrainingSpec& per_rank, int sequences, int tp, int layer,
                      int ep, bool expert_folded) {
  const auto& dev = s.topology.device;
  const std::string& prec = s.training.precision;
  PassTimes t;
  // A steady microbatch (the first one of a step also casts the weights TE caches).
  const auto fwd =
      workload::steady_microbatch(workload::layer_forward_ops(s.model, per_rank, sequences, tp, layer, ep, false, expert_folded));
  t.forward = sum_time(fwd, dev, prec);
  for (const auto& op : fwd)
    if (op.role == workload::OpRole::attention_core) t.attention += workload::op_time(op, dev, prec).seconds();
  const auto bwd = workload::layer_backward_ops(s.model, per_rank, sequences, tp, layer, ep, false, expert_folded);
  t.backward = sum_time(bwd, dev, prec);
  for (const auto& op : bwd)
    if (op.role == workload::OpRole::weight_grad) t.weight_grad += workload::op_time(op, dev, prec).seconds();
  t.recompute = sum_time(workload::layer_recompute_ops(s.model, per_rank, sequences, tp, layer, ep, false, expert_folded), dev, prec);
  return t;
}

/// Ring collective over `n` ranks moving `factor`·(n−1)/n·bytes per rank at `bw` [s]
/// (all-reduce: factor 2; reduce-scatter and all-gather: 1).
double ring_s(double bytes, int n, double bw, double factor, double step_latency_s) {
  if (n <= 1 || bytes <= 0) return 0;
  return factor * (n - 1.0) / n * bytes / bw + factor * (n - 1.0) * step_latency_s;
}

/// Per-GPU bandwidth of a group of `n` ranks `stride` apart: NVLink when the group fits in one
/// node, else the node's NIC bandwidth shared by its GPUs.
double group_bw(const config::TopologySpec& t, int stride, int n) {
  if (static_cast<long long>(stride) * n <= t.node.gpus) return t.node.nvlink.bandwidth;
  return t.node.nic.bandwidth * t.node.nics / t.node.gpus;
}

int stride_of(const config::Scenario& s, const std::string& dim) {
  int stride = 1;
  for (const auto& d : s.parallel.order) {
    if (d == dim) return stride;
    stride *= d == "tp" ? s.parallel.tp : d == "cp" ? s.parallel.cp : d == "pp" ? s.parallel.pp : s.parallel.dp;
  }
  return stride;
}

/// The run layer's per-term memory per GPU for `s` and `lay`: workload::memory_per_gpu with
/// the schedule's activations in flight on stage 0 and the model state sharded over dp × cp,
/// as run::simulate_memory() computes SimulationResult::memory. Where the device has allocator
/// rules the simulation compares the allocator replay of every stage with HBM instead, which
/// can be lower or higher (plan() checks the candidates it may simulate with that replay).
double memory_of(const config::Scenario& s, const run::Layout& lay) {
  const double in_flight = run::in_flight_microbatches(s.parallel.pp_schedule, 0, lay.pp, lay.microbatches,
                                                       lay.virtual_stages, lay.microbatch_group);
  config::TrainingSpec per_rank = s.training;
  per_rank.sequence_length = s.training.sequence_length / lay.cp;
  return workload::memory_per_gpu(s.model, per_rank, s.parallel, lay.dp * lay.cp, static_cast<int>(std::ceil(in_flight)))
      .total();
}

/// A row pruned by memory_of() alone (its status as enumerate_layouts() writes it).
bool over_by_static_memory(const PlanRow& r) { return r.status.rfind("out of memory: ", 0) == 0; }

std::vector<int> powers_of_two_up_to(int limit) {
  std::vector<int> out;
  for (int v = 1; v <= limit; v *= 2) out.push_back(v);
  return out;
}

/// Objective of a row under `q` (smaller is better), from predicted or simulated figures.
std::tuple<int, double, double> objective(const PlanQuestion& q, bool meets, int gpus, double days, double cost) {
  switch (q.goal) {
    case PlanQuestion::Goal::deadline:
      return meets ? std::tuple<int, double, double>{0, gpus, days} : std::tuple<int, double, double>{1, days, gpus};
    case PlanQuestion::Goal::budget:
      return meets ? std::tuple<int, double, double>{0, days, cost} : std::tuple<int, double, double>{1, cost, days};
    case PlanQuestion::Goal::fastest:
      break;
  }
  return {0, days, gpus};
}

double days_of(const config::Scenario& s, double step_s, double tokens_per_step) {
  if (!(s.training.tokens > 0) || !(step_s > 0)) return 0;
  return wall_seconds(steps_for_tokens(s.training.tokens, tokens_per_step), step_s) / 86400.0;
}

bool meets(const PlanQuestion& q, double days, double cost) {
  if (q.goal == PlanQuestion::Goal::deadline) return days <= q.deadline_days;
  if (q.goal == PlanQuestion::Goal::budget) return cost <= q.budget_usd;
  return true;
}

/// The identity of a row's step timeline: its GPU count and layout, with ZeRO 2 written as 1.
/// The run layer reads parallel.zero only as 0 (all-reduce buckets), 1 or 2 (one sharded-
/// optimizer strategy, run/data_parallel.cpp, and the optimizer over 1/dp of the parameters,
/// run/step_costs.cpp) or 3 (FSDP gathers, run/model_parallel.cpp): ZeRO 1 and 2 of one layout
/// are the same step event by event; only their memory differs.
std::string timeline_key(const PlanRow& r) {
  PlanRow t = r;
  if (t.zero == 2) t.zero = 1;
  return std::to_string(t.gpus) + " " + t.layout();
}

/// The scenario simulate_row() runs for `row`: one step without a data pipeline (nothing
/// random and nothing carried between steps, so every step is the first), else at most 2.
config::Scenario simulated_scenario(const config::Scenario& base, const PlanRow& row) {
  config::Scenario s = scenario_for(base, row);
  s.run.mode = "steps";
  s.run.steps = s.data.storage_bandwidth_per_node > 0 ? std::min(std::max(1, s.run.steps), 2) : 1;
  return s;
}

/// Fills `r`'s simulated figures from `res` (a simulation of `s`).
void fill_simulated(const config::Scenario& s, const PlanQuestion& q, const run::SimulationResult& res, PlanRow& r) {
  r.memory_bytes = res.memory_reserved;  // what the simulation compared with HBM
  r.step_time_s = res.step_time_s;
  r.breakdown() = res.breakdown();
  r.mfu = utilisation(res.model_flops_per_step, res.step_time_s, res.peak_flops_per_gpu, res.gpus);
  r.days = days_of(s, res.step_time_s, res.tokens_per_step);
  r.gpu_hours = r.days * 24 * r.gpus;
  r.cost_usd = r.gpu_hours * q.price_per_gpu_hour;
  r.meets = meets(q, r.days > 0 ? r.days : r.step_time_s, r.cost_usd);
  r.status = "ok";
}

/// Gives `r` the step of `rep` (same timeline_key, simulated "ok") with its own memory, when
/// `r`'s own memory fits (run::simulate_memory, the check simulate() starts with). False when
/// it does not: the caller simulates `r` itself. O(allocator replay).
bool share_timeline(const config::Scenario& base, const PlanQuestion& q, const PlanRow& rep, PlanRow& r) {
  try {
    const config::Scenario s = simulated_scenario(base, r);
    run::SimulationResult res = run::simulate_memory(s);
    if (res.out_of_memory) return false;
    res.step_time_s = rep.step_time_s;
    res.breakdown() = rep.breakdown();
    fill_simulated(s, q, res, r);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

void put_field(std::string& out, const std::string& field) { out += std::to_string(field.size()) + ":" + field; }

std::string bits_of(double v) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return std::to_string(bits);
}

}  // namespace

SimulationWork simulate_row(const config::Scenario& base, const PlanQuestion& q, PlanRow& r) {
  SimulationWork work;
  try {
    const config::Scenario s = simulated_scenario(base, r);
    NullSink sink;
    const run::SimulationResult res = run::simulate(s, sink, run::TraceLevel::none);
    if (res.out_of_memory) {
      r.status = "failed: out of memory in the simulation";
      return work;
    }
    work = {res.events_executed, res.flows_started, res.flow_records, res.resolves, res.tasks};
    fill_simulated(s, q, res, r);
  } catch (const InputError& e) {
    r.status = "failed: " + first_problem(e.diagnostics(), e.what());
  } catch (const TimeOverflow& e) {
    r.status = std::string("failed: the simulated clock overflowed: ") + e.what();
  } catch (const std::bad_alloc&) {
    r.status = "failed: out of host memory";
  }
  return work;
}

std::string encode_simulated(const PlanRow& r) {
  std::string out;
  put_field(out, r.status);
  for (const double v : {r.memory_bytes, r.step_time_s, r.compute_s, r.exposed_comm_s, r.bubble_s, r.data_stall_s,
                         r.other_s, r.mfu, r.days, r.gpu_hours, r.cost_usd})
    put_field(out, bits_of(v));
  put_field(out, r.meets ? "1" : "0");
  return out;
}

void decode_simulated(const std::string& in, PlanRow& r) {
  std::size_t at = 0;
  const auto take = [&] {
    const std::size_t colon = in.find(':', at);
    if (colon == std::string::npos || colon == at) throw std::runtime_error("a gathered plan row is truncated");
    std::size_t n = 0;
    for (std::size_t i = at; i < colon; ++i) {
      if (in[i] < '0' || in[i] > '9' || n > in.size()) throw std::runtime_error("a gathered plan row is damaged");
      n = n * 10 + static_cast<std::size_t>(in[i] - '0');
    }
    if (n > in.size() - colon - 1) throw std::runtime_error("a gathered plan row is truncated");
    at = colon + 1 + n;
    return in.substr(colon + 1, n);
  };
  const auto number = [&] {
    const std::string text = take();
    std::size_t used = 0;
    std::uint64_t bits = 0;
    try {
      bits = std::stoull(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != text.size()) throw std::runtime_error("a gathered plan row is damaged");
    double v = 0;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  };
  r.status = take();
  for (double* v : {&r.memory_bytes, &r.step_time_s, &r.compute_s, &r.exposed_comm_s, &r.bubble_s, &r.data_stall_s,
                    &r.other_s, &r.mfu, &r.days, &r.gpu_hours, &r.cost_usd})
    *v = number();
  r.meets = take() == "1";
  if (at != in.size()) throw std::runtime_error("a gathered plan row has trailing bytes");
}

std::string PlanRow::layout() const {
  char buf[200];
  std::snprintf(buf, sizeof buf, "tp%d pp%d cp%d dp%d ep%d z%d mb%d %s%s%s %s %s", tp, pp, cp, dp, ep, zero,
                microbatch_size, schedule.c_str(), schedule == "interleaved" ? ("x" + std::to_string(virtual_stages)).c_str() : "",
                sequence_parallel ? " sp" : "", recompute.c_str(), precision.c_str());
  return buf;
}

PlanSpace resolve_space(const config::Scenario& base, const PlanSpace& in) {
  PlanSpace s = in;
  const auto& m = base.model;
  const int node_gpus = base.topology.node.gpus;
  if (s.gpus.empty()) s.gpus = {base.gpus()};
  if (s.tp.empty()) s.tp = powers_of_two_up_to(node_gpus);
  if (s.pp.empty()) {
    const int limit = std::min(m.layers, 32);
    for (int p = 1; p <= limit; ++p)
      if ((p & (p - 1)) == 0 || m.layers % p == 0) s.pp.push_back(p);
  }
  if (s.cp.empty()) s.cp = {1, 2};
  if (s.ep.empty()) {
    s.ep = {1};
    if (m.experts > 1)
      for (int e = 2; e <= std::min(m.experts, 64); e *= 2)
        if (m.experts % e == 0) s.ep.push_back(e);
  }
  if (s.zero.empty()) s.zero = {0, 1, 2, 3};
  if (s.microbatch_size.empty()) s.microbatch_size = {1, 2};
  if (s.virtual_stages.empty()) s.virtual_stages = {2, 4};
  if (s.schedules.empty()) s.schedules = accepted_choices("parallel.pp_schedule");
  if (s.recompute.empty()) s.recompute = accepted_choices("training.activation_checkpointing");
  if (s.precisions.empty()) {
    for (const char* p : {"bf16", "fp8"})
      if (base.topology.device.peak_flops.count(p)) s.precisions.push_back(p);
  }
  if (s.sequence_parallel.empty()) s.sequence_parallel = {0, 1};
  return s;
}

PlanPrediction predict_step(const config::Scenario& s) {
  const run::Layout lay = run::resolve_layout(s);
  const auto& topo = s.topology;
  const double step_latency = topo.comm.step_latency.seconds();
  config::TrainingSpec per_rank = s.training;
  per_rank.sequence_length = s.training.sequence_length / lay.cp;
  const int seqs = lay.microbatch_sequences;
  const double bpe = workload::bytes_per_element(s.training.precision);
  const double tokens = static_cast<double>(seqs) * per_rank.sequence_length;

  // The worst stage's layers: the largest chunk, times the virtual stages.
  const int chunk_layers = *std::max_element(lay.chunk_layers.begin(), lay.chunk_layers.end());
  const int stage_layers = chunk_layers * lay.virtual_stages;
  const bool moe = s.model.experts > 1;
  PassTimes per_layer = layer_times(s, per_rank, seqs, lay.tp, 0, lay.ep, lay.expert_folded);
  if (moe && s.model.dense_layers < s.model.layers) {
    const PassTimes moe_layer = layer_times(s, per_rank, seqs, lay.tp, s.model.dense_layers, lay.ep, lay.expert_folded);
    const double share = static_cast<double>(s.model.layers - s.model.dense_layers) / s.model.layers;
    per_layer.forward += share * (moe_layer.forward - per_layer.forward);
    per_layer.backward += share * (moe_layer.backward - per_layer.backward);
    per_layer.recompute += share * (moe_layer.recompute - per_layer.recompute);
    per_layer.weight_grad += share * (moe_layer.weight_grad - per_layer.weight_grad);
    per_layer.attention += share * (moe_layer.attention - per_layer.attention);
  }
  const double head = sum_time(workload::head_forward_ops(s.model, per_rank, seqs, lay.tp), topo.device,
                               s.training.precision) +
                      sum_time(workload::head_backward_ops(s.model, per_rank, seqs, lay.tp), topo.device,
                               s.training.precision) +
                      sum_time(workload::logit_metric_ops(s.model, per_rank, seqs, lay.tp), topo.device,
                               s.training.precision);  // the loop's metrics (training.logit_metrics)
  const double mb_compute = stage_layers * (per_layer.forward + per_layer.backward + per_layer.recompute) + head;

  // Blocking collectives inside a pass: TP (2 all-reduces of the activations forward, 2
  // backward, 2 more when full recompute repeats the forward; reduce-scatter + all-gather under
  // sequence parallelism move the same bytes), EP (dispatch + combine forward and backward).
  double mb_comm = 0;
  const double act_bytes = tokens * s.model.hidden * bpe;
  const int tp_allreduces = 4 + (s.training.activation_checkpointing == "full" ? 2 : 0);
  mb_comm += stage_layers * tp_allreduces *
             ring_s(act_bytes, lay.tp, group_bw(topo, stride_of(s, "tp"), lay.tp), 2, step_latency);
  if (moe && lay.ep > 1) {
    const auto a2a = workload::moe_all_to_all_bytes(s.model, per_rank, seqs, lay.ep);
    const double bw = group_bw(topo, stride_of(s, "dp"), lay.ep);
    const double moe_layers = static_cast<double>(s.model.layers - s.model.dense_layers) / lay.pp;
    mb_comm += moe_layers * 2 * (a2a.dispatch_bytes + a2a.combine_bytes) / bw;
  }
  // CP: the ring passes key/value blocks while attention runs; what exceeds attention is exposed.
  if (lay.cp > 1) {
    const int head_dim = s.model.head_dim > 0 ? s.model.head_dim : s.model.hidden / s.model.heads;
    const double kv_bytes = tokens * 2.0 * s.model.kv_heads * head_dim / lay.tp * bpe;
    const double ring = (lay.cp - 1.0) * kv_bytes / group_bw(topo, stride_of(s, "cp"), lay.cp);
    mb_comm += stage_layers * (std::max(0.0, ring - per_layer.attention) + std::max(0.0, 2 * ring - 2.5 * per_layer.attention));
  }
  // Pipeline sends of the activations between stages, forward and backward.
  const double send = lay.pp > 1 ? 2 * act_bytes / group_bw(topo, stride_of(s, "pp"), lay.pp) : 0;
  const double mb = mb_compute + mb_comm + send;

  PlanPrediction out;
  out.compute_s = lay.microbatches * mb_compute;
  const double warmup = lay.pp > 1 ? (lay.pp - 1.0) / lay.virtual_stages : 0;
  out.bubble_s = warmup * mb;
  if (s.parallel.pp_schedule == "zb-h1") out.bubble_s = warmup * std::max(0.0, mb - 2 * stage_layers * per_layer.weight_grad);

  // Data parallelism: gradient (and ZeRO-3 parameter) traffic over the DP group, overlapped
  // with the backward of the last microbatch (ZeRO-3: with every pass it gathers for).
  const auto params = workload::count_params(s.model);
  const double local =
      (params.total() - params.routed_experts + params.routed_experts / workload::expert_split(s.parallel)) / (lay.tp * lay.pp);
  const double pbytes = local * workload::stored_parameter_bytes(s.training);
  const int dpn = lay.dp * lay.cp;  // gradients are reduced over DP × CP
  const double dp_bw = group_bw(topo, std::min(stride_of(s, "dp"), stride_of(s, "cp")), dpn);
  double dp_comm = 0, overlap = 0;
  switch (s.parallel.zero) {
    case 0:
    case 1:
      dp_comm = ring_s(pbytes, dpn, dp_bw, 2, step_latency);
      overlap = stage_layers * per_layer.backward;
      break;
    case 2:
      dp_comm = 2 * ring_s(pbytes, dpn, dp_bw, 1, step_latency);
      overlap = stage_layers * per_layer.backward;
      break;
    default:
      dp_comm = lay.microbatches * 3 * ring_s(pbytes, dpn, dp_bw, 1, step_latency);
      overlap = out.compute_s;
      break;
  }
  out.exposed_comm_s = lay.microbatches * (mb_comm + send) + std::max(0.0, dp_comm - overlap);
  const double opt_params = s.parallel.zero >= 1 ? local / dpn : local;
  out.optimizer_s = workload::op_time(workload::optimizer_op(s.training, opt_params), topo.device, s.training.precision).seconds();
  out.step_s = out.compute_s + out.exposed_comm_s + out.bubble_s + out.optimizer_s;
  return out;
}

config::Scenario scenario_for(const config::Scenario& base, const PlanRow& row) {
  config::Scenario s = base;
  apply(s, row);
  auto problems = config::recheck_scenario(s);
  if (!problems.empty()) throw InputError(std::move(problems));
  return s;
}

std::vector<PlanRow> enumerate_layouts(const config::Scenario& base, const PlanSpace& in) {
  const PlanSpace sp = resolve_space(base, in);
  std::vector<PlanRow> rows;
  config::Scenario scratch = base;
  scratch.resolved_yaml.clear();
  // The loader's and run layer's verdict depends on the structure alone (GPUs, degrees,
  // microbatch, schedule): checked once per structure.
  for (const int gpus : sp.gpus)
    for (const int tp : sp.tp)
      for (const int pp : sp.pp)
        for (const int cp : sp.cp)
          for (const int ep : sp.ep)
            for (const int mbs : sp.microbatch_size)
              for (const auto& sched : sp.schedules) {
                // With one stage every schedule is the same order: 1f1b stands for them all.
                if (pp == 1 && sched != "1f1b" && std::find(sp.schedules.begin(), sp.schedules.end(), "1f1b") != sp.schedules.end())
                  continue;
                const std::vector<int> vs = sched == "interleaved" ? sp.virtual_stages : std::vector<int>{1};
                for (const int v : vs) {
                  PlanRow shape;
                  shape.gpus = gpus;
                  shape.nodes = gpus / base.topology.node.gpus;
                  shape.tp = tp, shape.pp = pp, shape.cp = cp, shape.ep = ep, shape.microbatch_size = mbs;
                  shape.schedule = sched, shape.virtual_stages = v;
                  std::string verdict;
                  run::Layout lay;
                  shape.zero = sp.zero.front();
                  shape.recompute = sp.recompute.front();
                  shape.precision = sp.precisions.empty() ? base.training.precision : sp.precisions.front();
                  config::Scenario& s = scratch;
                  s = base;
                  apply(s, shape);
                  const auto problems = config::recheck_scenario(s);
                  if (!problems.empty()) {
                    verdict = "invalid: " + first_problem(problems, "refused");
                  } else {
                    shape.dp = s.parallel.dp;
                  }
                  for (const int zero : sp.zero)
                    for (const int seqpar : sp.sequence_parallel) {
                      if (seqpar && tp == 1) continue;  // sequence parallelism splits over TP
                      for (const auto& rc : sp.recompute)
                        for (const auto& prec : sp.precisions) {
                          PlanRow r = shape;
                          r.zero = zero;
                          r.sequence_parallel = seqpar != 0;
                          r.recompute = rc;
                          r.precision = prec;
                          apply(s, r);
                          if (!verdict.empty()) {
                            // The shape failed with the first value of the inner axes; the
                            // check may turn on one of them (parallel.async_tp needs
                            // sequence parallelism): this row is checked with its own values.
                            const auto own = config::recheck_scenario(s);
                            if (!own.empty()) {
                              r.status = "invalid: " + first_problem(own, "refused");
                              rows.push_back(std::move(r));
                              continue;
                            }
                            r.dp = s.parallel.dp;
                          }
                          s.parallel.dp = r.dp;
                          try {
                            lay = run::resolve_layout(s);
                          } catch (const InputError& e) {
                            r.status = "not simulated: " + first_problem(e.diagnostics(), e.what());
                            rows.push_back(std::move(r));
                            continue;
                          }
                          r.memory_bytes = memory_of(s, lay);
                          const double capacity = run::allocator_capacity(s.topology.device, lay);
                          if (r.memory_bytes > capacity) {
                            char buf[96];
                            std::snprintf(buf, sizeof buf, "out of memory: %.1f GiB per GPU > %.1f GiB",
                                          r.memory_bytes / 1073741824.0, capacity / 1073741824.0);
                            r.status = buf;
                            rows.push_back(std::move(r));
                            continue;
                          }
                          if (sp.max_simulation_bytes > 0) {
                            const double host = run::estimate_resources(s, lay).bytes;
                            if (host > sp.max_simulation_bytes) {
                              char buf[160];
                              std::snprintf(buf, sizeof buf,
                                            "not simulated: host memory: its simulation would need about %.3g GiB, "
                                            "above --max-memory %.3g GiB",
                                            host / 1073741824.0, sp.max_simulation_bytes / 1073741824.0);
                              r.status = buf;
                              rows.push_back(std::move(r));
                              continue;
                            }
                          }
                          r.status = "predicted";
                          rows.push_back(std::move(r));
                        }
                    }
                }
              }
  return rows;
}

PlanResult plan(const config::Scenario& base, const PlanSpace& space, const PlanQuestion& q, std::size_t top_k,
                unsigned threads, const SimulateRows& simulate_rows) {
  PlanResult out;
  std::vector<PlanRow> rows = enumerate_layouts(base, space);
  out.enumerated = rows.size();

  // Predict every survivor; identical pass shapes share their op timings through the workload
  // layer's pure functions, so each prediction is O(ops of a layer).
  // Rows over HBM by the per-term total are predicted too: the simulation's own check (the
  // allocator replay) decides for those that could be chosen (below).
  // A pruned row counted by its status: its reason, and invalid, not simulated or out of memory.
  auto count_pruned = [&](const PlanRow& r) {
    out.prune_reasons[reason_class(r.status)]++;
    if (r.status.rfind("invalid", 0) == 0) ++out.pruned_invalid;
    else if (r.status.rfind("not simulated", 0) == 0) ++out.pruned_not_simulated;
    else ++out.pruned_memory;
  };
  std::vector<std::size_t> alive;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    PlanRow& r = rows[i];
    if (over_by_static_memory(r)) {
      alive.push_back(i);
      continue;
    }
    if (r.status != "predicted") {
      count_pruned(r);
      continue;
    }
    alive.push_back(i);
  }
  {
    std::atomic<std::size_t> next{0};
    auto work = [&] {
      config::Scenario s = base;
      for (std::size_t j = next++; j < alive.size(); j = next++) {
        PlanRow& r = rows[alive[j]];
        apply(s, r);
        s.parallel.dp = r.dp;
        r.predicted = predict_step(s);
        const double tokens_per_step = s.training.global_batch_tokens;
        r.predicted_days = days_of(s, r.predicted.step_s, tokens_per_step);
      }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < std::max(1u, threads); ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
  }
  auto predicted_key = [&](const PlanRow& r) {
    const double gpu_h = r.predicted_days * 24 * r.gpus;
    const double cost = gpu_h * q.price_per_gpu_hour;
    const double days = r.predicted_days > 0 ? r.predicted_days : r.predicted.step_s;
    return std::make_tuple(objective(q, meets(q, days, cost), r.gpus, days, cost), r.predicted.step_s);
  };
  // Stable sort: ties keep the enumeration order, so the ranking is deterministic.
  std::stable_sort(alive.begin(), alive.end(),
                   [&](std::size_t a, std::size_t b) { return predicted_key(rows[a]) < predicted_key(rows[b]); });

  // The checks the simulation starts with — the loader's, with the row's own values, and the
  // memory check (run::simulate_memory: where the device has allocator rules, the allocator
  // replay of every pipeline stage against HBM) — in predicted order, until every GPU count
  // has top_k rows that pass them: the rows the choice below can take. The per-term total of
  // the enumeration neither bounds the replay from above nor from below (Llama 3 70B on
  // 1,024–8,192 H100s: 1,434 layouts over HBM by the total fit the replay, up to 1.37 × HBM by
  // the total; 248 under it do not), and a replay costs ~3 ms, too much for every candidate. Further down the ranking, a row over HBM by the total stays pruned (its
  // status says by which estimate) and the others stay predicted, unchecked.
  {
    std::map<int, std::size_t> fitting, counts;
    for (std::size_t i : alive) counts.emplace(rows[i].gpus, 0);
    std::size_t complete = 0;  // GPU counts with top_k checked rows that fit
    std::vector<std::size_t> kept;
    for (std::size_t i : alive) {
      PlanRow& r = rows[i];
      if (complete == counts.size() || fitting[r.gpus] >= top_k) {
        if (over_by_static_memory(r)) {
          count_pruned(r);
        } else {
          kept.push_back(i);
        }
        continue;
      }
      // The loader's checks with the row's own values (scenario_for): the enumeration checked
      // its shape with the first value of each inner axis, which passes rows an inner value
      // makes invalid (training.fp8_all_gather with a bf16 row).
      config::Scenario s;
      try {
        s = scenario_for(base, r);
      } catch (const InputError& e) {
        r.status = "invalid: " + first_problem(e.diagnostics(), e.what());
        count_pruned(r);
        continue;
      }
      const run::SimulationResult m = run::simulate_memory(s);
      ++out.memory_replayed;
      if (m.out_of_memory) {
        char buf[128];
        std::snprintf(buf, sizeof buf, "out of memory: %.1f GiB per GPU reserved (the simulation's check) > %.1f GiB",
                      m.memory_reserved / 1073741824.0, m.allocator_capacity / 1073741824.0);
        r.status = buf;
        count_pruned(r);
        continue;
      }
      if (over_by_static_memory(r)) {
        r.status = "predicted";
        ++out.memory_rescued;
      }
      r.memory_bytes = m.memory_reserved;  // the figure the check compared with HBM
      kept.push_back(i);
      if (++fitting[r.gpus] == top_k) ++complete;
    }
    alive = std::move(kept);
  }
  out.survivors = alive.size();
  for (std::size_t j = 0; j < alive.size(); ++j) rows[alive[j]].predicted_rank = static_cast<int>(j + 1);

  // Which K to simulate. For a deadline the answer turns on one GPU count, and a predictor a
  // few per cent optimistic would spend every simulation on a count that then misses: half of
  // the K go to the smallest count predicted to meet the deadline, the rest to the next counts
  // up, each by predicted rank. Otherwise the best K by predicted rank.
  const std::size_t k = std::min(top_k, alive.size());
  if (q.goal == PlanQuestion::Goal::deadline && k > 1) {
    std::vector<int> counts;
    for (std::size_t i : alive) {
      const PlanRow& r = rows[i];
      if (meets(q, r.predicted_days, 0) && std::find(counts.begin(), counts.end(), r.gpus) == counts.end())
        counts.push_back(r.gpus);
    }
    std::sort(counts.begin(), counts.end());
    std::vector<std::size_t> chosen;
    std::vector<bool> taken(alive.size(), false);
    for (std::size_t c = 0; c < counts.size() && chosen.size() < k; ++c) {
      const std::size_t quota = c == 0 ? (k + 1) / 2 : k;
      std::size_t got = 0;
      for (std::size_t j = 0; j < alive.size() && got < quota && chosen.size() < k; ++j) {
        if (taken[j] || rows[alive[j]].gpus != counts[c]) continue;
        taken[j] = true;
        chosen.push_back(alive[j]);
        ++got;
      }
    }
    for (std::size_t j = 0; j < alive.size() && chosen.size() < k; ++j) {
      if (!taken[j]) {
        taken[j] = true;
        chosen.push_back(alive[j]);
      }
    }
    std::vector<std::size_t> rest;
    for (std::size_t j = 0; j < alive.size(); ++j)
      if (!taken[j]) rest.push_back(alive[j]);
    // `alive` becomes: the chosen in predicted-rank order, then the others.
    std::stable_sort(chosen.begin(), chosen.end(),
                     [&](std::size_t a, std::size_t b) { return rows[a].predicted_rank < rows[b].predicted_rank; });
    alive = chosen;
    alive.insert(alive.end(), rest.begin(), rest.end());
  }

  // Simulate the chosen K: one simulation per distinct step timeline (ZeRO 1 and 2 of one
  // layout build the same step in the run layer; see timeline_key), the others take its figures.
  // The representative of a timeline is its member with the least memory (ZeRO 2 before 1, by
  // the simulation's own memory check, which every row that can be chosen has had): when any
  // member fits that check, it does, so the others never wait for a step simulation of their
  // own after the pool.
  std::vector<PlanRow> reps;
  std::vector<std::size_t> rep_of(k), rep_source;  // rep_source: the index in `rows` each rep stands for
  {
    std::map<std::string, std::size_t> seen;
    for (std::size_t j = 0; j < k; ++j) {
      const PlanRow& r = rows[alive[j]];
      const auto [it, fresh] = seen.emplace(timeline_key(r), reps.size());
      if (fresh) {
        reps.push_back(r);
        rep_source.push_back(alive[j]);
      } else if (r.memory_bytes < reps[it->second].memory_bytes) {
        reps[it->second] = r;
        rep_source[it->second] = alive[j];
      }
      rep_of[j] = it->second;
    }
  }
  const std::function<void(PlanRow&)> one = [&](PlanRow& r) { simulate_row(base, q, r); };
  if (simulate_rows) {
    if (!simulate_rows(reps, one)) return PlanResult{};
  } else {
    std::atomic<std::size_t> next{0};
    auto work = [&] {
      for (std::size_t j = next++; j < reps.size(); j = next++) one(reps[j]);
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < std::max(1u, threads); ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
  }
  out.step_simulations = reps.size();
  for (std::size_t j = 0; j < k; ++j) {
    PlanRow& r = rows[alive[j]];
    const PlanRow& rep = reps[rep_of[j]];
    if (alive[j] == rep_source[rep_of[j]]) {
      r = rep;
      continue;
    }
    if (rep.status == "ok" && share_timeline(base, q, rep, r)) {
      ++out.shared;
    } else if (simulate_row(base, q, r).events > 0) {
      ++out.step_simulations;  // the representative failed otherwise than by memory: this layout may still run
    }
  }

  // Rank the simulated rows by their simulated figures.
  std::vector<std::size_t> sim;
  for (std::size_t j = 0; j < k; ++j) {
    if (rows[alive[j]].status == "ok") sim.push_back(alive[j]);
    else ++out.failed;
  }
  out.simulated = sim.size();
  auto simulated_key = [&](const PlanRow& r) {
    const double days = r.days > 0 ? r.days : r.step_time_s;
    return std::make_tuple(objective(q, r.meets, r.gpus, days, r.cost_usd), r.step_time_s);
  };
  std::vector<std::size_t> by_sim = sim;
  std::stable_sort(by_sim.begin(), by_sim.end(),
                   [&](std::size_t a, std::size_t b) { return simulated_key(rows[a]) < simulated_key(rows[b]); });
  for (std::size_t j = 0; j < by_sim.size(); ++j) rows[by_sim[j]].rank = static_cast<int>(j + 1);

  // Agreement of the predictor with the simulation on the simulated rows.
  PlanAgreement& ag = out.agreement;
  if (!sim.empty()) {
    ag.top_choice = sim.front() == by_sim.front();  // `sim` is in predicted order
    std::vector<int> counts;
    for (std::size_t i : sim)
      if (std::find(counts.begin(), counts.end(), rows[i].gpus) == counts.end()) counts.push_back(rows[i].gpus);
    for (int g : counts) {
      std::vector<std::size_t> at;
      for (std::size_t i : sim)
        if (rows[i].gpus == g) at.push_back(i);
      if (at.size() < 2) continue;
      ++ag.per_gpu_total;
      const auto best_sim = *std::min_element(at.begin(), at.end(), [&](std::size_t a, std::size_t b) {
        return rows[a].step_time_s < rows[b].step_time_s;
      });
      if (best_sim == at.front()) ++ag.per_gpu_agree;
    }
    double concordant = 0, discordant = 0;
    std::vector<double> errors;
    for (std::size_t a = 0; a < sim.size(); ++a) {
      const PlanRow& x = rows[sim[a]];
      errors.push_back(std::fabs(x.predicted.step_s / x.step_time_s - 1));
      for (std::size_t b = a + 1; b < sim.size(); ++b) {
        const PlanRow& y = rows[sim[b]];
        const double s = (x.predicted.step_s - y.predicted.step_s) * (x.step_time_s - y.step_time_s);
        if (s > 0) ++concordant;
        else if (s < 0) ++discordant;
      }
    }
    const double pairs = sim.size() * (sim.size() - 1) / 2.0;
    ag.kendall_tau = pairs > 0 ? (concordant - discordant) / pairs : 1;
    std::sort(errors.begin(), errors.end());
    ag.median_abs_error = errors.size() % 2 ? errors[errors.size() / 2]
                                            : (errors[errors.size() / 2 - 1] + errors[errors.size() / 2]) / 2;
  }

  // Order: simulated by rank, failed and predicted by predicted rank, pruned in enumeration order.
  std::vector<PlanRow> ordered;
  for (std::size_t i : by_sim) ordered.push_back(rows[i]);
  for (std::size_t i : alive)
    if (rows[i].status != "ok") ordered.push_back(rows[i]);
  for (const auto& r : rows)
    if (r.predicted_rank == 0) ordered.push_back(r);
  out.rows = std::move(ordered);
  return out;
}

}  // namespace ironlaw::report
