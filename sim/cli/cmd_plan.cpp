// `ironlaw plan`: search layouts and cluster sizes for a model, predict every valid layout,
// simulate the best K event by event and print them ranked (report/planner.hpp).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/program_options.hpp>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/machine_output.hpp"
#include "cli/ranks.hpp"
#include "config/input_file.hpp"
#include "config/load.hpp"
#include "config/schema.hpp"
#include "config/units.hpp"
#include "core/error.hpp"
#include "output/h5_writer.hpp"
#include "report/planner.hpp"

namespace po = boost::program_options;

namespace ironlaw::cli {

namespace {

const SourceLoc kCli{"--space", 0, 0};

int parse_int(const std::string& text, const std::string& key) {
  std::size_t used = 0;
  long v = 0;
  try {
    v = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || v < 0 || v > 1'048'576)
    throw InputError(kCli, key, "expected a whole number from 0 to 1048576, got \"" + text + "\"");
  return static_cast<int>(v);
}

std::vector<std::string> split_list(const std::string& text, const std::string& key) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const auto comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) throw InputError(kCli, key, "empty value in \"" + text + "\"");
    out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

/// --gpus: N, A..B (A, 2A, 4A, ... up to B) or A..B:STEP (A, A+STEP, ... up to B), comma-separated.
std::vector<int> parse_gpus(const std::string& text, int node_gpus) {
  std::vector<int> out;
  for (const auto& item : split_list(text, "--gpus")) {
    const auto dots = item.find("..");
    if (dots == std::string::npos) {
      out.push_back(parse_int(item, "--gpus"));
    } else {
      const auto colon = item.find(':', dots);
      const int a = parse_int(item.substr(0, dots), "--gpus");
      const int b = parse_int(item.substr(dots + 2, colon == std::string::npos ? std::string::npos : colon - dots - 2), "--gpus");
      if (a < 1 || b < a) throw InputError({"--gpus", 0, 0}, "--gpus", "the range \"" + item + "\" must run from 1 upwards");
      if (colon == std::string::npos) {
        for (long g = a; g <= b; g *= 2) out.push_back(static_cast<int>(g));
      } else {
        const int step = parse_int(item.substr(colon + 1), "--gpus");
        if (step < 1) throw InputError({"--gpus", 0, 0}, "--gpus", "the step of \"" + item + "\" must be positive");
        if ((b - a) / step > 1000) throw InputError({"--gpus", 0, 0}, "--gpus", "\"" + item + "\" has more than 1000 counts");
        for (long g = a; g <= b; g += step) out.push_back(static_cast<int>(g));
      }
    }
  }
  for (int g : out) {
    if (g < 1 || g % node_gpus != 0) {
      throw InputError({"--gpus", 0, 0}, "--gpus", std::to_string(g) + " is not a whole number of nodes of " +
                                                      std::to_string(node_gpus) + " GPUs");
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// --space KEY=V1,V2,... into the axis it names; values checked against the loader's choices.
void parse_space(const std::string& text, report::PlanSpace& sp) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError(kCli, "--space", "expected KEY=V1,V2,..., got \"" + text + "\"");
  const std::string key = text.substr(0, eq);
  const auto values = split_list(text.substr(eq + 1), key);
  auto ints = [&](std::vector<int>& axis) {
    axis.clear();
    for (const auto& v : values) axis.push_back(parse_int(v, key));
  };
  auto texts = [&](std::vector<std::string>& axis) { axis = values; };
  if (key == "parallel.tp") ints(sp.tp);
  else if (key == "parallel.pp") ints(sp.pp);
  else if (key == "parallel.cp") ints(sp.cp);
  else if (key == "parallel.ep") ints(sp.ep);
  else if (key == "parallel.zero") ints(sp.zero);
  else if (key == "parallel.microbatch_size") ints(sp.microbatch_size);
  else if (key == "parallel.virtual_stages") ints(sp.virtual_stages);
  else if (key == "parallel.sequence_parallel") {
    sp.sequence_parallel.clear();
    for (const auto& v : values) {
      if (v != "true" && v != "false") throw InputError(kCli, key, "expected true or false, got \"" + v + "\"");
      sp.sequence_parallel.push_back(v == "true");
    }
  } else if (key == "parallel.pp_schedule") texts(sp.schedules);
  else if (key == "training.activation_checkpointing") texts(sp.recompute);
  else if (key == "training.precision") texts(sp.precisions);
  else {
    throw InputError(kCli, key, "not a planned axis; expected one of parallel.tp, parallel.pp, parallel.cp, parallel.ep, "
                                "parallel.zero, parallel.microbatch_size, parallel.virtual_stages, parallel.pp_schedule, "
                                "parallel.sequence_parallel, training.activation_checkpointing, training.precision "
                                "(other keys: --set)");
  }
  for (const int v : key == "parallel.zero" ? sp.zero : std::vector<int>{}) {
    if (v > 3) throw InputError(kCli, key, "expected 0, 1, 2 or 3, got " + std::to_string(v));
  }
}

/// Checks the text axes against the values the loader accepts (the key table).
void check_choices(const std::string& key, const std::vector<std::string>& values) {
  const auto table = config::scenario_key_table();
  for (const auto& k : table) {
    if (k.key != key) continue;
    for (const auto& v : values) {
      if (std::find(k.choices.begin(), k.choices.end(), v) == k.choices.end()) {
        std::string list;
        for (const auto& c : k.choices) list += (list.empty() ? "" : ", ") + c;
        throw InputError(kCli, key, "expected one of " + list + "; got \"" + v + "\"");
      }
    }
  }
}

/// True when the YAML file at `path` is a scenario (it has a top-level `cluster:` key), false
/// for a model card. Read as the loader reads files: a regular file within its size bound.
bool is_scenario_file(const std::string& path) {
  const std::string text = config::read_input_text(path);
  for (std::size_t at = 0; at < text.size();) {
    if (text.compare(at, 8, "cluster:") == 0) return true;
    const auto next = text.find('\n', at);
    if (next == std::string::npos) break;
    at = next + 1;
  }
  return false;
}

/// `text` as a double-quoted YAML scalar: a path may hold ':', '#', quotes or newlines.
std::string yaml_quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// A scenario around a model card: written to a new temporary file (created exclusively, so a
/// link planted at its name is never followed), loaded with `overrides`, removed.
config::Scenario scenario_from_model(const std::string& model, const std::string& topology,
                                     const std::vector<std::string>& overrides) {
  namespace fs = std::filesystem;
  std::string name = (fs::temp_directory_path() / "ironlaw-plan-XXXXXX.yaml").string();
  const int fd = ::mkstemps(name.data(), 5);
  if (fd < 0) throw IoError("cannot create a temporary scenario in " + fs::temp_directory_path().string() + ": " + std::strerror(errno));
  const fs::path tmp = name;
  const std::string text = "# generated by ironlaw plan\nname: " + yaml_quoted("plan-" + fs::path(model).stem().string()) +
                           "\nmodel: " + yaml_quoted(fs::absolute(model).string()) +
                           "\ncluster:\n  topology: " + yaml_quoted(fs::absolute(topology).string()) +
                           "\n  nodes: 1\ntraining:\n  global_batch_tokens: 1\nrun:\n  steps: 1\noutput:\n  path: none\n";
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  try {
    if (!written) throw IoError("cannot write the temporary scenario " + tmp.string());
    config::Scenario s = config::load_scenario(tmp.string(), overrides);
    fs::remove(tmp);
    return s;
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
}

std::string fixed(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string gib(double bytes) { return fixed(bytes / 1073741824.0, 1); }

const char* goal_text(const report::PlanQuestion& q) {
  switch (q.goal) {
    case report::PlanQuestion::Goal::deadline: return "fewest GPUs that finish within the deadline";
    case report::PlanQuestion::Goal::budget: return "fastest within the budget";
    case report::PlanQuestion::Goal::fastest: break;
  }
  return "fastest layout";
}

/// Columns of the machine-readable rows and of /plan: name, unit.
struct Column {
  const char* name;
  const char* unit;
  const char* description;
};
const std::vector<Column>& columns() {
  static const std::vector<Column> c{
      {"rank", "1", "rank by the simulated figures under the question (0: not simulated)"},
      {"predicted_rank", "1", "rank by the predictor among the layouts that passed pruning"},
      {"gpus", "1", "GPUs of the cluster"},
      {"tp", "1", "tensor-parallel degree"},
      {"pp", "1", "pipeline stages"},
      {"cp", "1", "context-parallel degree"},
      {"dp", "1", "data-parallel degree"},
      {"ep", "1", "expert-parallel degree"},
      {"zero", "1", "ZeRO stage"},
      {"microbatch_size", "1", "sequences per microbatch"},
      {"virtual_stages", "1", "model chunks per pipeline rank"},
      {"sequence_parallel", "1", "1 when Megatron sequence parallelism is on"},
      {"days", "d", "training.tokens at the simulated tokens/s, no failures"},
      {"gpu_hours", "h", "days x 24 x GPUs"},
      {"cost_usd", "USD", "GPU-hours x --price"},
      {"mfu", "1", "model FLOPs utilisation of the simulated step (PaLM convention)"},
      {"peak_memory_bytes", "B", "memory per GPU: what the simulation compares with HBM (the allocator replay's reserved peak) where that check ran, else the run layer's per-term total"},
      {"step_time_s", "s", "simulated step time"},
      {"compute_s", "s", "simulated compute per step"},
      {"exposed_comm_s", "s", "simulated exposed communication per step"},
      {"bubble_s", "s", "simulated pipeline bubble per step"},
      {"other_s", "s", "simulated data stall and other idle time per step"},
      {"predicted_step_time_s", "s", "the predictor's step time (a ranking device, not a result)"},
  };
  return c;
}

std::vector<double> values_of(const report::PlanRow& r) {
  const bool sim = r.status == "ok";
  const double nan = std::nan("");
  return {static_cast<double>(r.rank), static_cast<double>(r.predicted_rank), static_cast<double>(r.gpus),
          static_cast<double>(r.tp), static_cast<double>(r.pp), static_cast<double>(r.cp),
          static_cast<double>(r.dp), static_cast<double>(r.ep), static_cast<double>(r.zero),
          static_cast<double>(r.microbatch_size), static_cast<double>(r.virtual_stages),
          r.sequence_parallel ? 1.0 : 0.0, sim ? r.days : nan, sim ? r.gpu_hours : nan, sim ? r.cost_usd : nan,
          sim ? r.mfu : nan, r.memory_bytes > 0 ? r.memory_bytes : nan, sim ? r.step_time_s : nan,
          sim ? r.compute_s : nan, sim ? r.exposed_comm_s : nan, sim ? r.bubble_s : nan,
          sim ? r.data_stall_s + r.other_s : nan, r.predicted_rank > 0 ? r.predicted.step_s : nan};
}

}  // namespace

int cmd_plan(const Args& args) {
  po::options_description opts(
      "ironlaw plan MODEL.yaml|SCENARIO.yaml [options]\n"
      "  Enumerates layouts (tp, pp, cp, dp, ep, ZeRO stage, microbatch size, schedule, virtual\n"
      "  stages, sequence parallelism, recompute policy, precision recipe) on each GPU count,\n"
      "  prunes them with the loader's checks, the run layer's refusals and its memory model,\n"
      "  ranks the rest with a closed-form predictor, simulates the best --top K event by event\n"
      "  and prints them ranked by the simulated figures. Questions: the fastest layout (default),\n"
      "  the fewest GPUs finishing within --days D, or the fastest within --budget USD at --price.\n"
      "  A model card needs --batch-tokens and --seq (and --tokens for days); a scenario gives them.\n"
      "  Exit status: 0; 10 + N when N of the layouts chosen for simulation failed there; 2 bad input");
  std::string input, topology, batch, seq, tokens, gpus_text, out_path;
  std::vector<std::string> sets, spaces;
  double days = 0, budget = 0, price = 0;
  std::size_t top = 20;
  int threads = 1;
  std::size_t max_layouts = 1'000'000;
  Limits limits;
  std::string& max_memory = limits.max_memory;
  opts.add_options()
      ("help,h", "show this help")
      ("input", po::value(&input), "model card or scenario YAML")
      ("topology", po::value(&topology), "topology for a model card (default: topologies/dgx-h100-leaf-spine.yaml)")
      ("batch-tokens", po::value(&batch), "training.global_batch_tokens, e.g. \"8 Mi\"")
      ("seq", po::value(&seq), "training.sequence_length, e.g. 8192")
      ("tokens", po::value(&tokens), "training.tokens, e.g. \"15 T\"")
      ("gpus", po::value(&gpus_text), "GPU counts: N, A..B (doubling) or A..B:STEP, comma-separated (default: the scenario's)")
      ("days", po::value(&days), "deadline in days: the fewest GPUs that finish within it")
      ("budget", po::value(&budget), "budget in USD: the fastest layout that costs at most this (needs --price)")
      ("price", po::value(&price), "USD per GPU-hour, for the cost column")
      ("space", po::value(&spaces)->composing(), "KEY=V1,V2,... restricts or widens one axis of the search (repeatable)")
      ("set", po::value(&sets)->composing(), "KEY=VALUE applied to the base scenario")
      ("top", po::value(&top)->default_value(20), "layouts simulated event by event (0: rank with the predictor only)")
      ("jobs,j", po::value(&threads)->default_value(1), "threads for the prediction and the simulations")
      ("max-layouts", po::value(&max_layouts)->default_value(max_layouts), "refuse a search of more layouts than this (the product of --gpus and the --space axes)")
      ("max-memory", po::value(&max_memory),
       "skip layouts whose simulation is estimated to need more host memory than this, e.g. \"32 GiB\" (default: half of this machine's RAM)")
      ("step-cpu-limit", po::value(&limits.step_cpu_limit_s)->default_value(limits.step_cpu_limit_s),
       "CPU seconds one layout's step simulation may use; past it (or once its pace projects past it) the layout's "
       "row says so")
      ("all", "also list the layouts that were predicted but not simulated, and the pruned ones")
      ("output,o", po::value(&out_path), "HDF5 file with /plan (default: outputs/<name>-plan.h5)")
      ("csv", "print the rows as CSV instead of the table")
      ("json", "print the plan as JSON instead of the table");
  add_cpu_limit_option(opts, limits.cpu_limit_s, "its prediction and every layout's simulation together");
  po::variables_map vm;
  if (!parse_command_line(args, opts, "input", vm)) return kExitOk;
  if (input.empty()) throw InputError({}, "MODEL", "a model card or scenario file is required");
  note_command_input(input);
  if (threads < 1 || threads > 1024) throw InputError({}, "-j", "expected 1 to 1024 threads");
  apply_step_cpu_limit(limits.step_cpu_limit_s);
  apply_command_cpu_limit(limits.cpu_limit_s);
  if (top > 10'000) throw InputError({}, "--top", "expected 0 to 10000 layouts");
  if (vm.count("csv") && vm.count("json")) throw InputError({}, "--csv", "give --csv or --json, not both");
  if (vm.count("days") && vm.count("budget")) throw InputError({}, "--days", "give --days or --budget, not both");
  if (vm.count("days") && !(days > 0 && days < 1e6)) throw InputError({}, "--days", "expected a number of days above 0 and below 1e6");
  if (vm.count("budget") && !(budget > 0 && std::isfinite(budget))) throw InputError({}, "--budget", "expected USD above 0");
  if (vm.count("budget") && !vm.count("price")) throw InputError({}, "--price", "--budget needs --price (USD per GPU-hour)");
  if (vm.count("price") && !(price > 0 && price < 1e6)) throw InputError({}, "--price", "expected USD per GPU-hour above 0");
  const OutputFormat format = vm.count("csv") ? OutputFormat::csv : vm.count("json") ? OutputFormat::json : OutputFormat::text;

  report::PlanSpace space;
  space.max_simulation_bytes = memory_limit(limits);
  for (const auto& s : spaces) parse_space(s, space);
  check_choices("parallel.pp_schedule", space.schedules);
  check_choices("training.activation_checkpointing", space.recompute);
  check_choices("training.precision", space.precisions);

  std::vector<std::string> overrides;
  if (!batch.empty()) overrides.push_back("training.global_batch_tokens=" + batch);
  if (!seq.empty()) overrides.push_back("training.sequence_length=" + seq);
  if (!tokens.empty()) overrides.push_back("training.tokens=" + tokens);
  overrides.insert(overrides.end(), sets.begin(), sets.end());
  config::Scenario base;
  if (is_scenario_file(input)) {
    if (!topology.empty()) overrides.push_back("cluster.topology=" + topology);
    base = config::load_scenario(input, overrides);
  } else {
    if (batch.empty()) throw InputError({}, "--batch-tokens", "a model card needs the global batch, e.g. --batch-tokens \"8 Mi\"");
    if (seq.empty()) throw InputError({}, "--seq", "a model card needs the sequence length, e.g. --seq 8192");
    base = scenario_from_model(input, topology.empty() ? default_topology_path() : topology, overrides);
  }
  if (base.model.layer_list) {
    throw InputError(base.where("model"), "model", "plan searches transformer layouts; " + base.model.name +
                                                       " is a layer-list model (data parallelism only: use sweep)");
  }
  if (!gpus_text.empty()) space.gpus = parse_gpus(gpus_text, base.topology.node.gpus);
  {
    // Every combination of the axes is a row: bounded before any is enumerated.
    const report::PlanSpace full = report::resolve_space(base, space);
    double layouts = 1;
    for (const std::size_t n : {full.gpus.size(), full.tp.size(), full.pp.size(), full.cp.size(), full.ep.size(),
                                full.microbatch_size.size(), full.schedules.size(), full.virtual_stages.size(),
                                full.zero.size(), full.sequence_parallel.size(), full.recompute.size(),
                                full.precisions.size()})
      layouts *= static_cast<double>(std::max<std::size_t>(n, 1));
    if (layouts > static_cast<double>(max_layouts)) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3g", layouts);
      throw InputError({}, "--space", std::string("the search has up to ") + buf + " layouts (the product of --gpus and the --space axes), above the limit of " +
                                            std::to_string(max_layouts) + "; narrow --gpus or --space, or raise --max-layouts");
    }
  }
  for (const auto& p : space.precisions) {
    if (!base.topology.device.peak_flops.count(p))
      throw InputError(kCli, "training.precision", "the device " + base.topology.device.name + " gives no peak for " + p);
  }
  if (vm.count("days") && !(base.training.tokens > 0))
    throw InputError({}, "--days", "a deadline needs training.tokens (--tokens \"15 T\")");
  if (vm.count("budget") && !(base.training.tokens > 0))
    throw InputError({}, "--budget", "a budget needs training.tokens (--tokens \"15 T\")");

  report::PlanQuestion q;
  q.price_per_gpu_hour = price;
  if (vm.count("days")) {
    q.goal = report::PlanQuestion::Goal::deadline;
    q.deadline_days = days;
  } else if (vm.count("budget")) {
    q.goal = report::PlanQuestion::Goal::budget;
    q.budget_usd = budget;
  }

  if (out_path.empty()) {
    const std::string dir = base.output.path.empty() ? "outputs" : std::filesystem::path(base.output.path).parent_path().string();
    out_path = (dir.empty() ? std::string(".") : dir) + "/" + base.name + "-plan.h5";
  }
  probe_output_path(out_path, {}, "-o");

  // Under MPI (ironlaw-mpi) each rank simulates every size-th of the chosen layouts and rank 0
  // gathers their figures (bit for bit) and alone goes on to print and write.
  Ranks& group = ranks();
  report::SimulateRows spread;
  if (group.size() > 1) {
    spread = [&group, threads](std::vector<report::PlanRow>& rows, const std::function<void(report::PlanRow&)>& one) {
      const auto size = static_cast<std::size_t>(group.size());
      std::vector<std::size_t> mine;
      for (std::size_t i = static_cast<std::size_t>(group.rank()); i < rows.size(); i += size) mine.push_back(i);
      std::atomic<std::size_t> next{0};
      auto work = [&] {
        for (std::size_t j = next++; j < mine.size(); j = next++) one(rows[mine[j]]);
      };
      std::vector<std::thread> pool;
      for (int t = 1; t < threads; ++t) pool.emplace_back(work);
      work();
      for (auto& t : pool) t.join();
      std::vector<std::string> encoded;
      for (const std::size_t i : mine) encoded.push_back(report::encode_simulated(rows[i]));
      const auto gathered = group.gather(encoded);
      if (group.rank() != 0) return false;
      for (std::size_t r = 0; r < gathered.size(); ++r)
        for (std::size_t j = 0; j < gathered[r].size(); ++j) report::decode_simulated(gathered[r][j], rows[r + j * size]);
      return true;
    };
  }
  const report::PlanResult res = report::plan(base, space, q, top, static_cast<unsigned>(threads), spread);
  if (group.rank() != 0) return kExitOk;  // rank 0 prints, writes and sets the exit status
  const bool all = vm.count("all") > 0;
  std::vector<const report::PlanRow*> shown;
  for (const auto& r : res.rows)
    if (all || r.status == "ok" || r.status.rfind("failed", 0) == 0 ||
        (top == 0 && r.predicted_rank > 0 && r.predicted_rank <= 20))
      shown.push_back(&r);

  if (format == OutputFormat::csv) {
    std::string line = "status,layout,precision,recompute,schedule";
    for (const auto& c : columns()) line += std::string(",") + c.name;
    std::printf("%s\n", line.c_str());
    for (const auto* r : shown) {
      line = csv_field(r->status) + "," + csv_field(r->layout()) + "," + r->precision + "," + r->recompute + "," + r->schedule;
      for (double v : values_of(*r)) {
        line += ',';
        line += csv_number(v);
      }
      std::printf("%s\n", line.c_str());
    }
  } else if (format == OutputFormat::json) {
    std::string out = "{\"scenario\": " + json_string(base.name) + ", \"question\": " + json_string(goal_text(q)) +
                      ", \"deadline_days\": " + json_number(q.deadline_days) + ", \"budget_usd\": " +
                      json_number(q.budget_usd) + ", \"price_per_gpu_hour\": " + json_number(q.price_per_gpu_hour) +
                      ", \"enumerated\": " + std::to_string(res.enumerated) + ", \"pruned_invalid\": " +
                      std::to_string(res.pruned_invalid) + ", \"pruned_not_simulated\": " +
                      std::to_string(res.pruned_not_simulated) + ", \"pruned_memory\": " +
                      std::to_string(res.pruned_memory) + ", \"memory_replayed\": " + std::to_string(res.memory_replayed) +
                      ", \"memory_rescued\": " + std::to_string(res.memory_rescued) +
                      ", \"predicted\": " + std::to_string(res.survivors) +
                      ", \"simulated\": " + std::to_string(res.simulated) + ", \"shared\": " +
                      std::to_string(res.shared) + ", \"step_simulations\": " + std::to_string(res.step_simulations) +
                      ", \"agreement\": {\"top_choice\": " +
                      (res.agreement.top_choice ? "true" : "false") + ", \"per_gpu_agree\": " +
                      std::to_string(res.agreement.per_gpu_agree) + ", \"per_gpu_total\": " +
                      std::to_string(res.agreement.per_gpu_total) + ", \"kendall_tau\": " +
                      json_number(res.agreement.kendall_tau) + ", \"median_abs_error\": " +
                      json_number(res.agreement.median_abs_error) + "}, \"units\": {";
    for (std::size_t i = 0; i < columns().size(); ++i)
      out += (i ? ", " : "") + json_string(columns()[i].name) + ": " + json_string(columns()[i].unit);
    out += "}, \"rows\": [";
    for (std::size_t i = 0; i < shown.size(); ++i) {
      const auto* r = shown[i];
      out += (i ? ",\n " : "") + std::string("{\"status\": ") + json_string(r->status) + ", \"layout\": " +
             json_string(r->layout()) + ", \"schedule\": " + json_string(r->schedule) + ", \"recompute\": " +
             json_string(r->recompute) + ", \"precision\": " + json_string(r->precision);
      const auto v = values_of(*r);
      for (std::size_t c = 0; c < columns().size(); ++c) out += ", " + json_string(columns()[c].name) + ": " + json_number(v[c]);
      out += "}";
    }
    out += "]}\n";
    std::fputs(out.c_str(), stdout);
  } else {
    // Names, reasons and layouts quote the inputs: printable on the terminal (the HDF5 /plan and
    // the CSV and JSON keep them as data).
    std::printf("plan %s: %s on %s (%s, %d GPUs per node); batch %.0f tokens of %d, %.3g tokens\n", printable(base.name).c_str(),
                printable(base.model.name).c_str(), printable(base.topology.name).c_str(), printable(base.topology.device.name).c_str(),
                base.topology.node.gpus, base.training.global_batch_tokens, base.training.sequence_length,
                base.training.tokens);
    std::printf("question: %s", goal_text(q));
    if (q.goal == report::PlanQuestion::Goal::deadline) std::printf(" of %g days", q.deadline_days);
    if (q.goal == report::PlanQuestion::Goal::budget) std::printf(" of %.0f USD at %g USD/GPU-h", q.budget_usd, price);
    std::printf("\nlayouts: %zu enumerated, %zu refused by the loader's checks, %zu not simulated by the run layer, "
                "%zu out of memory; %zu ranked by the predictor, %zu simulated (%zu step simulations: %zu "
                "layouts took the step of their ZeRO-1 twin)\n"
                "memory: the %zu best-predicted layouts checked as the simulation checks them (allocator replay); "
                "%zu of them fit though the per-term total exceeds HBM\n",
                res.enumerated, res.pruned_invalid, res.pruned_not_simulated, res.pruned_memory, res.survivors,
                res.simulated, res.step_simulations, res.shared, res.memory_replayed, res.memory_rescued);
    std::printf("pruned by:");
    std::vector<std::pair<std::string, std::size_t>> reasons(res.prune_reasons.begin(), res.prune_reasons.end());
    std::stable_sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    for (std::size_t i = 0; i < reasons.size() && i < 6; ++i)
      std::printf("%s %s %zu", i ? "," : "", printable(reasons[i].first).c_str(), reasons[i].second);
    std::printf("\n\n%4s %6s  %-50s %8s %10s %10s %6s %7s %9s %9s %9s %9s %9s\n", "rank", "GPUs", "layout", "days",
                "GPU-hours", "cost USD", "MFU", "mem GiB", "step s", "compute", "exp.comm", "bubble", "predicted");
    for (const auto* r : shown) {
      if (r->status == "predicted") {
        std::printf("%4s %6d  %-50s predicted: %.2f days, step %.4f s (compute %.4f, exposed comm %.4f, bubble %.4f)\n",
                    ("p" + std::to_string(r->predicted_rank)).c_str(), r->gpus, r->layout().c_str(), r->predicted_days,
                    r->predicted.step_s, r->predicted.compute_s, r->predicted.exposed_comm_s, r->predicted.bubble_s);
        continue;
      }
      if (r->status != "ok") {
        std::printf("%4s %6d  %-50s %s\n", r->predicted_rank ? ("p" + std::to_string(r->predicted_rank)).c_str() : "-",
                    r->gpus, printable(r->layout()).c_str(), printable(r->status).c_str());
        continue;
      }
      std::printf("%4d %6d  %-50s %8.2f %10.4g %10s %5.1f%% %7s %9.4f %9.4f %9.4f %9.4f %9.4f%s\n", r->rank, r->gpus,
                  r->layout().c_str(), r->days, r->gpu_hours, price > 0 ? fixed(r->cost_usd, 0).c_str() : "-",
                  100 * r->mfu, gib(r->memory_bytes).c_str(), r->step_time_s, r->compute_s, r->exposed_comm_s,
                  r->bubble_s, r->predicted.step_s, r->meets ? "" : "  (misses)");
    }
    const auto& ag = res.agreement;
    std::printf("\npredictor vs simulation over the %zu simulated: top choice %s; best per GPU count %d of %d; "
                "Kendall tau %.2f; median |predicted/simulated - 1| %.1f %%\n",
                res.simulated, ag.top_choice ? "agreed" : "differed", ag.per_gpu_agree, ag.per_gpu_total, ag.kendall_tau,
                100 * ag.median_abs_error);
    const report::PlanRow* best = nullptr;
    for (const auto& r : res.rows)
      if (r.status == "ok" && r.rank == 1) best = &r;
    if (best && best->meets) {
      std::printf("answer: %d GPUs, %s: %.2f days, %.4g GPU-hours, MFU %.1f %%\n", best->gpus, best->layout().c_str(),
                  best->days, best->gpu_hours, 100 * best->mfu);
    } else {
      std::printf("answer: no simulated layout meets the question; widen --gpus or --space, or raise --top\n");
    }
    std::printf("# days, GPU-hours: training.tokens at the simulated tokens/s, no failures or checkpoints\n");
  }

  // /plan: the simulated and predicted rows (pruned ones are counted in the attributes).
  output::H5Writer writer(out_path);
  writer.write_scenario(base.resolved_yaml, base.seed, base.name);
  std::vector<std::string> names, units, descriptions;
  for (const auto& c : columns()) {
    names.push_back(c.name);
    units.push_back(c.unit);
    descriptions.push_back(c.description);
  }
  std::vector<output::SweepRow> rows;
  for (const auto& r : res.rows) {
    if (r.predicted_rank == 0) continue;
    rows.push_back({{r.layout(), r.schedule, r.recompute, r.precision}, values_of(r), r.status});
  }
  writer.write_plan({"layout", "schedule", "recompute", "precision"}, names, units, descriptions, rows,
                    {{"enumerated", static_cast<double>(res.enumerated)},
                     {"pruned_invalid", static_cast<double>(res.pruned_invalid)},
                     {"pruned_not_simulated", static_cast<double>(res.pruned_not_simulated)},
                     {"pruned_memory", static_cast<double>(res.pruned_memory)},
                     {"predicted", static_cast<double>(res.survivors)},
                     {"simulated", static_cast<double>(res.simulated)},
                     {"shared", static_cast<double>(res.shared)},
                     {"step_simulations", static_cast<double>(res.step_simulations)},
                     {"top_choice_agreed", res.agreement.top_choice ? 1.0 : 0.0},
                     {"kendall_tau", res.agreement.kendall_tau}});
  writer.commit();
  if (format == OutputFormat::text) std::printf("# wrote %s\n", printable(out_path).c_str());
  return sweep_exit_status(res.failed);
}

}  // namespace ironlaw::cli
