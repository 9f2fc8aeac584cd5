// The parameter-server run mode (sim/run/parameter_server.hpp) against hand derivations.
//
// The world of most cases: the MNIST MLP, 101,770 float32 parameters, so one pull or push moves
// S = 407,080 B; one server on node 1 (NIC 0), N workers on node 0 (node.gpus = node.nics = N),
// both nodes under one leaf of the DGX H100 leaf/spine topology: NIC 47 GB/s, PCIe 51 GB/s,
// host memory 240 GB/s. A server → worker path is the server's host memory → its NIC's PCIe
// switch (the switch's upstream port, 250 ns), PCIe switch→NIC (250 ns), NIC→leaf (0.5 us +
// 300 ns switch), leaf→NIC (0.5 us), NIC→PCIe switch (250 ns), PCIe switch→GPU (250 ns): 2.3 us
// of latency; the push path is the same links the other way, 2.3 us.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "config/load.hpp"
#include "core/error.hpp"
#include "output/h5_reader.hpp"
#include "run/cpu_budget.hpp"
#include "run/parameter_server.hpp"

using namespace ironlaw;

namespace {

const std::string kScenario = IRONLAW_SOURCE_DIR "/tests/ps/data/mnist-ps.yaml";
constexpr double kS = 101770.0 * 4;       // bytes of one pull or push
constexpr double kNic = 47e9;             // B/s
constexpr std::int64_t kLatencyNs = 2300; // one path's latencies
constexpr double kHostBw = 240e9;         // B/s

config::Scenario world(int workers, const std::vector<std::string>& more = {}) {
  std::vector<std::string> sets{"cluster.topology.node.gpus=" + std::to_string(workers),
                                "cluster.topology.node.nics=" + std::to_string(workers),
                                "training.global_batch_tokens=" + std::to_string(64 * workers)};
  sets.insert(sets.end(), more.begin(), more.end());
  return config::load_scenario(kScenario, sets);
}

std::int64_t ceil_ns(double seconds) { return static_cast<std::int64_t>(std::ceil(seconds * 1e9 - 1e-6)); }

std::vector<std::string> errors_of(const std::vector<std::string>& sets) {
  try {
    config::load_scenario(kScenario, sets);
  } catch (const InputError& e) {
    std::vector<std::string> out;
    for (const auto& d : e.diagnostics()) out.push_back(d.key + ": " + d.message);
    return out;
  }
  return {"(no error)"};
}

}  // namespace

TEST_CASE("a single worker's gradients are never stale", "[ps]") {
  const auto sc = world(1);
  NullSink sink;
  // Through the whole path: the worker's compute from the one-GPU step of the cost model.
  const auto r = run::simulate_parameter_server(sc, sink, run::TraceLevel::none);
  REQUIRE(r.plan.worker_gpus.size() == 1);
  CHECK(r.worker_compute > Time::zero());
  REQUIRE(r.gradients.size() == 10);  // 10 iterations x 1 server
  for (const auto& g : r.gradients) CHECK(g.staleness == 0);
  CHECK(r.staleness_max == 0);
  CHECK(r.staleness_mean == 0);
}

TEST_CASE("N equal asynchronous workers apply gradients N-1 updates stale", "[ps]") {
  // Hand derivation: with one server applying in arrival order and equal workers, the order of
  // updates is round-robin; between a worker's pull (right after its own update) and its next
  // update every one of the other N-1 workers' updates lands exactly once. The first round
  // (left out of the statistics) is 0, 1, ..., N-1 in start order.
  for (const int n : {2, 4, 8}) {
    INFO("workers " << n);
    const auto sc = world(n);
    const std::vector<Time> compute(static_cast<std::size_t>(n), Time::ms(1));
    NullSink sink;
    const auto r = run::simulate_parameter_server(sc, compute, sink, run::TraceLevel::none);
    CHECK(r.staleness_mean == n - 1);
    CHECK(r.staleness_p50 == n - 1);
    CHECK(r.staleness_p99 == n - 1);
    CHECK(r.staleness_max == n - 1);
    CHECK(r.staleness_samples == static_cast<std::size_t>(n * 9));
    std::vector<std::int64_t> first;
    for (const auto& g : r.gradients) {
      if (g.iteration == 0) first.push_back(g.staleness);
    }
    std::sort(first.begin(), first.end());
    std::vector<std::int64_t> expected(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) expected[static_cast<std::size_t>(i)] = i;
    CHECK(first == expected);
  }
}

TEST_CASE("the staleness-aware step rate discounts each gradient by its staleness, and sync counts steps", "[ps]") {
  // Zhang et al. (IJCAI 2016): a gradient of staleness t is applied at a0 / max(1, t). Four
  // equal workers, one server (share 1), 10 iterations: past the first round every gradient is
  // 3 updates stale, so each counts 1/3 of an a0-step: 40 gradients / makespan / 3.
  const int n = 4;
  NullSink sink;
  const auto r = run::simulate_parameter_server(world(n), std::vector<Time>(n, Time::ms(1)), sink,
                                                run::TraceLevel::none);
  CHECK(r.gradients_per_s == Approx(40 / r.makespan.seconds()));
  CHECK(r.staleness_aware_steps_per_s == Approx(40.0 / 3 / r.makespan.seconds()));
  // Synchronous: every step averages the four gradients into one a0-step.
  const auto s = run::simulate_parameter_server(world(n, {"parameter_server.mode=sync", "run.steps=3"}),
                                                std::vector<Time>(n, Time::ms(1)), sink, run::TraceLevel::none);
  CHECK(s.staleness_aware_steps_per_s == Approx(3 / s.makespan.seconds()));
}

TEST_CASE("the server NIC carries every pull and saturates at bytes over bandwidth", "[ps]") {
  const int n = 4;
  const auto sc = world(n);
  const Time compute = Time::ms(1);
  const std::vector<Time> computes(n, compute);
  NullSink sink;
  const auto r = run::simulate_parameter_server(sc, computes, sink, run::TraceLevel::none);
  // Every worker pulls S from the one server 10 times: 4 x 10 x 407,080 B out of its NIC, and as
  // much pushed into it.
  CHECK(r.server_nic_out_bytes == Approx(n * 10 * kS));
  CHECK(r.server_nic_in_bytes == Approx(n * 10 * kS));
  CHECK(r.server_nic_out_utilisation == Approx(n * 10 * kS / (kNic * r.makespan.seconds())));
  // First round: the four pulls share the server's NIC (the narrowest shared link): they all end
  // after 4·S/B plus the path's latency; then 1 ms of compute; then the four pushes share the
  // NIC the other way, 4·S/B + 2.3 us again. (The server's PCIe port, 51 GB/s, carries the same
  // four flows and is wider than the NIC.)
  const std::int64_t phase = ceil_ns(n * kS / kNic) + kLatencyNs;
  for (const auto& g : r.gradients) {
    if (g.iteration != 0) continue;
    CHECK(g.pull_start == Time::zero());
    CHECK(std::llabs(g.push_done.count_ns() - (2 * phase + compute.count_ns())) <= 2);
  }
}

TEST_CASE("a synchronous step is the slowest worker's compute plus the transfers and the update", "[ps]") {
  const int n = 4;
  const auto sc = world(n, {"parameter_server.mode=sync", "run.steps=3"});
  // Worker 0 is the straggler: 5 ms against 1 ms.
  const std::vector<Time> compute{Time::ms(5), Time::ms(1), Time::ms(1), Time::ms(1)};
  NullSink sink;
  const auto r = run::simulate_parameter_server(sc, compute, sink, run::TraceLevel::none);
  // By hand, per step: 4 pulls sharing the server NIC, 4·S/B + 2.3 us; the straggler's 5 ms; its
  // push alone on the path (47 GB/s NIC the narrowest), S/B + 2.3 us (the other three pushed and
  // were accumulated long before); its accumulation (12 B/param) and the one SGD update
  // (12 B/param) at 240 GB/s.
  const std::int64_t pulls = ceil_ns(n * kS / kNic) + kLatencyNs;
  const std::int64_t push = ceil_ns(kS / kNic) + kLatencyNs;
  const std::int64_t accumulate = ceil_ns(101770.0 * 12 / kHostBw);
  const std::int64_t update = ceil_ns(101770.0 * 12 / kHostBw);
  const std::int64_t step = pulls + Time::ms(5).count_ns() + push + accumulate + update;
  REQUIRE(r.steps_records.size() == 3);
  for (const auto& s : r.steps_records) {
    INFO("step " << s.step);
    CHECK(std::llabs((s.end_ns - s.start_ns) - step) <= 3);
  }
  CHECK(std::llabs(r.makespan.count_ns() - 3 * step) <= 9);
  CHECK(r.staleness_max == 0);  // every worker pulls the weights of the last update
}

TEST_CASE("a sparse model pulls and pushes only the embedding rows its batch touches", "[ps]") {
  // DLRM-style card: 6,432,181 x 16 table, dense MLP 416-512-256-1 = 345,089 parameters. A worker
  // batch of 64 samples x 26 lookups touches at most 1,664 rows: 16 float32 values + an 8-byte id
  // each, beside the dense parameters whole.
  const auto sc = config::load_scenario(IRONLAW_SOURCE_DIR "/scenarios/ps/dlrm-ps-async.yaml",
                                        {"parameter_server.servers=1", "parallel.microbatch_size=64",
                                         "training.global_batch_tokens=" + std::to_string(32 * 64 * 26)});
  const auto plan = run::plan_parameter_servers(sc);
  REQUIRE(plan.servers.size() == 1);
  CHECK(plan.params == 103259985.0);
  CHECK(plan.servers[0].dense_params == 345089.0);
  CHECK(plan.servers[0].touched_rows == 64.0 * 26);
  CHECK(plan.servers[0].pull_bytes == 345089.0 * 4 + 64.0 * 26 * (16 * 4 + 8));
  // An explicit figure replaces the upper bound.
  const auto measured = config::load_scenario(
      IRONLAW_SOURCE_DIR "/scenarios/ps/dlrm-ps-async.yaml",
      {"parameter_server.servers=1", "parameter_server.sparse_rows_per_batch=1000"});
  CHECK(run::plan_parameter_servers(measured).servers[0].touched_rows == 1000.0);
}

TEST_CASE("variables are sharded by size over the servers, round-robin", "[ps]") {
  // MinSizePartitioner with 256 KiB shards: dense1 (100,480 params = 401,920 B) is cut into
  // min(servers, 401,920 / 262,144 = 1) = 1 shard; with min_shard_bytes 100,000 into
  // min(2, 4) = 2; dense2 (1,290 params) stays whole and goes to the next server.
  const auto one = run::plan_parameter_servers(world(2, {"parameter_server.servers=2"}));
  REQUIRE(one.shards.size() == 2);
  CHECK(one.shards[0].server == 0);
  CHECK(one.shards[1].server == 1);
  const auto split =
      run::plan_parameter_servers(world(2, {"parameter_server.servers=2", "parameter_server.min_shard_bytes=100000 B"}));
  REQUIRE(split.shards.size() == 3);
  CHECK(split.shards[0].params == 100480.0 / 2);
  CHECK(split.servers[0].dense_params == 100480.0 / 2 + 1290);
  CHECK(split.servers[1].dense_params == 100480.0 / 2);
}

TEST_CASE("parameter_server keys are validated like every key", "[ps][config]") {
  CHECK(errors_of({"parameter_server.mode=lazy"}).size() == 1);
  const auto unknown = errors_of({"parameter_server.sever_nodes=1"});
  REQUIRE(unknown.size() == 1);
  CHECK(unknown[0].find("server_nodes") != std::string::npos);  // did you mean
  CHECK(errors_of({"parameter_server.server_nodes=2"}) ==
        std::vector<std::string>{"parameter_server.server_nodes: dedicated server nodes must leave at least one "
                                 "worker node of the 2, got 2"});
  CHECK(errors_of({"parameter_server.servers=9"}) ==
        std::vector<std::string>{"parameter_server.servers: at most one server per NIC: 1 node(s) x 8 NICs hold 8 "
                                 "servers, got 9"});
  CHECK(errors_of({"parallel.tp=2"}).size() >= 1);
  CHECK(errors_of({"data.storage_bandwidth_per_node=1 GB/s"}) ==
        std::vector<std::string>{"data.storage_bandwidth_per_node: the input pipeline is not simulated under "
                                 "parameter_server; expected 0 (not modelled), got 1000000000 B/s"});
  CHECK(errors_of({"parameter_server.servers=0"}).size() == 1);
  CHECK(errors_of({"run.detail=full"}) ==
        std::vector<std::string>{"run.detail: not simulated under parameter_server (it belongs to the data-parallel "
                                 "step); remove it"});
}

TEST_CASE("ironlaw run writes a parameter-server run: /summary, /run/ps_gradients, /run/ps_servers", "[ps][cli]") {
  // 4 workers x 3 iterations x 1 server = 12 updates; staleness of the first round 0..3, then 3.
  const std::string out = (std::filesystem::temp_directory_path() / "ironlaw_ps_cli_test.h5").string();
  const std::string cmd = std::string(IRONLAW_BINARY) + " run " + kScenario +
                          " --set cluster.topology.node.gpus=4 --set cluster.topology.node.nics=4"
                          " --set training.global_batch_tokens=256 --set run.steps=3 --trace flow --quiet -o " + out;
  REQUIRE(std::system(cmd.c_str()) == 0);
  const output::H5Reader reader(out);
  std::map<std::string, double> summary;
  for (const auto& [name, value] : reader.summary()) summary[name] = value;
  CHECK(summary.at("ps_workers") == 4);
  CHECK(summary.at("ps_servers") == 1);
  CHECK(summary.at("ps_staleness_max") == 3);
  CHECK(summary.at("ps_staleness_mean") == 3);
  CHECK(summary.count("mfu") == 1);
  CHECK(reader.run_mode() == "steps");
  const auto gradients = reader.read_table("ps_gradients");
  REQUIRE(gradients.at(3).name == "staleness");
  const auto& stale = std::get<std::vector<std::int64_t>>(gradients.at(3).values);
  CHECK(stale.size() == 12);
  const auto servers = reader.read_table("ps_servers");
  CHECK(std::get<std::vector<double>>(servers.at(5).values).at(0) == kS);  // pull_bytes
  CHECK(reader.steps().size() == 3);
  std::filesystem::remove(out);
  // A sweep does not simulate this mode: refused, exit 2.
  const std::string sweep = std::string(IRONLAW_BINARY) + " sweep " + kScenario +
                            " --vary parameter_server.servers=1,2 > /dev/null 2>&1";
  const int rc = std::system(sweep.c_str());
  CHECK(WEXITSTATUS(rc) == 2);
}

TEST_CASE("a colocated server reaches its own node's workers over PCIe, the others over its NIC", "[ps]") {
  // Two nodes of 2 GPUs (one GPU and one NIC per PCIe switch), one server colocated on node 0,
  // NIC 0, which shares PCIe switch 0 with GPU 0. First pulls, by hand:
  // - worker 1 (GPU 1, other switch): host → switch 1 → GPU 1, alone: S / 51 GB/s + 2 x 250 ns;
  // - worker 0 (GPU 0) and the remote workers 2 and 3 all leave host memory through switch 0's
  //   upstream port: 3 flows on 51 GB/s (17 GB/s each) against 2 on the NIC (23.5 GB/s each),
  //   so the port binds: all three drain after 3·S / 51 GB/s; worker 0 then has 500 ns of
  //   latency, workers 2 and 3 the 2.3 us of the full path.
  const auto sc = world(2, {"cluster.nodes=2", "parameter_server.placement=colocated",
                            "training.global_batch_tokens=256"});
  const auto plan = run::plan_parameter_servers(sc);
  REQUIRE(plan.worker_gpus.size() == 4);
  CHECK(plan.servers[0].node == 0);
  MemorySink sink;
  const auto r = run::simulate_parameter_server(sc, std::vector<Time>(4, Time::ms(1)), sink, run::TraceLevel::flow);
  const std::int64_t shared = ceil_ns(3 * kS / 51e9);
  const std::map<int, std::int64_t> expected{{0, shared + 500},
                                             {1, ceil_ns(kS / 51e9) + 500},
                                             {2, shared + kLatencyNs},
                                             {3, shared + kLatencyNs}};
  int first_pulls = 0;
  for (const auto& e : sink.events) {
    if (sink.names.at(e.name) != "ps_pull" || e.start_ns != 0) continue;
    INFO("worker GPU " << e.rank);
    CHECK(std::llabs(e.end_ns - expected.at(e.rank)) <= 2);
    ++first_pulls;
  }
  CHECK(first_pulls == 4);
  // Only the two remote workers' traffic crosses the server's NIC: 2 x 10 pulls of S; the
  // switch's upstream port carries those and worker 0's: 3 x 10.
  CHECK(r.server_nic_out_bytes == Approx(2 * 10 * kS));
  CHECK(r.server_pcie_out_bytes == Approx(3 * 10 * kS));
  CHECK(r.server_pcie_in_bytes == Approx(3 * 10 * kS));
}

TEST_CASE("a server's PCIe hop narrower than its NIC caps its pulls", "[ps]") {
  // One server, 4 workers, PCIe set to 20 GB/s: the 4 first pulls share the server switch's
  // upstream port and switch → NIC link (20 GB/s, 5 GB/s each) before the NIC (47 GB/s, 11.75
  // each): they end after 4·S / 20 GB/s + 2.3 us. Without the hop at the server (the NIC alone,
  // as before this was modelled) they would end at 4·S / 47 GB/s + 2.3 us.
  const int n = 4;
  const auto sc = world(n, {"cluster.topology.node.pcie.bandwidth=20 GB/s"});
  MemorySink sink;
  const auto r = run::simulate_parameter_server(sc, std::vector<Time>(n, Time::ms(1)), sink, run::TraceLevel::flow);
  int first_pulls = 0;
  for (const auto& e : sink.events) {
    if (sink.names.at(e.name) != "ps_pull" || e.start_ns != 0) continue;
    CHECK(std::llabs(e.end_ns - (ceil_ns(n * kS / 20e9) + kLatencyNs)) <= 2);
    ++first_pulls;
  }
  CHECK(first_pulls == n);
  CHECK(r.server_pcie_out_bytes == Approx(n * 10 * kS));
  CHECK(r.server_pcie_out_utilisation == Approx(n * 10 * kS / (20e9 * r.makespan.seconds())));
  CHECK(r.server_nic_out_utilisation == Approx(n * 10 * kS / (kNic * r.makespan.seconds())));
}

TEST_CASE("two servers behind one PCIe switch share its upstream port", "[ps]") {
  // DGX A100-like switches: 2 GPUs and 2 NICs per PCIe switch. Workers: GPUs 0 and 1 of node 0;
  // servers 0 and 1 on NICs 0 and 1 of node 1, both behind that node's switch 0. The plan puts
  // dense1 (A = 401,920 B) on server 0 and dense2 (B = 5,160 B) on server 1.
  // First pulls by hand, max-min: 4 flows leave host memory through the one upstream port
  // (51 GB/s: 12.75 each), 2 per server NIC (23.5 each): the port binds, all at 12.75 GB/s until
  // server 1's B drain at t1 = B / 12.75 GB/s; then server 0's two flows have the port to
  // themselves (25.5 each) and their NIC binds (23.5 each): A − B more at 23.5 GB/s. Each then
  // has the 2.3 us of path latency.
  const auto sc = world(2, {"cluster.topology.node.gpus_per_pcie_switch=2", "parameter_server.servers=2"});
  const auto plan = run::plan_parameter_servers(sc);
  REQUIRE(plan.servers.size() == 2);
  const double a = plan.servers[0].pull_bytes;
  const double b = plan.servers[1].pull_bytes;
  REQUIRE(a == 100480.0 * 4);
  REQUIRE(b == 1290.0 * 4);
  MemorySink sink;
  run::simulate_parameter_server(sc, std::vector<Time>(2, Time::ms(1)), sink, run::TraceLevel::flow);
  const std::int64_t t1 = ceil_ns(b / 12.75e9);
  const std::int64_t t2 = t1 + ceil_ns((a - b) / 23.5e9);
  int first_pulls = 0;
  for (const auto& e : sink.events) {
    if (sink.names.at(e.name) != "ps_pull" || e.start_ns != 0) continue;
    const bool server0 = e.bytes == a;
    INFO("worker GPU " << e.rank << (server0 ? ", server 0" : ", server 1"));
    CHECK(std::llabs(e.end_ns - ((server0 ? t2 : t1) + kLatencyNs)) <= 3);
    ++first_pulls;
  }
  CHECK(first_pulls == 4);
}

TEST_CASE("the parameter-server event world is bounded by --step-cpu-limit like every simulation", "[ps][hostile]") {
  // The world of workers and servers (given their compute times, so no step simulation runs
  // first): a spent limit stops it with the error keyed --step-cpu-limit naming the world; an
  // unlimited one runs it to the end.
  const double before = run::step_cpu_limit();
  const int n = 4;
  NullSink sink;
  run::set_step_cpu_limit(0);
  try {
    (void)run::simulate_parameter_server(world(n), std::vector<Time>(n, Time::ms(1)), sink, run::TraceLevel::none);
    run::set_step_cpu_limit(before);
    FAIL("the parameter-server world was not stopped");
  } catch (const run::CpuLimitReached& e) {
    run::set_step_cpu_limit(before);
    REQUIRE(e.diagnostics().size() == 1);
    CHECK(e.diagnostics().front().key == "--step-cpu-limit");
    CHECK(e.diagnostics().front().message.find("parameter-server world") != std::string::npos);
  }
  const auto r = run::simulate_parameter_server(world(n), std::vector<Time>(n, Time::ms(1)), sink, run::TraceLevel::none);
  CHECK(r.makespan > Time::zero());
}
