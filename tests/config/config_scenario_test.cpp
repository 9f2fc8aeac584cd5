#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "config/load.hpp"
#include "config_test_support.hpp"

using namespace ironlaw;
using namespace ironlaw::config;
using ironlaw::config::testing::data;
using ironlaw::config::testing::data_dir;
using ironlaw::config::testing::errors_of;

TEST_CASE("a scenario loads with its model and topology files", "[scenario]") {
  const Scenario s = load_scenario(data("basic.yaml"));
  CHECK(s.name == "basic");
  CHECK(s.file == data("basic.yaml"));
  CHECK(s.seed == 7);
  CHECK(s.nodes == 2);
  CHECK(s.gpus() == 16);

  CHECK(s.model.name == "tiny");
  CHECK(s.model.file == data("model.yaml"));
  CHECK(s.model.layers == 4);
  CHECK(s.model.hidden == 256);
  CHECK(s.model.ffn_hidden == 1024);
  CHECK(s.model.heads == 8);
  CHECK(s.model.kv_heads == 4);
  CHECK(s.model.vocab == 1000);
  CHECK(s.model.activation == "swiglu");
  CHECK(s.model.norm == "rmsnorm");
  CHECK(*s.model.published.params == Approx(3.2e6));
  CHECK(*s.model.published.tokens == 1e12);
  CHECK(*s.model.published.gpu_hours == 1500);
  CHECK(*s.model.published.training_flops == Approx(1.9e19));
  CHECK(s.model.published.hardware == "H100-80GB");
  CHECK(s.model.published.sources.at("params") == "test card");
  CHECK(s.model.published.sources.at("hardware") == "test card");

  const TopologySpec& t = s.topology;
  CHECK(t.name == "test-leaf-spine");
  CHECK(t.file == data("topo.yaml"));
  CHECK(t.source == "made up for the config tests");
  CHECK(t.device.name == "Test GPU");
  CHECK(t.device.peak_flops.at("bf16") == 1e15);
  CHECK(t.device.peak_flops.at("fp32") == 60e12);
  CHECK(t.device.peak_flops.count("fp8") == 0);
  CHECK(t.device.hbm_bytes == 80e9);
  CHECK(t.device.hbm_bandwidth == 3e12);
  CHECK(t.device.sm_count == 132);
  CHECK(t.device.max_gemm_fraction == 0.8);
  CHECK(t.device.gemm_tile_m == 128);
  CHECK(t.device.kernel_launch_overhead == Time::us(4));
  CHECK(t.device.host_to_device_bandwidth == 50e9);
  CHECK(t.node.gpus == 8);
  CHECK(t.node.nvlink.bandwidth == 450e9);
  CHECK(t.node.gpus_per_pcie_switch == 2);
  CHECK(t.node.nic.bandwidth == 50e9);
  CHECK(t.node.nic.latency == Time::us(2));
  CHECK(t.fabric.kind == "leaf_spine");
  CHECK(t.fabric.nodes_per_leaf == 4);
  CHECK(t.fabric.oversubscription == 1.0);
  CHECK(t.fabric.spines == 0);
  CHECK(t.fabric.leaf_spine.bandwidth == 50e9);
  CHECK(t.fabric.switch_latency == Time::ns(300));
  CHECK(t.comm.channels == 4);
  CHECK(t.comm.launch_latency == Time::us(5));
  CHECK(t.comm.step_latency == Time::us(2));

  CHECK(s.parallel.tp == 2);
  CHECK(s.parallel.pp == 2);
  CHECK(s.parallel.zero == 1);
  CHECK(s.parallel.microbatch_size == 2);
  CHECK(s.parallel.bucket_bytes == 4.0 * 1024 * 1024);
  CHECK(s.parallel.order == std::vector<std::string>{"tp", "cp", "pp", "dp"});
  CHECK(s.training.sequence_length == 1024);
  CHECK(s.training.global_batch_tokens == 65536);
  CHECK(s.training.tokens == 1.5e13);
  CHECK(s.data.storage_bandwidth_per_node == 10e9);
  CHECK(s.data.sample_bytes == 32768);
  CHECK(s.data.workers_per_gpu == 4);
  CHECK(s.data.prefetch_batches == 2);
  CHECK(s.data.decode_time.distribution == "lognormal");
  CHECK(s.data.decode_time.mean == Approx(2e-3));
  CHECK(s.data.decode_time.cv == 0.5);
  CHECK(s.reliability.failures == data("failures.yaml"));
  CHECK(s.reliability.checkpoint_interval == Time::s(1800));
  CHECK(s.reliability.checkpoint_storage_bandwidth == 200e9);
  CHECK(s.reliability.restart_detection == Time::s(300));
  CHECK(s.reliability.restart_reschedule == Time::s(600));
  CHECK(s.run.steps == 5);
  CHECK(s.output.trace == "op");
}

TEST_CASE("dp auto is filled in from the GPUs left after tp, pp and cp", "[scenario]") {
  CHECK(load_scenario(data("basic.yaml")).parallel.dp == 4);  // 16 GPUs / (tp 2 * pp 2)
  CHECK(load_scenario(data("basic.yaml"), {"cluster.nodes=8"}).parallel.dp == 16);
  CHECK(load_scenario(data("basic.yaml"), {"parallel.dp=4"}).parallel.dp == 4);
}

TEST_CASE("the output path defaults to outputs/ beside the scenario folder", "[scenario]") {
  const std::string expected =
      std::filesystem::path(IRONLAW_SOURCE_DIR "/tests/config/outputs/basic.h5").lexically_normal().string();
  CHECK(load_scenario(data("basic.yaml")).output.path == expected);
  CHECK(load_scenario(data("basic.yaml"), {"output.path=runs/a.h5"}).output.path == data("runs/a.h5"));
  CHECK(load_scenario(data("basic.yaml"), {"output.path=none"}).output.path.empty());
}

TEST_CASE("an inline model and topology load like files", "[scenario]") {
  const Scenario s = load_scenario(data("inline.yaml"));
  CHECK(s.model.layers == 2);
  CHECK(s.model.kv_heads == 4);  // defaults to heads
  CHECK(s.model.file == data("inline.yaml"));
  CHECK(s.topology.device.name == "Inline GPU");
  CHECK(s.topology.device.hbm_bytes == 16.0 * 1024 * 1024 * 1024);
  CHECK(s.topology.node.gpus == 4);
  CHECK(s.topology.fabric.switch_latency == Time::ns(500));
  CHECK(s.topology.comm.channels == 0);
  CHECK(s.gpus() == 4);
  CHECK(s.parallel.dp == 4);
  CHECK(s.output.path == data("out/inline.h5"));
  CHECK(s.reliability.failures.empty());
}

TEST_CASE("every key remembers the file, line and column of its value", "[scenario]") {
  const Scenario s = load_scenario(data("basic.yaml"));
  CHECK(s.where("cluster.nodes").str() == data("basic.yaml") + ":6:10");
  CHECK(s.where("parallel.dp").str() == data("basic.yaml") + ":11:7");
  CHECK(s.where("model.layers").str() == data("model.yaml") + ":3:9");
  CHECK(s.where("cluster.topology.node.nic.bandwidth").str() == data("topo.yaml") + ":12:25");
  CHECK(s.where("cluster.topology.device.sm_count").str() == data("device.yaml") + ":8:20");
  // A key never written: its nearest written parent, else the scenario file itself.
  CHECK(s.where("parallel.cp_unwritten").str() == data("basic.yaml") + ":7:1");
  CHECK(s.where("nothing").str() == data("basic.yaml"));
}

TEST_CASE("overrides change scenario values with the units of the YAML", "[scenario][overrides]") {
  const Scenario s = load_scenario(data("basic.yaml"),
                                   {"cluster.nodes=4", "parallel.zero=3", "training.tokens=2 T",
                                    "data.loader.decode_time.mean=5 ms", "parallel.order=[dp, pp, cp, tp]", "seed=99"});
  CHECK(s.nodes == 4);
  CHECK(s.parallel.dp == 8);
  CHECK(s.parallel.zero == 3);
  CHECK(s.training.tokens == 2e12);
  CHECK(s.data.decode_time.mean == Approx(5e-3));
  CHECK(s.parallel.order == std::vector<std::string>{"dp", "pp", "cp", "tp"});
  CHECK(s.seed == 99);
  CHECK(s.where("cluster.nodes").str() == "--set");
  CHECK(s.where("parallel.tp").str() == data("basic.yaml") + ":8:7");
}

TEST_CASE("overrides reach into the included topology and model", "[scenario][overrides]") {
  const Scenario s =
      load_scenario(data("basic.yaml"), {"cluster.topology.node.nic.bandwidth=200 Gbit/s", "model.layers=8",
                                         "cluster.topology.device.sm_count=100", "cluster.topology.comm.channels=2"});
  CHECK(s.topology.node.nic.bandwidth == 25e9);
  CHECK(s.topology.node.nic.latency == Time::us(2));  // the sibling keeps its file value
  CHECK(s.topology.device.sm_count == 100);
  CHECK(s.topology.comm.channels == 2);
  CHECK(s.model.layers == 8);
  CHECK(s.model.hidden == 256);
  CHECK(s.where("model.layers").str() == "--set");
  CHECK(s.resolved_yaml.find("value: 200 Gbit/s") != std::string::npos);
  CHECK(s.resolved_yaml.find("source: set on the command line (--set)") != std::string::npos);
}

TEST_CASE("an override can swap an included file and set keys inside the new one", "[scenario][overrides]") {
  CHECK(load_scenario(data("basic.yaml"), {"model.layers=8", "model=model.yaml"}).model.layers == 8);
  CHECK(errors_of([] { load_scenario(data("basic.yaml"), {"cluster.topology=topo_bare.yaml"}); }).front() ==
        "topo_bare.yaml:4:9: cluster.topology.node.gpus: expected { value, source } \xE2\x80\x94 every hardware "
        "constant needs its source");
}

TEST_CASE("the resolved scenario is deterministic and reloads to the same scenario", "[scenario][resolved]") {
  const std::vector<std::string> overrides{"cluster.nodes=4", "cluster.topology.node.nic.bandwidth=200 Gbit/s"};
  const Scenario a = load_scenario(data("basic.yaml"), overrides);
  const Scenario b = load_scenario(data("basic.yaml"), overrides);
  CHECK(a.resolved_yaml == b.resolved_yaml);
  CHECK(a.resolved_yaml != load_scenario(data("basic.yaml")).resolved_yaml);
  // Includes are inlined with their sources; paths are resolved.
  CHECK(a.resolved_yaml.find("model.yaml") == std::string::npos);
  CHECK(a.resolved_yaml.find("name: Test GPU") != std::string::npos);
  CHECK(a.resolved_yaml.find("sm_count: {value: 132, source: test value}") != std::string::npos);
  CHECK(a.resolved_yaml.find("failures: " + data("failures.yaml")) != std::string::npos);
  CHECK(a.resolved_yaml.find("nodes: 4") != std::string::npos);

  const auto dir = std::filesystem::temp_directory_path() / "ironlaw_config_test_resolved";
  std::filesystem::create_directories(dir);
  const std::string copy = (dir / "resolved.yaml").string();
  std::ofstream(copy) << a.resolved_yaml;
  const Scenario c = load_scenario(copy);
  std::filesystem::remove_all(dir);
  CHECK(c.nodes == 4);
  CHECK(c.parallel.dp == a.parallel.dp);
  CHECK(c.model.layers == a.model.layers);
  CHECK(c.model.published.sources == a.model.published.sources);
  CHECK(c.topology.node.nic.bandwidth == 25e9);
  CHECK(c.topology.device.peak_flops == a.topology.device.peak_flops);
  CHECK(c.reliability.failures == a.reliability.failures);
  CHECK(c.output.path == a.output.path);
  CHECK(c.resolved_yaml == a.resolved_yaml);
}

TEST_CASE("scenario_keys lists every settable key and no efficiency knob", "[scenario]") {
  const auto keys = scenario_keys();
  for (const char* key : {"name",
                          "seed",
                          "model",
                          "model.layers",
                          "model.published.params",
                          "cluster.topology",
                          "cluster.nodes",
                          "cluster.topology.device",
                          "cluster.topology.device.peak_flops.bf16",
                          "cluster.topology.node.nic.bandwidth",
                          "cluster.topology.comm.step_latency",
                          "parallel.dp",
                          "parallel.order",
                          "parallel.bucket_size",
                          "training.global_batch_tokens",
                          "data.loader.workers_per_gpu",
                          "data.loader.decode_time.mean",
                          "reliability.failures",
                          "reliability.checkpoint.interval",
                          "run.mode",
                          "output.path",
                          "output.trace"}) {
    INFO(key);
    CHECK(std::count(keys.begin(), keys.end(), key) == 1);
  }
  for (const auto& key : keys) {
    INFO(key);
    // Measured kernel properties of the device (micro-benchmark results with sources), not
    // utilisations of the simulated job.
    if (key == "cluster.topology.device.max_gemm_fraction") continue;
    // Booleans named as Megatron-core's own switches (--tp-comm-overlap, --overlap-param-gather,
    // --overlap-moe-expert-parallel-comm, Megatron-Bridge's moe_a2a_overlap): they turn on a
    // mechanism of the framework, whose overlap the simulation then produces; no amount of
    // overlap is ever an input.
    if (key == "parallel.tp_comm_overlap" || key == "parallel.overlap_param_gather" ||
        key == "parallel.moe_a2a_overlap")
      continue;
    for (const char* word :
         {"mfu", "hfu", "efficiency", "overlap", "stall", "fraction", "utilization", "utilisation"}) {
      CHECK(key.find(word) == std::string::npos);
    }
  }
}

TEST_CASE("did_you_mean suggests near misses only", "[scenario]") {
  const std::vector<std::string> keys{"nodes", "name", "topology"};
  CHECK(did_you_mean("nodez", keys) == "nodes");
  CHECK(did_you_mean("topolgy", keys) == "topology");
  CHECK(did_you_mean("Nodes", keys) == "nodes");
  CHECK(did_you_mean("bandwidth", keys).empty());
  CHECK(did_you_mean("nodes", {"cluster.nodes", "model.name"}) == "cluster.nodes");
  // Equally close last parts: the shallowest key wins (cluster.nodes over the optional
  // cluster.topology.fabric.pod.nodes); at the same depth nothing is suggested.
  CHECK(did_you_mean("nodes", {"cluster.topology.fabric.pod.nodes", "cluster.nodes"}) == "cluster.nodes");
  CHECK(did_you_mean("name", {"model.name", "cluster.topology.name"}) == "model.name");
  CHECK(did_you_mean("name", {"model.name", "cluster.name"}).empty());
}

namespace {

// A copy of topologies/`cluster_file` in `dir` whose device is topologies/`device_file` (its
// allocator include dropped) with `extra` appended; returns the copy's cluster path.
std::string topology_variant(const std::string& dir_name, const std::string& cluster_file, const std::string& device_file,
                             const std::string& extra) {
  const auto dir = std::filesystem::temp_directory_path() / dir_name;
  std::filesystem::create_directories(dir);
  const auto source = std::filesystem::path(IRONLAW_SOURCE_DIR) / "topologies";
  {
    std::ofstream device(dir / "device.yaml");
    std::ifstream original(source / device_file);
    std::string line;
    while (std::getline(original, line)) {
      if (line.rfind("memory_allocator:", 0) == 0) continue;  // its relative include
      device << line << "\n";
    }
    device << extra;
  }
  std::ifstream cluster(source / cluster_file);
  std::ofstream out(dir / "cluster.yaml");
  std::string line;
  while (std::getline(cluster, line)) {
    if (line.find(device_file) != std::string::npos) line = "device: device.yaml";
    out << line << "\n";
  }
  return (dir / "cluster.yaml").string();
}

// The forward + backward rate a FlashAttention benchmark reports for `p` with causal mask at
// sequence `length` (3.5 forward FLOPs per pass pair, each pass at R·L/(L + L0)), with the
// benchmark's partial last wave put back: its thread blocks fill `waves` of whole waves.
double benchmark_rate(const config::DeviceSpec::AttentionProfile& p, double length, double waves) {
  const auto rate = [&](const config::DeviceSpec::AttentionPass& pass) {
    return pass.plateau_rate * length / (length + pass.half_length);
  };
  return 3.5 / (1 / rate(p.forward_causal) + 2.5 / rate(p.backward_causal)) * waves;
}

}  // namespace

TEST_CASE("the retired device.max_attention_fraction is refused with what replaced it", "[scenario][device]") {
  const std::string cluster = topology_variant("ironlaw-max-attention-fraction", "dgx-h100-leaf-spine.yaml",
                                               "h100-sxm.yaml", "max_attention_fraction: { value: 0.35, source: \"old profile\" }\n");
  try {
    config::load_topology(cluster);
    FAIL("the old key was accepted");
  } catch (const std::exception& e) {
    CHECK_THAT(e.what(), Catch::Contains("max_attention_fraction") && Catch::Contains("attention_kernel"));
  }
}

TEST_CASE("training.attention_kernel names the fused attention kernel: FlashAttention-2 unless the scenario says cudnn",
          "[scenario][attention]") {
  // topologies/h100-sxm.yaml: FlashAttention-2's forward plateau 389 TFLOP/s, cuDNN's 639 (each
  // fitted to the FA3 paper's Figure 5 bars, see their sources). The NeMo rows run Transformer
  // Engine, which prefers cuDNN fused attention on Hopper, and say so; the framework alone never
  // picks the kernel (framework fused is also Megatron-LM 2021 and Meta's Llama 3 stack).
  const std::string megatron = IRONLAW_SOURCE_DIR "/scenarios/validation/nemo/llama3-8b-8gpu-fp8cs.yaml";
  const auto forward = [&](const std::string& file, std::vector<std::string> overrides) {
    return load_scenario(file, overrides).topology.device.attention_kernel.at_head_dim(128).forward.plateau_rate;
  };
  CHECK(forward(megatron, {}) == Approx(639e12));
  CHECK(forward(megatron, {"training.attention_kernel=flash2"}) == Approx(389e12));
  CHECK(forward(megatron, {"training.framework=eager"}) == Approx(639e12));
  // Backward plateaus follow the same choice (FA2 339, cuDNN 558 TFLOP/s).
  CHECK(load_scenario(megatron).topology.device.attention_kernel.at_head_dim(128).backward.plateau_rate == Approx(558e12));
  CHECK(load_scenario(megatron, {"training.attention_kernel=flash2"}).topology.device.attention_kernel.at_head_dim(128).backward.plateau_rate ==
        Approx(339e12));
  // The default is FlashAttention-2 under every framework, fused included.
  const std::string default_scenario = IRONLAW_SOURCE_DIR "/scenarios/llama3-8b-fsdp-128.yaml";
  CHECK(forward(default_scenario, {}) == Approx(389e12));
  CHECK(forward(default_scenario, {"training.framework=fused"}) == Approx(389e12));
  CHECK(forward(default_scenario, {"training.attention_kernel=cudnn"}) == Approx(639e12));
  // A device without a cuDNN profile refuses cudnn with the key's name.
  const std::string torchtitan = IRONLAW_SOURCE_DIR "/scenarios/validation/tt-8b-8gpu-eager.yaml";
  const auto errors = errors_of([&] { load_scenario(torchtitan, {"training.attention_kernel=cudnn"}); });
  REQUIRE(errors.size() == 1);
  CHECK(errors.front().find("training.attention_kernel: cudnn needs a device with cudnn_attention_kernel") !=
        std::string::npos);
  CHECK_FALSE(errors_of([&] { load_scenario(torchtitan, {"training.attention_kernel=auto"}); }).empty());
}

TEST_CASE("training.attention_kernel: flash_triton runs FlashAttention's Triton kernel where the device has its profile",
          "[scenario][attention]") {
  // topologies/a100-sxm-40gb.yaml: the Triton kernel's causal forward plateau at head dimension
  // 128 is 90.1 TFLOP/s, FlashAttention-2's 214.1 (fits to the FlashAttention-2 paper's A100 bars:
  // FlashAttention 1's for the Triton kernel, round 23).
  const std::string mpt = IRONLAW_SOURCE_DIR "/scenarios/validation/mosaic-mpt/mpt-7b-8gpu-a100-40gb.yaml";
  const auto causal_forward = [&](std::vector<std::string> overrides, double head_dim) {
    return load_scenario(mpt, overrides).topology.device.attention_kernel.at_head_dim(head_dim).forward_causal.plateau_rate;
  };
  CHECK(causal_forward({"training.attention_kernel=flash_triton"}, 128) == Approx(90.1e12));
  CHECK(causal_forward({"training.attention_kernel=flash_triton"}, 64) == Approx(105.1e12));
  CHECK(causal_forward({"training.attention_kernel=flash2"}, 128) == Approx(214.1e12));
  CHECK(causal_forward({"training.attention_kernel=flash2"}, 64) == Approx(194.3e12));
  // On H100 the Triton kernel shares FlashAttention 1's profile as on A100 (a YAML alias), fitted
  // to the 'FlashAttention' bars of the FlashAttention-2 release's H100 figure
  // (topologies/h100-sxm.yaml flash1_attention_kernel). The two passes together must give back the
  // figure's forward + backward rates (3.5 forward FLOPs per pass pair; its 16 heads × 16k / L
  // sequences of 128-row blocks fill 15.52 of 16 waves on 132 SMs, which the profile divides out):
  // with causal mask at head dimension 128, 126, 135 and 137 TFLOPs/s at 4k, 8k and 16k (the fit's
  // worst bar, 108 at 2k, lies 11 % below it: the curve cannot dip and rise again).
  const std::string mpt_h100 = IRONLAW_SOURCE_DIR "/scenarios/validation/mosaic-mpt-h100/mpt-13b-8gpu-h100.yaml";
  const auto h100 = [&](const std::string& kernel) {
    return load_scenario(mpt_h100, {"training.attention_kernel=" + kernel}).topology.device.attention_kernel.at_head_dim(128);
  };
  const auto t_h = h100("flash_triton"), f1_h = h100("flash1");
  CHECK(t_h.forward_causal.plateau_rate == f1_h.forward_causal.plateau_rate);
  CHECK(t_h.backward_causal.half_length == f1_h.backward_causal.half_length);
  const auto figure_rate = [&](double length) { return benchmark_rate(t_h, length, 2048.0 / 132.0 / 16.0); };
  CHECK(figure_rate(4096) == Approx(126e12).epsilon(0.02));
  CHECK(figure_rate(8192) == Approx(135e12).epsilon(0.05));
  CHECK(figure_rate(16384) == Approx(137e12).epsilon(0.05));
  // The 96 GB / 500 W H100 of torchtitan's hosts has no Triton profile: refused with the key's name, as cudnn on A100.
  const std::string torchtitan = IRONLAW_SOURCE_DIR "/scenarios/validation/tt-8b-8gpu-eager.yaml";
  auto errors = errors_of([&] { load_scenario(torchtitan, {"training.attention_kernel=flash_triton"}); });
  REQUIRE(errors.size() == 1);
  CHECK(errors.front().find("training.attention_kernel: flash_triton needs a device with triton_attention_kernel") !=
        std::string::npos);
  errors = errors_of([&] { load_scenario(mpt, {"training.attention_kernel=cudnn"}); });
  REQUIRE(errors.size() == 1);
  CHECK(errors.front().find("cudnn needs a device with cudnn_attention_kernel") != std::string::npos);
  // A kernel other than the default without fused attention would time nothing: refused.
  errors = errors_of([&] {
    load_scenario(mpt, {"training.attention_kernel=flash_triton", "training.flash_attention=false"});
  });
  REQUIRE(errors.size() == 1);
  CHECK(errors.front().find("training.attention_kernel: flash_triton is a fused attention kernel, but "
                            "training.flash_attention is false") != std::string::npos);
}

TEST_CASE("training.attention_kernel: flash1 runs FlashAttention 1.x's CUDA kernel where the device has its profile",
          "[scenario][attention]") {
  // topologies/a100-sxm.yaml: FlashAttention 1's causal forward plateau at head dimension 128 is
  // 90.1 TFLOP/s and 105.1 at 64 (the fits to the FA1 bars of the FlashAttention-2 paper's A100
  // figure); the Triton kernel shares the profile (a YAML alias), FlashAttention-2's is 214.1.
  const std::string gpt3 = IRONLAW_SOURCE_DIR "/scenarios/validation/flash-attn-gpt3/gpt3-1.3b-8gpu.yaml";
  const auto kernel = [&](const std::string& name) {
    return load_scenario(gpt3, {"training.attention_kernel=" + name}).topology.device.attention_kernel;
  };
  CHECK(kernel("flash1").at_head_dim(128).forward_causal.plateau_rate == Approx(90.1e12));
  CHECK(kernel("flash1").at_head_dim(64).forward_causal.plateau_rate == Approx(105.1e12));
  CHECK(kernel("flash1").at_head_dim(64).backward.half_length == kernel("flash_triton").at_head_dim(64).backward.half_length);
  CHECK(kernel("flash2").at_head_dim(128).forward_causal.plateau_rate == Approx(214.1e12));
  // On H100 its profile is fitted to the same kernel's bars of the FlashAttention-2 release's H100
  // figure: with causal mask at head dimension 64, 149 and 156 TFLOPs/s forward + backward at 8k and
  // 16k (32 heads: 31.03 of 32 waves on 132 SMs, divided out by the profile).
  const std::string h100 = IRONLAW_SOURCE_DIR "/scenarios/validation/mosaic-mpt-h100/mpt-13b-8gpu-h100.yaml";
  const auto p64 = load_scenario(h100, {"training.attention_kernel=flash1"}).topology.device.attention_kernel.at_head_dim(64);
  const auto figure_rate = [&](double length) { return benchmark_rate(p64, length, 4096.0 / 132.0 / 32.0); };
  CHECK(figure_rate(8192) == Approx(149e12).epsilon(0.02));
  CHECK(figure_rate(16384) == Approx(156e12).epsilon(0.05));  // the fit's worst bar (4.3 %)
  // A device without the profile refuses the kernel with the key's name: torchtitan's 96 GB / 500 W H100.
  const std::string torchtitan = IRONLAW_SOURCE_DIR "/scenarios/validation/tt-8b-8gpu-eager.yaml";
  const auto errors = errors_of([&] { load_scenario(torchtitan, {"training.attention_kernel=flash1"}); });
  REQUIRE(errors.size() == 1);
  CHECK(errors.front().find("training.attention_kernel: flash1 needs a device with flash1_attention_kernel") !=
        std::string::npos);
}

TEST_CASE("a device's attention kernel is one profile or a list of profiles, each at its own head dimension",
          "[scenario][device][attention]") {
  // topologies/a100-sxm.yaml with `extra` appended, loaded through dgx-a100-leaf-spine.yaml.
  const auto load_with = [&](const std::string& extra) {
    const std::string cluster =
        topology_variant("ironlaw-attention-profiles", "dgx-a100-leaf-spine.yaml", "a100-sxm.yaml", extra);
    return errors_of([&] { config::load_topology(cluster); });
  };
  const std::vector<std::string> none{"(no error)"};
  REQUIRE(load_with("") == none);
  const std::string pass = "{ plateau_rate: { value: 100 TFLOPS, source: s }, half_length: { value: 100, source: s } }";
  const std::string passes = "forward: " + pass + ", forward_causal: " + pass + ", backward: " + pass +
                             ", backward_causal: " + pass;
  // One mapping: head_dim optional.
  CHECK(load_with("cudnn_attention_kernel: { " + passes + " }\n") == none);
  // A list: every profile states its head_dim, each once.
  CHECK(load_with("cudnn_attention_kernel:\n  - { head_dim: { value: 64, source: s }, " + passes +
                  " }\n  - { head_dim: { value: 128, source: s }, " + passes + " }\n") == none);
  auto errors = load_with("cudnn_attention_kernel:\n  - { " + passes + " }\n");
  REQUIRE(errors.size() == 1);
  CHECK(errors.front().find("cudnn_attention_kernel[0].head_dim") != std::string::npos);
  errors = load_with("cudnn_attention_kernel:\n  - { head_dim: { value: 64, source: s }, " + passes +
                     " }\n  - { head_dim: { value: 64, source: s }, " + passes + " }\n");
  REQUIRE(errors.size() == 1);
  CHECK(errors.front().find("head_dim 64 is given twice") != std::string::npos);
  errors = load_with("cudnn_attention_kernel: []\n");
  REQUIRE(errors.size() == 1);
  CHECK(errors.front().find("non-empty list of profiles") != std::string::npos);
  errors = load_with("cudnn_attention_kernel: [ 3 ]\n");
  REQUIRE(errors.size() == 1);
  CHECK(errors.front().find("cudnn_attention_kernel[0]") != std::string::npos);
  // padded_above: the head dimensions a profile's tile runs padded lie below its head_dim.
  CHECK(load_with("cudnn_attention_kernel:\n  - { head_dim: { value: 128, source: s }, padded_above: { value: 64, source: s }, " +
                  passes + " }\n") == none);
  errors = load_with("cudnn_attention_kernel:\n  - { head_dim: { value: 128, source: s }, padded_above: { value: 128, source: s }, " +
                     passes + " }\n");
  REQUIRE(errors.size() == 1);
  CHECK(errors.front().find("cudnn_attention_kernel[0].padded_above") != std::string::npos);
  CHECK(errors.front().find("must be below the profile's head_dim (128)") != std::string::npos);
}

TEST_CASE("fp8 all-gather is FSDP's (zero 3) or Megatron's fp8 parameters under its distributed optimizer (zero 1/2)",
          "[scenario][precision]") {
  // NeMo's GPT-3 row: Megatron-core, ZeRO 1, fp8_param_gather (NeMo's bf16_with_fp8_mixed).
  const std::string nemo = IRONLAW_SOURCE_DIR "/scenarios/validation/nemo/gpt3-175b-512gpu-fp8.yaml";
  CHECK(load_scenario(nemo).training.fp8_all_gather);
  CHECK(load_scenario(nemo, {"parallel.zero=2"}).training.fp8_all_gather);
  // PyTorch model code has no fp8 parameters under ZeRO 1/2; nothing has them without fp8.
  CHECK_THROWS_WITH(load_scenario(nemo, {"training.framework=compile"}),
                    Catch::Contains("training.fp8_all_gather") && Catch::Contains("framework compile"));
  CHECK_THROWS_WITH(load_scenario(nemo, {"parallel.zero=0"}), Catch::Contains("zero 0"));
  CHECK_THROWS_WITH(load_scenario(nemo, {"training.precision=bf16"}), Catch::Contains("got bf16"));
}

TEST_CASE("training.bf16_optimizer is DeepSpeed's BF16_Optimizer: bf16 with fp32 gradient buffers outside ZeRO-3",
          "[scenario][precision]") {
  const std::string bloom = IRONLAW_SOURCE_DIR "/scenarios/validation/bloom/bloom-176b-384gpu.yaml";
  CHECK(load_scenario(bloom).training.bf16_optimizer);
  CHECK_THROWS_WITH(load_scenario(bloom, {"training.precision=fp16"}),
                    Catch::Contains("training.bf16_optimizer") && Catch::Contains("got fp16"));
  CHECK_THROWS_WITH(load_scenario(bloom, {"training.reduce_dtype=bf16"}), Catch::Contains("reduce_dtype bf16"));
  CHECK_THROWS_WITH(load_scenario(bloom, {"parallel.zero=3"}), Catch::Contains("zero 3"));
  // A compiled loss is torch.compile's: framework compile, and not under torch's loss parallel.
  const std::string h200 = IRONLAW_SOURCE_DIR "/scenarios/validation/torchtitan-2025/8b-32gpu-h200-fp8.yaml";
  CHECK(load_scenario(h200).training.compile_loss);
  CHECK_THROWS_WITH(load_scenario(h200, {"training.framework=eager"}),
                    Catch::Contains("training.compile_loss") && Catch::Contains("framework eager"));
  CHECK_THROWS_WITH(load_scenario(h200, {"parallel.tp=8", "parallel.dp=4"}),
                    Catch::Contains("training.compile_loss") && Catch::Contains("tp 8"));
  // Megatron's blocking TP all-reduce cannot be combined with AsyncTP's fused collectives.
  const std::string tt70 = IRONLAW_SOURCE_DIR "/scenarios/validation/tt-70b-256gpu-2d-asynctp.yaml";
  CHECK_THROWS_WITH(load_scenario(tt70, {"parallel.async_tensor_parallel_allreduce=false"}),
                    Catch::Contains("parallel.async_tensor_parallel_allreduce"));
}

TEST_CASE("model.max_position: sequence follows training.sequence_length — other words are refused at the key",
          "[scenario][positions]") {
  // models/mpt-7b.yaml: MPT's learned table has max_seq_len rows, which llm-foundry sets to the run's.
  const std::string mpt = IRONLAW_SOURCE_DIR "/scenarios/validation/mosaic-mpt/mpt-7b-8gpu-a100-40gb.yaml";
  CHECK(load_scenario(mpt).model.max_position == 2048);
  CHECK(load_scenario(mpt, {"training.sequence_length=8192", "training.global_batch_tokens=3145728",
                            "parallel.microbatch_size=3"})
            .model.max_position == 8192);
  // A fixed table still bounds the sequence.
  auto errors = errors_of([&] { load_scenario(mpt, {"model.max_position=1024"}); });
  REQUIRE(errors.size() == 1);
  CHECK(errors.front().find("training.sequence_length: exceeds model.max_position (1024)") != std::string::npos);
  errors = errors_of([&] { load_scenario(mpt, {"model.max_position=seq"}); });
  REQUIRE(errors.size() == 1);
  CHECK(errors.front().find("model.max_position: expected a whole number or \"sequence\", got \"seq\"") !=
        std::string::npos);
  errors = errors_of([&] { load_scenario(mpt, {"model.max_position=-3"}); });
  REQUIRE(errors.size() == 1);
  CHECK(errors.front().find("model.max_position: must be >= 0") != std::string::npos);
}

TEST_CASE("training.optimizer_impl is refused where it would not be simulated", "[scenario][optimizer]") {
  const std::string mpt = IRONLAW_SOURCE_DIR "/scenarios/validation/mosaic-mpt/mpt-7b-8gpu-a100-40gb.yaml";
  CHECK(load_scenario(mpt).training.optimizer_impl == "for_loop");
  // (fused also refuses the fused cross-entropy, PyTorch code's as well, FSDP1, PyTorch's FSDP,
  // and the logit metrics, a PyTorch training loop's: the last two are switched off here.)
  auto errors = errors_of([&] {
    load_scenario(mpt, {"training.framework=fused", "training.fused_cross_entropy=false", "training.logit_metrics=0"});
  });
  REQUIRE(errors.size() == 2);
  CHECK(std::count_if(errors.begin(), errors.end(), [](const std::string& e) {
          return e.find("training.optimizer_impl: is how PyTorch model code runs Adam") != std::string::npos;
        }) == 1);
  errors = errors_of([&] { load_scenario(mpt, {"training.optimizer=sgd"}); });
  REQUIRE(errors.size() == 1);
  CHECK(errors.front().find("got sgd and framework eager") != std::string::npos);
  CHECK_FALSE(errors_of([&] { load_scenario(mpt, {"training.optimizer_impl=apex"}); }).empty());
}

TEST_CASE("parallel.fsdp_version is refused where it would not be simulated", "[scenario][fsdp]") {
  const std::string mpt = IRONLAW_SOURCE_DIR "/scenarios/validation/mosaic-mpt/mpt-7b-8gpu-a100-40gb.yaml";
  CHECK(load_scenario(mpt).parallel.fsdp1());
  CHECK_FALSE(load_scenario(mpt, {"parallel.fsdp_version=2"}).parallel.fsdp1());
  auto errors = errors_of([&] { load_scenario(mpt, {"parallel.zero=2"}); });
  REQUIRE(errors.size() == 1);
  CHECK(errors.front().find("parallel.fsdp_version: picks PyTorch's FSDP for ZeRO-3: needs parallel.zero 3") !=
        std::string::npos);
  errors = errors_of([&] { load_scenario(mpt, {"parallel.fsdp_version=3"}); });
  REQUIRE(errors.size() == 1);
  CHECK(errors.front().find("parallel.fsdp_version: expected 1 or 2, got 3") != std::string::npos);
  errors = errors_of([&] { load_scenario(mpt, {"parallel.pp=2", "parallel.dp=4", "training.logit_metrics=0"}); });
  REQUIRE(errors.size() == 1);
  CHECK(errors.front().find("1 (FullyShardedDataParallel) with pipeline parallelism is not simulated") !=
        std::string::npos);
  CHECK_FALSE(errors_of([&] { load_scenario(mpt, {"parallel.fsdp_version=0"}); }).empty());
}

TEST_CASE("parallel.reshard_after_forward false is PyTorch FSDP's SHARD_GRAD_OP, refused elsewhere", "[scenario][fsdp]") {
  const std::string mpt = IRONLAW_SOURCE_DIR "/scenarios/validation/mosaic-mpt/mpt-7b-8gpu-a100-40gb.yaml";
  CHECK(load_scenario(mpt).parallel.reshard_after_forward);  // FULL_SHARD, the default
  CHECK_FALSE(load_scenario(mpt, {"parallel.reshard_after_forward=false"}).parallel.reshard_after_forward);
  CHECK_FALSE(load_scenario(mpt, {"parallel.reshard_after_forward=false", "parallel.fsdp_version=2"})
                  .parallel.reshard_after_forward);
  // Not FSDP: ZeRO-2 (here also refused by fsdp_version 1, which is FSDP's).
  auto errors = errors_of([&] { load_scenario(mpt, {"parallel.reshard_after_forward=false", "parallel.zero=2"}); });
  REQUIRE(errors.size() == 2);
  CHECK(std::count_if(errors.begin(), errors.end(), [](const std::string& e) {
          return e.find("parallel.reshard_after_forward: false is PyTorch FSDP's SHARD_GRAD_OP: needs "
                        "parallel.zero 3 and training.framework eager or compile, got zero 2") != std::string::npos;
        }) == 1);
  // Under a pipeline FSDP never reshards after forward (torchtitan): the key is for pp 1.
  errors = errors_of([&] {
    load_scenario(mpt, {"parallel.reshard_after_forward=false", "parallel.pp=2", "parallel.dp=4",
                        "parallel.fsdp_version=2", "training.logit_metrics=0"});
  });
  REQUIRE(errors.size() == 1);
  CHECK(errors.front().find("parallel.reshard_after_forward: is for pp 1") != std::string::npos);
}
