#include "training/whole_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <exception>
#include <queue>
#include <thread>
#include <utility>

#include <yaml-cpp/yaml.h>

#include "core/error.hpp"
#include "core/records.hpp"
#include "core/rng.hpp"
#include "run/layout.hpp"

namespace ironlaw::training {

run::SimulationResult simulate_step(const config::Scenario& scenario) {
  NullSink sink;
  return run::simulate(scenario, sink, run::TraceLevel::none);
}

namespace {

/// The step-relevant identity of `s` (see shared_simulate_step); "" when it has none.
std::string step_key(const config::Scenario& s) {
  if (s.resolved_yaml.empty()) return "";
  YAML::Node root = YAML::Load(s.resolved_yaml);
  if (!root.IsMap()) return "";
  for (const char* key : {"name", "reliability", "output"}) root.remove(key);
  if (YAML::Node training = root["training"]; training && training.IsMap()) {
    for (const char* key : {"tokens", "batch_ramp", "evaluation"}) training.remove(key);
  }
  if (YAML::Node run = root["run"]; run && run.IsMap()) run.remove("mode");
  YAML::Emitter emitter;
  emitter << root;
  const auto& p = s.parallel;
  char fields[512];
  std::snprintf(fields, sizeof fields,
                "\n# seed %llu nodes %d tp %d pp %d cp %d dp %d ep %d zero %d vs %d sp %d mb %d seq %d batch %.17g "
                "nic %.17g steps %d detail %s collectives %s forward_only %d\n",
                static_cast<unsigned long long>(s.seed), s.nodes, p.tp, p.pp, p.cp, p.dp, p.ep, p.zero,
                p.virtual_stages, p.sequence_parallel ? 1 : 0, p.microbatch_size, s.training.sequence_length,
                s.training.global_batch_tokens, s.topology.node.nic.bandwidth, s.run.steps, s.run.detail.c_str(),
                s.run.collectives.c_str(), s.run.forward_only ? 1 : 0);
  return std::string(emitter.c_str()) + fields;
}

struct SharedSteps {
  std::mutex mutex;
  std::map<std::string, std::shared_future<run::SimulationResult>> results;
  std::deque<std::string> order;  ///< insertion order, for eviction
  std::uint64_t simulations = 0;
};

SharedSteps& shared_steps() {
  static SharedSteps steps;
  return steps;
}

}  // namespace

run::SimulationResult shared_simulate_step(const config::Scenario& scenario) {
  const std::string key = step_key(scenario);
  SharedSteps& shared = shared_steps();
  if (key.empty()) {
    {
      const std::lock_guard<std::mutex> lock(shared.mutex);
      ++shared.simulations;
    }
    return simulate_step(scenario);
  }
  std::promise<run::SimulationResult> promise;
  std::shared_future<run::SimulationResult> future;
  bool owner = false;
  {
    const std::lock_guard<std::mutex> lock(shared.mutex);
    if (auto it = shared.results.find(key); it != shared.results.end()) {
      future = it->second;
    } else {
      // The entry goes in before the simulation, so another thread asking for it waits.
      owner = true;
      future = promise.get_future().share();
      shared.results.emplace(key, future);
      shared.order.push_back(key);
      ++shared.simulations;
      while (shared.order.size() > kSharedStepEntries) {
        shared.results.erase(shared.order.front());
        shared.order.pop_front();
      }
    }
  }
  if (owner) {
    try {
      run::SimulationResult r = simulate_step(scenario);
      r.links.clear();
      r.links.shrink_to_fit();
      promise.set_value(std::move(r));
    } catch (...) {
      promise.set_exception(std::current_exception());
    }
  }
  return future.get();
}

void clear_shared_steps() {
  SharedSteps& shared = shared_steps();
  const std::lock_guard<std::mutex> lock(shared.mutex);
  shared.results.clear();
  shared.order.clear();
}

std::uint64_t shared_step_simulations() {
  SharedSteps& shared = shared_steps();
  const std::lock_guard<std::mutex> lock(shared.mutex);
  return shared.simulations;
}

std::string StepCache::key(const config::Scenario& s) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "n%d tp%d pp%d cp%d dp%d ep%d z%d mb%d seq%d batch%.17g nic%.17g fwd%d", s.nodes,
                s.parallel.tp, s.parallel.pp, s.parallel.cp, s.parallel.dp, s.parallel.ep, s.parallel.zero,
                s.parallel.microbatch_size, s.training.sequence_length, s.training.global_batch_tokens,
                s.topology.node.nic.bandwidth, s.run.forward_only ? 1 : 0);
  return buf;
}

StepProfile StepCache::profile(const config::Scenario& s, const run::SimulationResult& r) {
  StepProfile p;
  p.out_of_memory = r.out_of_memory;
  for (std::size_t i = r.steps.size() > 1 ? 1 : 0; i < r.steps.size(); ++i) {
    p.durations.push_back(Time::ns(r.steps[i].end_ns - r.steps[i].start_ns));
  }
  double sum = 0;
  for (const Time d : p.durations) sum += d.seconds();
  p.mean_s = p.durations.empty() ? 0 : sum / static_cast<double>(p.durations.size());
  p.tokens_per_step = r.tokens_per_step;
  p.model_flops_per_step = r.model_flops_per_step;
  p.peak_flops_per_gpu = r.peak_flops_per_gpu;
  p.gpus = r.gpus;
  // Weights are replicated across data parallelism unless ZeRO-3 shards them; optimizer state
  // unless ZeRO ≥ 1 does. A checkpoint holds every distinct byte once.
  const double dp = std::max(1, r.layout.dp);
  const double weights = s.parallel.zero >= 3 ? r.memory.weights * r.gpus : r.memory.weights * r.gpus / dp;
  const double optimizer = s.parallel.zero >= 1 ? r.memory.optimizer * r.gpus : r.memory.optimizer * r.gpus / dp;
  p.checkpoint_bytes = weights + optimizer;
  p.checkpoint_bytes_per_gpu = r.memory.weights + r.memory.optimizer;
  return p;
}

void StepCache::put(const config::Scenario& s, const run::SimulationResult& r) {
  profiles_[key(s)] = std::make_unique<StepProfile>(profile(s, r));
}

const StepProfile& StepCache::get(const config::Scenario& s) {
  const std::string k = key(s);
  if (auto it = profiles_.find(k); it != profiles_.end()) return *it->second;
  ++simulations_;
  put(s, simulate_(s));
  return *profiles_.at(k);
}

void StepCache::prefetch(const std::vector<config::Scenario>& scenarios, unsigned threads) {
  prefetch(scenarios, {}, threads);
}

void StepCache::prefetch(const std::vector<config::Scenario>& first, const Derive& then, unsigned threads) {
  struct Job {
    config::Scenario scenario;
    std::string key;
    bool derives = false;              ///< a job of `first` (its profile feeds `then`)
    const StepProfile* cached = nullptr;  ///< already in the cache: not simulated
    run::SimulationResult result;
    std::exception_ptr error;
    std::vector<std::size_t> children;  ///< jobs derived from this one, in `then`'s order
  };
  // Jobs are only appended (under the lock) and never move: a deque keeps their addresses.
  std::deque<Job> jobs;
  std::deque<std::size_t> ready;  ///< jobs to simulate, in the order they became known
  std::mutex mutex;
  std::condition_variable wake;
  std::size_t running = 0;
  std::vector<std::size_t> roots;

  // Registers `s` (under the lock): a job to simulate unless cached or already a job.
  // Returns its index. Derived jobs of a cached first job are added at once.
  const auto add = [&](const config::Scenario& s, bool derives) {
    std::string k = key(s);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (jobs[i].key == k) return i;
    }
    Job& j = jobs.emplace_back();
    j.scenario = s;
    j.key = std::move(k);
    j.derives = derives;
    if (auto it = profiles_.find(j.key); it != profiles_.end()) {
      j.cached = it->second.get();
    } else {
      ready.push_back(jobs.size() - 1);
    }
    return jobs.size() - 1;
  };
  const auto derive = [&](std::size_t index, const StepProfile& p) {
    if (!then || p.out_of_memory) return;
    for (const auto& s : then(jobs[index].scenario, p)) {
      const std::size_t child = add(s, false);
      jobs[index].children.push_back(child);
    }
  };
  for (const auto& s : first) {
    const std::size_t i = add(s, true);
    roots.push_back(i);
    if (jobs[i].cached && jobs[i].derives && jobs[i].children.empty()) derive(i, *jobs[i].cached);
  }
  const auto worker = [&] {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return !ready.empty() || running == 0; });
      if (ready.empty()) return;  // nothing queued and nothing running that could queue more
      const std::size_t i = ready.front();
      ready.pop_front();
      ++running;
      Job& job = jobs[i];
      lock.unlock();
      try {
        job.result = simulate_(job.scenario);
      } catch (...) {
        job.error = std::current_exception();
      }
      std::vector<config::Scenario> derived;
      if (!job.error && job.derives && then) {
        const StepProfile p = profile(job.scenario, job.result);
        if (!p.out_of_memory) {
          try {
            derived = then(job.scenario, p);
          } catch (...) {
            job.error = std::current_exception();
          }
        }
      }
      lock.lock();
      for (const auto& s : derived) {
        const std::size_t child = add(s, false);
        jobs[i].children.push_back(child);
      }
      --running;
      wake.notify_all();
    }
  };
  std::vector<std::thread> pool;
  const std::size_t n = std::max(1u, threads);
  for (std::size_t t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  // Failures surface in a fixed order, whatever the threads did: each job of `first`, then
  // the jobs derived from it.
  std::vector<std::size_t> order;
  for (const std::size_t r : roots) {
    order.push_back(r);
    order.insert(order.end(), jobs[r].children.begin(), jobs[r].children.end());
  }
  for (const std::size_t i : order) {
    if (jobs[i].error) std::rethrow_exception(jobs[i].error);
  }
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].cached || profiles_.count(jobs[i].key)) continue;
    ++simulations_;
    put(jobs[i].scenario, jobs[i].result);
  }
}

namespace {

/// Causes that do not need a node replaced: the job restarts on the nodes it holds.
bool replaces_node(const std::string& cause) {
  return cause != "software" && cause != "nccl_hang" && cause != "dependency" && cause != "planned";
}

struct Pending {
  Time at;
  int node = 0;
  int cause = 0;
  bool operator>(const Pending& o) const {
    if (at != o.at) return at > o.at;
    if (node != o.node) return node > o.node;
    return cause > o.cause;
  }
};

/// What a model's state in the final run is: rolled back to the last durable checkpoint.
struct Progress {
  double tokens = 0;
  std::int64_t steps = 0;
  double flops = 0;    ///< model FLOPs of these steps
  double ideal_s = 0;  ///< these steps at their undisturbed mean step time
  double work_s = 0;   ///< executed step time when this state was captured (not rolled back)
  double idle_gpu_s = 0;  ///< executed step time × job GPUs an elastic shrink left idle, as work_s
};

/// Costs of writing and loading one checkpoint of a configuration, from bytes over bandwidths.
struct CheckpointCosts {
  double write_s = 0;     ///< whole checkpoint to storage
  double load_s = 0;      ///< every GPU reads its state back
  double snapshot_s = 0;  ///< GPU → pinned host memory over PCIe (async only)
  double per_nic_rate = 0;///< the background write's rate on each NIC [B/s]
};

/// One configuration the run trains in (a batch stage at a data-parallel degree): its step
/// profiles, what a step of it adds to the model, and its checkpoint costs.
struct Stage {
  double batch = 0;                   ///< the ramp's global batch for this stage [tokens]
  int dp = 0;                         ///< data-parallel degree (< the scenario's when shrunk)
  const StepProfile* base = nullptr;  ///< steps alone on the network
  const StepProfile* slow = nullptr;  ///< steps sharing it with a background checkpoint write
  double tokens_per_step = 0;         ///< tokens a step adds to the model
  double flops_per_step = 0;          ///< model FLOPs a step adds (PaLM count)
  double ideal_step_s = 0;            ///< those tokens at the full job's undisturbed step rate
  int idle_gpus = 0;                  ///< job GPUs a shrink leaves without work
  CheckpointCosts costs;
  double write_cost_s = 0;  ///< one checkpoint's cost to training
  double interval_s = 0;    ///< training time between checkpoints
  /// One evaluation (training.evaluation): ⌈evaluation tokens / tokens of a forward-only step⌉
  /// forward-only steps of this configuration at their simulated mean time; zero without one.
  Time evaluation;
};

class WholeRun {
 public:
  WholeRun(const config::Scenario& s, const run::SimulationResult* base, const ProgressFn& progress,
           const StepCache::Simulate& simulate)
      : s_(s), progress_(progress), cache_(simulate), step_rng_(s.seed, "run/step_variability") {
    const auto& r = s.reliability;
    for (const auto& c : r.failure_rates.causes) rate_per_node_s_ += c.rate_per_node_s;
    if (rate_per_node_s_ > 0) out_.mtbf_s = 1.0 / (rate_per_node_s_ * s.nodes);
    if (r.checkpoint_policy != "fixed" && s.locations.count("reliability.checkpoint.interval")) {
      throw InputError(s.where("reliability.checkpoint.interval"), "reliability.checkpoint.interval",
                       "is only read with policy fixed (policy " + r.checkpoint_policy + " sets no interval)");
    }
    checkpoints_on_ = r.checkpoint_policy == "young_daly" ||
                      (r.checkpoint_policy == "fixed" && r.checkpoint_interval > Time::zero());
    if (checkpoints_on_ && !(r.checkpoint_storage_bandwidth > 0)) {
      throw InputError(s.where("reliability.checkpoint.storage_bandwidth"), "reliability.checkpoint.storage_bandwidth",
                       "must be set (> 0) when checkpoints are written (policy " + r.checkpoint_policy + ")");
    }
    const auto& eval = s.training.evaluation;
    if (eval.every_steps > 0 && !(eval.tokens > 0)) {
      throw InputError(s.where("training.evaluation"), "training.evaluation.tokens",
                       "must be set (> 0) when training.evaluation.every_steps is");
    }
    if (eval.every_steps == 0 && s.locations.count("training.evaluation.tokens")) {
      throw InputError(s.where("training.evaluation.tokens"), "training.evaluation.tokens",
                       "is only read with training.evaluation.every_steps > 0");
    }
    evaluating_ = eval.every_steps > 0;
    spares_.assign(static_cast<std::size_t>(r.hot_spares), Time::zero());
    const run::Layout layout = run::resolve_layout(s);
    gpus_per_node_ = s.topology.node.gpus;
    dp_full_ = layout.dp;
    dp_now_ = layout.dp;
    replica_gpus_ = layout.tp * layout.cp * layout.pp;
    active_.assign(static_cast<std::size_t>(s.nodes), 1);
    if (r.elastic != "off") check_elastic(layout);
    if (base) cache_.put(stage_scenario(s.training.global_batch_tokens, 0, dp_full_), *base);
    start_failure_clocks();
  }

  /// Simulates every batch stage's steps up front, in parallel: first alone on the network,
  /// then (async checkpoints) beside the write, whose NIC share needs the first's bytes.
  void prepare() {
    std::vector<double> batches;
    for (const auto& stage : s_.training.batch_ramp) batches.push_back(stage.global_batch_tokens);
    batches.push_back(s_.training.global_batch_tokens);
    // The largest batches first: their steps take longest to simulate, so the pool's threads
    // finish closer together (longest job first). The order changes no result.
    std::stable_sort(batches.begin(), batches.end(), std::greater<>());
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    std::vector<config::Scenario> base;
    for (const double b : batches) base.push_back(stage_scenario(b, 0, dp_full_));
    if (evaluating_) {
      for (const double b : batches) base.push_back(stage_scenario(b, 0, dp_full_, /*forward_only=*/true));
    }
    StepCache::Derive beside_write;
    if (checkpoints_on_ && s_.reliability.checkpoint_mode == "async") {
      // A stage's step beside a background write: its NIC share comes from the stage's
      // checkpoint bytes, known as soon as the stage's own step is, so it joins the pool then.
      beside_write = [this](const config::Scenario& c, const StepProfile& p) {
        if (c.run.forward_only) return std::vector<config::Scenario>{};
        return std::vector<config::Scenario>{
            stage_scenario(c.training.global_batch_tokens, nic_share(checkpoint_costs(p)), dp_full_)};
      };
    }
    cache_.prefetch(base, beside_write, threads);
  }

  WholeRunResult run() {
    try {
      return run_unchecked();
    } catch (const KeyedTimeOverflow&) {
      throw;
    } catch (const TimeOverflow& e) {
      // Each duration was in range, their sum is not: the run itself outlasts the clock.
      char text[200];
      std::snprintf(text, sizeof text, "after %.0f optimizer steps at %.4g s of simulated time",
                    static_cast<double>(kept_.steps), now_.seconds());
      throw KeyedTimeOverflow(std::string("training.tokens: the whole run (run.mode full) outlasts the clock ") + text +
                              " (" + e.what() + ")");
    }
  }

  WholeRunResult run_unchecked() {
    prepare();
    const double total = s_.training.tokens;
    double next_report = 0.01;
    const Stage* stage = nullptr;
    while (kept_.tokens < total) {
      if (!missing_.empty() && earliest_node() <= now_) {
        grow();
        guard();
        continue;
      }
      const double batch = batch_at(kept_.tokens);
      if (stage == nullptr || stage->batch != batch || stage->dp != dp_now_) stage = &stage_for(batch);
      const StepProfile& base = *stage->base;
      const StepProfile& now_profile = async_pending_ ? *stage->slow : base;
      const Time d = now_profile.durations[now_profile.durations.size() == 1
                                               ? 0
                                               : step_rng_.uniform_below(now_profile.durations.size())];
      if (failed_within(d, /*training=*/true)) {
        guard();
        continue;
      }
      now_ += d;
      ++out_.steps_run;
      work_s_ += d.seconds();
      idle_gpu_s_ += d.seconds() * stage->idle_gpus;
      since_capture_s_ += d.seconds();
      kept_.tokens += stage->tokens_per_step;
      kept_.steps += 1;
      kept_.flops += stage->flops_per_step;
      kept_.ideal_s += stage->ideal_step_s;
      kept_.work_s = work_s_;
      kept_.idle_gpu_s = idle_gpu_s_;
      if (async_pending_ && now_ >= async_durable_) complete_async();
      if (progress_ && kept_.tokens / total >= next_report) {
        progress_(std::min(1.0, kept_.tokens / total));
        next_report = std::floor(kept_.tokens / total * 100 + 1) / 100;
      }
      if (kept_.tokens >= total) break;
      const int every = s_.training.evaluation.every_steps;
      if (every > 0 && kept_.steps % every == 0 && evaluate(*stage)) {
        guard();
        continue;
      }
      if (checkpoints_on_ && !async_pending_ && since_capture_s_ >= stage->interval_s) checkpoint(*stage);
    }
    if (async_pending_) {
      // The run is over: the last background write finishes while the job is released.
      out_.checkpoints[pending_index_].durable = async_durable_;
    }
    finish(stage_for(batch_at(std::max(0.0, kept_.tokens - 1)), dp_full_));
    return std::move(out_);
  }

 private:
  /// The step configuration of `batch` (the ramp's global batch) at data-parallel degree `dp`,
  /// with `nic_taken` of each NIC's capacity used by a background write.
  config::Scenario stage_scenario(double batch, double nic_taken, int dp, bool forward_only = false) const {
    config::Scenario c = s_;
    c.run.mode = "steps";
    c.run.forward_only = forward_only;
    c.training.global_batch_tokens = simulated_batch(batch, dp);
    c.training.batch_ramp.clear();
    c.training.evaluation = config::EvaluationSpec{};
    c.topology.node.nic.bandwidth -= nic_taken;
    if (dp != dp_full_) {
      c.parallel.dp = dp;
      c.nodes = dp * replica_gpus_ / gpus_per_node_;
    }
    return c;
  }

  /// The global batch a step at data-parallel degree `dp` simulates. At the full degree, the
  /// ramp's. Shrunk, replica_batch keeps each replica's sequences (the global batch shrinks);
  /// global_batch spreads the ramp's sequences over fewer replicas, each taking whole
  /// microbatches (a multiple of pp for the interleaved schedule), so the replicas with the
  /// most set the step: the simulated batch is that most × dp, at least the ramp's.
  double simulated_batch(double batch, int dp) const {
    if (dp == dp_full_) return batch;
    const double seq = s_.training.sequence_length;
    const double mbs = s_.parallel.microbatch_size;
    const double sequences = std::round(batch / seq);
    if (s_.reliability.elastic == "replica_batch") return sequences / dp_full_ * dp * seq;
    double microbatches = std::ceil(sequences / (static_cast<double>(dp) * mbs));
    if (s_.parallel.virtual_stages > 1) microbatches = std::ceil(microbatches / s_.parallel.pp) * s_.parallel.pp;
    return microbatches * mbs * dp * seq;
  }

  double batch_at(double tokens) const {
    for (const auto& stage : s_.training.batch_ramp) {
      if (tokens < stage.until_tokens) return stage.global_batch_tokens;
    }
    return s_.training.global_batch_tokens;
  }

  const StepProfile& profile_for(double batch, double nic_taken, int dp, bool forward_only = false) {
    const StepProfile& p = cache_.get(stage_scenario(batch, nic_taken, dp, forward_only));
    if (p.out_of_memory) {
      throw InputError(s_.where("training.batch_ramp"), "training.batch_ramp",
                       "the layout runs out of memory at a batch of " + std::to_string(batch) + " tokens");
    }
    if (p.durations.empty()) throw std::runtime_error("the step simulation returned no steps");
    return p;
  }

  /// What a background write takes of each NIC. Max-min sharing: the write's flow is held to
  /// its storage-bound rate (it is bottlenecked there), so training's flows get what is left,
  /// never less than half.
  double nic_share(const CheckpointCosts& c) const {
    return std::min(c.per_nic_rate, s_.topology.node.nic.bandwidth / 2);
  }

  /// The stage of `batch` at the job's data-parallel degree now.
  const Stage& stage_for(double batch) { return stage_for(batch, dp_now_); }

  /// The stage of `batch` at data-parallel degree `dp`: simulated (and its checkpoint costs
  /// derived) on first use.
  const Stage& stage_for(double batch, int dp) {
    if (auto it = stages_.find({batch, dp}); it != stages_.end()) return it->second;
    Stage st;
    st.batch = batch;
    st.dp = dp;
    st.base = &profile_for(batch, 0, dp);
    st.slow = st.base;
    if (dp == dp_full_) {
      st.tokens_per_step = st.base->tokens_per_step;
      st.flops_per_step = st.base->model_flops_per_step;
      st.ideal_step_s = st.base->mean_s;
    } else {
      // What a shrunk step adds to the model: the ramp's batch (global_batch) or the replicas'
      // (replica_batch); its ideal time is that many tokens at the full job's step rate.
      const StepProfile& full = *stage_for(batch, dp_full_).base;
      st.tokens_per_step = s_.reliability.elastic == "replica_batch" ? st.base->tokens_per_step : batch;
      st.flops_per_step = st.base->model_flops_per_step * (st.tokens_per_step / st.base->tokens_per_step);
      st.ideal_step_s = full.mean_s * (st.tokens_per_step / full.tokens_per_step);
      st.idle_gpus = (dp_full_ - dp) * replica_gpus_;
    }
    st.costs = checkpoint_costs(*st.base);
    const bool sync = s_.reliability.checkpoint_mode == "sync";
    if (checkpoints_on_ && !sync) st.slow = &profile_for(batch, nic_share(st.costs), dp);
    if (sync) {
      st.write_cost_s = st.costs.write_s;
    } else {
      // Progress lost while the slowed steps run beside the write, plus the snapshot pause.
      const double slowdown = st.slow->mean_s > 0 ? 1.0 - st.base->mean_s / st.slow->mean_s : 0;
      st.write_cost_s = st.costs.snapshot_s + st.costs.write_s * slowdown;
    }
    if (evaluating_) {
      const StepProfile& forward = profile_for(batch, 0, dp, /*forward_only=*/true);
      const double passes = std::ceil(s_.training.evaluation.tokens / forward.tokens_per_step);
      st.evaluation = in_range(passes * forward.mean_s, "training.evaluation.tokens",
                               "one evaluation (training.evaluation.tokens over forward-only steps)");
    }
    if (s_.reliability.checkpoint_policy == "fixed") {
      st.interval_s = s_.reliability.checkpoint_interval.seconds();
    } else {
      st.interval_s = out_.mtbf_s > 0 ? std::sqrt(2 * st.write_cost_s * out_.mtbf_s)
                                      : std::numeric_limits<double>::infinity();
    }
    return stages_.emplace(std::make_pair(batch, dp), st).first->second;
  }

  /// The checkpoint costs of a configuration, from its bytes over the paths they cross. A save
  /// spreads the distinct bytes evenly over the nodes (each writes its share, as a fully
  /// parallel save does); a load has every GPU read back all the state it holds. Each is
  /// bound by the storage bandwidth all nodes share and by each node's NICs.
  CheckpointCosts checkpoint_costs(const StepProfile& p) const {
    const auto& node = s_.topology.node;
    const double storage = s_.reliability.checkpoint_storage_bandwidth;
    const double node_path = node.nics * node.nic.bandwidth;
    // The nodes the configuration runs on (fewer than the scenario's when shrunk).
    const int nodes = p.gpus > 0 && node.gpus > 0 ? std::max(1, p.gpus / node.gpus) : s_.nodes;
    const double write_per_node = p.checkpoint_bytes / nodes;
    const double load_per_node = p.checkpoint_bytes_per_gpu * node.gpus;
    CheckpointCosts c;
    if (storage > 0) {
      c.write_s = std::max(p.checkpoint_bytes / storage, write_per_node / node_path);
      c.load_s = std::max(p.checkpoint_bytes_per_gpu * p.gpus / storage, load_per_node / node_path);
    }
    // The snapshot crosses the GPU's PCIe link, shared by the GPUs behind one switch.
    const double pcie = node.pcie.bandwidth / std::max(1, node.gpus_per_pcie_switch);
    const double d2h = std::min(pcie, s_.topology.device.host_to_device_bandwidth);
    c.snapshot_s = d2h > 0 ? p.checkpoint_bytes_per_gpu / d2h : 0;
    c.per_nic_rate = c.write_s > 0 ? write_per_node / c.write_s / std::max(1, node.nics) : 0;
    in_range(c.write_s, "reliability.checkpoint.storage_bandwidth", "one checkpoint write");
    in_range(c.load_s, "reliability.checkpoint.storage_bandwidth", "one checkpoint load");
    in_range(c.snapshot_s, "cluster.topology.device.host_to_device_bandwidth", "one checkpoint snapshot");
    return c;
  }

  /// `seconds` (a duration the whole run derives from the scenario) as a Time, or an InputError
  /// naming `key`, the input that drives it, when it passes the clock's range.
  Time in_range(double seconds, const std::string& key, const std::string& what) const {
    if (!Time::representable(seconds)) {
      char text[160];
      std::snprintf(text, sizeof text, "%.4g s", seconds);
      throw KeyedTimeOverflow(key + ": " + what + " would take " + text + " of simulated time");
    }
    return Time::from_seconds(seconds);
  }

  void checkpoint(const Stage& st) {
    const CheckpointCosts& c = st.costs;
    const bool sync = s_.reliability.checkpoint_mode == "sync";
    CheckpointEvent e;
    e.start = now_;
    e.step = kept_.steps;
    e.bytes = st.base->checkpoint_bytes;
    const Time pause = Time::from_seconds(sync ? c.write_s : c.snapshot_s);
    out_.checkpoints.push_back(e);
    const std::size_t index = out_.checkpoints.size() - 1;
    const Progress captured = kept_;
    if (failed_within(pause, /*training=*/false)) {
      out_.checkpoints[index].resumed = out_.checkpoints[index].durable = Time::max();
      return;
    }
    now_ += pause;
    out_.checkpoint_pause_s += pause.seconds();
    out_.checkpoints[index].resumed = now_;
    since_capture_s_ = 0;
    if (sync) {
      out_.checkpoints[index].durable = now_;
      durable_ = captured;
    } else {
      async_pending_ = true;
      async_durable_ = now_ + Time::from_seconds(c.write_s);
      pending_ = captured;
      pending_index_ = index;
      out_.checkpoints[index].durable = Time::max();
    }
  }

  void complete_async() {
    async_pending_ = false;
    durable_ = pending_;
    out_.checkpoints[pending_index_].durable = async_durable_;
  }

  // ---- failures -------------------------------------------------------------------------

  Time draw(int node, int cause) {
    const auto& c = s_.reliability.failure_rates.causes[static_cast<std::size_t>(cause)];
    RngStream& rng = streams_[static_cast<std::size_t>(node) * s_.reliability.failure_rates.causes.size() +
                              static_cast<std::size_t>(cause)];
    const double mean = 1.0 / c.rate_per_node_s;
    double x = 0;
    if (c.distribution == "weibull") {
      const double k = c.weibull_shape;
      const double scale = mean / std::tgamma(1.0 + 1.0 / k);
      x = scale * std::pow(-std::log(1.0 - rng.uniform01()), 1.0 / k);
    } else {
      x = rng.exponential(mean);
    }
    // Beyond ~292 years of int64 ns the clock would overflow: such a failure never comes.
    constexpr double kNever = 9.0e9;
    return x >= kNever ? Time::max() : Time::from_seconds(x);
  }

  void start_failure_clocks() {
    const auto& causes = s_.reliability.failure_rates.causes;
    streams_.reserve(static_cast<std::size_t>(s_.nodes) * causes.size());
    for (int n = 0; n < s_.nodes; ++n) {
      for (std::size_t c = 0; c < causes.size(); ++c) {
        streams_.emplace_back(s_.seed, "node" + std::to_string(n) + "/failure/" + causes[c].name);
      }
    }
    for (int n = 0; n < s_.nodes; ++n) {
      for (std::size_t c = 0; c < causes.size(); ++c) {
        if (!(causes[c].rate_per_node_s > 0)) continue;
        const Time t = draw(n, static_cast<int>(c));
        if (t != Time::max()) heap_.push(Pending{t, n, static_cast<int>(c)});
      }
    }
  }

  /// Re-arms the clock of (node, cause) from `from` (the replaced or restarted component).
  void rearm(const Pending& p, Time from) {
    const Time t = draw(p.node, p.cause);
    if (t != Time::max() && from <= Time::max() - t) heap_.push(Pending{from + t, p.node, p.cause});
  }

  /// Takes the earliest pending failure off the heap, re-arms its (node, cause) process and
  /// counts the interruption; returns its event with time, cause, node and step filled in.
  FailureEvent take_failure() {
    const Pending p = heap_.top();
    heap_.pop();
    const auto& cause = s_.reliability.failure_rates.causes[static_cast<std::size_t>(p.cause)];
    FailureEvent f;
    f.time = p.at;
    f.cause = cause.name;
    f.node = p.node;
    f.step = kept_.steps;
    rearm(p, p.at);
    ++out_.interruptions;
    ++out_.interruptions_by_cause[cause.name];
    return f;
  }

  /// If a failure strikes within [now, now + span), handles it (roll back, restart) and
  /// returns true; `training` says whether steps were running (their partial time is lost).
  /// Whether a failure of a node in the running job comes before `t` (idle nodes' skipped).
  bool failure_before(Time t) {
    skip_idle_failures(t);
    return !heap_.empty() && heap_.top().at < t;
  }

  bool failed_within(Time span, bool training) {
    if (!failure_before(now_ + span)) return false;
    const Pending p = heap_.top();
    const auto& cause = s_.reliability.failure_rates.causes[static_cast<std::size_t>(p.cause)];
    FailureEvent f = take_failure();
    const bool planned = cause.detection == "planned";
    const double partial = training ? (p.at - now_).seconds() : 0;
    const int idle_gpus = training ? stage_for(batch_at(kept_.tokens)).idle_gpus : 0;
    if (training) {
      work_s_ += partial;
      idle_gpu_s_ += partial * idle_gpus;
    }
    if (planned) {
      f.lost_work_s = partial;  // the operators checkpoint the last step before stopping
      lost_idle_gpu_s_ += partial * idle_gpus;
      durable_ = kept_;
    } else {
      f.lost_work_s = work_s_ - durable_.work_s;
      lost_idle_gpu_s_ += idle_gpu_s_ - durable_.idle_gpu_s;
      kept_ = durable_;
    }
    // The state training resumes from is durable; executed work so far is accounted.
    durable_.work_s = work_s_;
    kept_.work_s = work_s_;
    durable_.idle_gpu_s = idle_gpu_s_;
    kept_.idle_gpu_s = idle_gpu_s_;
    out_.lost_work_s += f.lost_work_s;
    if (async_pending_) {
      async_pending_ = false;  // the background write dies with the job
      out_.checkpoints[pending_index_].durable = Time::max();
    }
    const Time detection = cause.detection == "hang" ? s_.reliability.restart_detection : Time::zero();
    f.detected = p.at + detection;
    out_.failures.push_back(f);

    const Time down_from = now_;
    Time resume = restart(f, planned);
    // Failures while the job is down: each is an interruption too and restarts the restart.
    while (failure_before(resume)) {
      const auto& c2 = s_.reliability.failure_rates.causes[static_cast<std::size_t>(heap_.top().cause)];
      FailureEvent g = take_failure();
      g.detected = g.time;
      g.while_down = true;
      out_.failures.push_back(g);
      out_.restarts.back().resumed = g.time;  // that restart never finished
      resume = restart(g, c2.detection == "planned");
    }
    now_ = resume;
    out_.down_s += (now_ - down_from).seconds() - partial;
    since_capture_s_ = 0;
    return true;
  }

  /// Appends the restart that follows failure `f`; returns when training runs again.
  Time restart(const FailureEvent& f, bool planned) {
    const auto& r = s_.reliability;
    const CheckpointCosts& c = stage_for(batch_at(kept_.tokens)).costs;
    RestartEvent e;
    e.detected = f.detected;
    Time t = f.detected;
    if (planned) t += Time::from_seconds(c.write_s);  // the checkpoint written before the stop
    const CheckpointCosts* load = &c;
    if (replaces_node(f.cause)) {
      // The failed node goes to repair and joins the spare pool when back; the job takes the
      // earliest available node of that pool, or (elastic) goes on without it if none is ready.
      spares_.push_back(f.time + r.node_repair);
      const auto it = std::min_element(spares_.begin(), spares_.end());
      const Time ready = *it;
      if (ready > t && r.elastic != "off") {
        shrink(f.node);
        load = &stage_for(batch_at(kept_.tokens)).costs;
      } else {
        spares_.erase(it);
        if (ready > t) {
          e.wait_for_node_s = (ready - t).seconds();
          t = ready;
        }
      }
    }
    e.reschedule_s = r.restart_reschedule.seconds();
    e.initialize_s = r.restart_initialize.seconds();
    e.load_s = checkpoints_on_ && durable_.steps > 0 ? load->load_s : 0;
    e.dp = dp_now_;
    t += r.restart_reschedule + r.restart_initialize + Time::from_seconds(e.load_s);
    e.resumed = t;
    e.resumed_step = kept_.steps;
    out_.restarts.push_back(e);
    return t;
  }

  // ---- elastic shrinking ---------------------------------------------------------------

  /// Elastic shrinking needs whole replicas on whole nodes: data parallelism outermost in the
  /// placement, a replica a multiple or a divisor of a node, and no expert parallelism (whose
  /// groups span replicas). Anything else is refused rather than approximated.
  void check_elastic(const run::Layout& layout) const {
    const auto refuse = [&](const std::string& why) {
      throw InputError(s_.where("reliability.elastic"), "reliability.elastic",
                       "not simulated by this version for this layout: " + why);
    };
    if (s_.parallel.order.empty() || s_.parallel.order.back() != "dp") {
      refuse("it needs dp outermost in parallel.order");
    }
    if (layout.ep > 1) refuse("expert-parallel groups span data-parallel replicas (ep > 1)");
    if (replica_gpus_ % gpus_per_node_ != 0 && gpus_per_node_ % replica_gpus_ != 0) {
      refuse("a replica (tp x cp x pp = " + std::to_string(replica_gpus_) + " GPUs) must fill whole nodes of " +
             std::to_string(gpus_per_node_) + " GPUs, or a node hold whole replicas");
    }
  }

  /// The replicas with a GPU on a node that is missing: those the job cannot run.
  void reconfigure() {
    std::vector<char> lost(static_cast<std::size_t>(dp_full_), 0);
    for (const int n : missing_) {
      const int first = n * gpus_per_node_ / replica_gpus_;
      const int last = ((n + 1) * gpus_per_node_ - 1) / replica_gpus_;
      for (int k = first; k <= last && k < dp_full_; ++k) lost[static_cast<std::size_t>(k)] = 1;
    }
    int lost_count = 0;
    for (const char l : lost) lost_count += l;
    dp_now_ = dp_full_ - lost_count;
    if (dp_now_ < 1) {
      throw InputError(s_.where("reliability.elastic"), "reliability.elastic",
                       "every data-parallel replica has lost a node: the job cannot shrink further");
    }
    // A node runs in the job when none of its GPUs belongs to a lost replica.
    for (int n = 0; n < s_.nodes; ++n) {
      const int first = n * gpus_per_node_ / replica_gpus_;
      const int last = ((n + 1) * gpus_per_node_ - 1) / replica_gpus_;
      bool runs = true;
      for (int k = first; k <= last && k < dp_full_; ++k) runs = runs && !lost[static_cast<std::size_t>(k)];
      active_[static_cast<std::size_t>(n)] = runs ? 1 : 0;
    }
  }

  /// The job goes on without node `node` (failed, no spare ready).
  void shrink(int node) {
    missing_.push_back(node);
    reconfigure();
    ++out_.elastic_shrinks;
  }

  Time earliest_node() const { return *std::min_element(spares_.begin(), spares_.end()); }

  /// A node is ready again while the job runs shrunk: the job stops on purpose (a synchronous
  /// checkpoint first, so nothing is lost), takes the node back into the oldest missing slot,
  /// and restarts on the grown configuration (reschedule, initialise, load). Not a failure:
  /// not counted in interruptions. A failure during the stop is handled as any other.
  void grow() {
    const auto& r = s_.reliability;
    const Time start = now_;
    const CheckpointCosts before = stage_for(batch_at(kept_.tokens)).costs;
    spares_.erase(std::min_element(spares_.begin(), spares_.end()));
    missing_.erase(missing_.begin());
    reconfigure();
    ++out_.elastic_grows;
    CheckpointEvent cp;
    cp.start = now_;
    cp.step = kept_.steps;
    cp.bytes = stage_for(batch_at(kept_.tokens)).base->checkpoint_bytes;
    out_.checkpoints.push_back(cp);
    const std::size_t index = out_.checkpoints.size() - 1;
    const Time write = Time::from_seconds(before.write_s);
    if (failed_within(write, /*training=*/false)) {
      out_.checkpoints[index].resumed = out_.checkpoints[index].durable = Time::max();
      return;
    }
    now_ += write;
    out_.checkpoints[index].resumed = out_.checkpoints[index].durable = now_;
    if (async_pending_) {
      async_pending_ = false;  // superseded by this checkpoint
      out_.checkpoints[pending_index_].durable = Time::max();
    }
    durable_ = kept_;
    RestartEvent e;
    e.detected = start;
    e.elastic_grow = true;
    e.reschedule_s = r.restart_reschedule.seconds();
    e.initialize_s = r.restart_initialize.seconds();
    e.load_s = checkpoints_on_ ? stage_for(batch_at(kept_.tokens)).costs.load_s : 0;
    e.dp = dp_now_;
    const Time restart = r.restart_reschedule + r.restart_initialize + Time::from_seconds(e.load_s);
    out_.down_s += write.seconds();
    if (failed_within(restart, /*training=*/false)) return;
    now_ += restart;
    out_.down_s += restart.seconds();
    since_capture_s_ = 0;
    e.resumed = now_;
    e.resumed_step = kept_.steps;
    out_.restarts.push_back(e);
  }

  /// Failures of nodes outside the running job (missing, or idle in a lost replica) before
  /// `until` do not stop it: their clocks are re-armed, nothing is counted.
  void skip_idle_failures(Time until) {
    if (missing_.empty()) return;
    while (!heap_.empty() && heap_.top().at < until && !active_[static_cast<std::size_t>(heap_.top().node)]) {
      const Pending p = heap_.top();
      heap_.pop();
      rearm(p, p.at);
    }
  }

  // ---- evaluation ----------------------------------------------------------------------

  /// An evaluation pause: the simulated forward-only passes of `st` over training.evaluation's
  /// tokens; returns true if a failure struck during it (handled). Non-productive: it counts in
  /// wall time, not in ETTR's numerator.
  bool evaluate(const Stage& st) {
    const Time pause = st.evaluation;
    if (failed_within(pause, /*training=*/false)) return true;
    now_ += pause;
    out_.evaluation_s += pause.seconds();
    ++out_.evaluations;
    return false;
  }

  void guard() {
    // A run that restarts far more often than it trains would never end: refuse it. Every
    // restart is kept (64 B, and a row of /run/restarts): a million bounds that to ~100 MB and
    // about a second; Llama 3 405B's 54 days had 419 interruptions.
    if (out_.interruptions > 1'000'000 || now_ > Time::s(86400LL * 365 * 100)) {
      throw InputError(s_.where("reliability.failures"), "reliability.failures",
                       "the run does not finish within 100 years of simulated time or 1,000,000 restarts: "
                       "failures come faster than checkpoints keep progress");
    }
  }

  void finish(const Stage& last) {
    const StepProfile& p = *last.base;
    const int gpus_per_node = s_.topology.node.gpus;
    const double job_gpus = static_cast<double>(s_.nodes) * gpus_per_node;
    const double allocated_gpus = job_gpus + static_cast<double>(s_.reliability.hot_spares) * gpus_per_node;
    out_.steps = kept_.steps;
    out_.tokens = kept_.tokens;
    out_.wall_s = now_.seconds();
    out_.productive_s = work_s_ - out_.lost_work_s;
    // Kept steps run shrunk left some job GPUs idle: not productive GPU-hours.
    out_.shrunk_idle_gpu_hours = (idle_gpu_s_ - lost_idle_gpu_s_) / 3600.0;
    const double productive_gpu_s = out_.productive_s * job_gpus - (idle_gpu_s_ - lost_idle_gpu_s_);
    out_.allocated_gpu_hours = out_.wall_s * allocated_gpus / 3600.0;
    out_.productive_gpu_hours = productive_gpu_s / 3600.0;
    out_.ettr = out_.wall_s > 0 ? out_.productive_s / out_.wall_s : 0;
    out_.goodput = out_.wall_s > 0 ? kept_.ideal_s / out_.wall_s : 0;
    const double peak = p.peak_flops_per_gpu;
    if (peak > 0 && p.mean_s > 0) out_.mfu_step = p.model_flops_per_step / (peak * job_gpus * p.mean_s);
    if (peak > 0 && productive_gpu_s > 0) out_.mfu_productive = kept_.flops / (peak * productive_gpu_s);
    if (peak > 0 && out_.wall_s > 0) out_.mfu_allocated = kept_.flops / (peak * allocated_gpus * out_.wall_s);
    if (checkpoints_on_) {
      out_.checkpoint_write_s = last.write_cost_s;
      out_.checkpoint_interval_s = last.interval_s;
      if (out_.mtbf_s > 0) out_.young_daly_interval_s = std::sqrt(2 * out_.checkpoint_write_s * out_.mtbf_s);
    }
    out_.step_simulations = cache_.simulations();
  }

  const config::Scenario& s_;
  const ProgressFn& progress_;
  StepCache cache_;
  RngStream step_rng_;
  std::map<std::pair<double, int>, Stage> stages_;  ///< by (ramp batch, data-parallel degree)
  std::vector<RngStream> streams_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> heap_;
  std::vector<Time> spares_;
  double rate_per_node_s_ = 0;
  bool checkpoints_on_ = false;
  bool evaluating_ = false;     ///< training.evaluation.every_steps > 0

  int gpus_per_node_ = 1;
  int replica_gpus_ = 1;        ///< tp × cp × pp: the GPUs of one data-parallel replica
  int dp_full_ = 1;
  int dp_now_ = 1;              ///< data-parallel degree now (elastic: fewer while nodes are missing)
  std::vector<int> missing_;    ///< node slots the job runs without (failed, none was ready)
  std::vector<char> active_;    ///< per node slot: part of the running job
  double idle_gpu_s_ = 0;       ///< executed step time × the job GPUs a shrink left idle
  double lost_idle_gpu_s_ = 0;  ///< the part of it in lost work

  Time now_;
  double work_s_ = 0;           ///< all executed step time, kept or lost
  double since_capture_s_ = 0;  ///< training time since the last capture or restart
  Progress kept_;               ///< the model's progress now
  Progress durable_;            ///< as of the last durable checkpoint (or the start)
  Progress pending_;            ///< as of the async checkpoint being written
  bool async_pending_ = false;
  Time async_durable_;
  std::size_t pending_index_ = 0;
  WholeRunResult out_;
};

}  // namespace

void refuse_unsimulated(const config::Scenario& scenario) {
  if (scenario.run.mode == "full") return;
  // The deepest key set (a leaf, with its own position), not the section around it.
  const std::pair<const std::string, SourceLoc>* found = nullptr;
  for (const auto& entry : scenario.locations) {
    const std::string& key = entry.first;
    if (!key.starts_with("reliability.") && !key.starts_with("training.batch_ramp") &&
        !key.starts_with("training.evaluation")) {
      continue;
    }
    if (!found || key.size() > found->first.size()) found = &entry;
  }
  if (found) {
    throw InputError(found->second, found->first,
                     "not simulated by this version with run.mode: steps (it is simulated with run.mode: full)");
  }
}

WholeRunResult simulate_whole_run(const config::Scenario& scenario, const run::SimulationResult* base,
                                  const ProgressFn& progress, const StepCache::Simulate& simulate) {
  if (scenario.run.mode != "full") {
    throw InputError(scenario.where("run.mode"), "run.mode", "a whole run needs run.mode: full");
  }
  if (!(scenario.training.tokens > 0)) {
    throw InputError(scenario.where("training.tokens"), "training.tokens", "must be set (> 0) for a whole run");
  }
  WholeRun run(scenario, base, progress, simulate);
  return run.run();
}

}  // namespace ironlaw::training
