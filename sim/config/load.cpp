#include "config/load.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <set>
#include <system_error>
#include <utility>

#include "config/failures.hpp"
#include "config/layer_model.hpp"
#include "config/reader.hpp"
#include "config/validate.hpp"

namespace ironlaw::config {

const DeviceSpec::AttentionProfile& DeviceSpec::AttentionKernel::at_head_dim(double head_dim) const {
  if (profiles.empty()) throw std::logic_error("attention kernel has no profile");
  for (const AttentionProfile& p : profiles) {
    if (p.head_dim == head_dim) return p;
  }
  for (const AttentionProfile& p : profiles) {
    if (p.pads(head_dim)) return p;
  }
  const AttentionProfile* best = &profiles.front();
  double best_distance = 0;
  bool first = true;
  for (const AttentionProfile& p : profiles) {
    if (p.head_dim <= 0 || !(head_dim > 0)) continue;  // unstated: a kernel's only profile
    const double distance = std::abs(std::log2(head_dim / p.head_dim));
    if (first || distance < best_distance || (distance == best_distance && p.head_dim > best->head_dim)) {
      best = &p;
      best_distance = distance;
      first = false;
    }
  }
  return *best;
}

namespace {

using detail::Document;

/// The fused attention kernels training.attention_kernel names, each with the device key that
/// holds its profiles; the first is the default.
constexpr std::pair<const char*, const char*> kAttentionKernels[] = {
    {"flash2", "attention_kernel"}, {"cudnn", "cudnn_attention_kernel"}, {"flash_triton", "triton_attention_kernel"},
    {"flash1", "flash1_attention_kernel"}};
using detail::Form;
using detail::KeyKind;
using detail::LoadState;
using detail::Rule;
using detail::Section;
using detail::Sign;

constexpr Rule kHardware{.sign = Sign::positive, .required = true, .form = Form::sourced};
constexpr Rule kHardwareLatency{.sign = Sign::non_negative, .required = true, .form = Form::sourced};
constexpr Rule kOptionalHardware{.sign = Sign::positive, .required = false, .form = Form::sourced};
constexpr Rule kOptionalHardwareLatency{.sign = Sign::non_negative, .required = false, .form = Form::sourced};
constexpr Rule kPositive{.sign = Sign::positive};
constexpr Rule kNonNegative{.sign = Sign::non_negative};
constexpr Rule kShape{.sign = Sign::positive, .required = true, .form = Form::either};

/// What `--set` writes into a { value, source } field in place of a citation.
constexpr const char* kCommandLineSource = "set on the command line (--set)";

std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

std::vector<std::string> split(const std::string& key, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto at = key.find(sep, start);
    parts.push_back(key.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) break;
    start = at + 1;
  }
  return parts;
}

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

std::string stem(const std::string& file) { return std::filesystem::path(file).stem().string(); }

void parse_link(Section s, LinkSpec& link) {
  s.number("bandwidth", link.bandwidth, Dimension::bandwidth, kHardware);
  s.duration("latency", link.latency, kHardwareLatency);
  s.finish();
}

void parse_device(Section s, DeviceSpec& d) {
  s.text("name", d.name, Rule{.required = true});
  {
    Section peak = s.section("peak_flops", Rule{.required = true});
    for (const char* precision : {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8"}) {
      double value = 0;
      if (peak.number(precision, value, Dimension::flop_rate, kOptionalHardware)) d.peak_flops[precision] = value;
    }
    peak.finish();
  }
  s.number("hbm_bytes", d.hbm_bytes, Dimension::bytes, kHardware);
  s.number("cuda_context_bytes", d.cuda_context_bytes, Dimension::bytes, kOptionalHardware);
  s.number("nccl_communicator_bytes", d.nccl_communicator_bytes, Dimension::bytes, kOptionalHardware);
  s.number("hbm_bandwidth", d.hbm_bandwidth, Dimension::bandwidth, kHardware);
  s.integer("sm_count", d.sm_count, kHardware);
  s.integer("peak_sm_count", d.peak_sm_count, kOptionalHardware);
  if (s.number("max_gemm_fraction", d.max_gemm_fraction, Dimension::count, kHardware) && d.max_gemm_fraction > 1) {
    s.state().fail(s.full("max_gemm_fraction"), "must be at most 1 (a fraction of the dense peak)");
  }
  if (s.has("max_attention_fraction")) {
    s.state().fail(s.full("max_attention_fraction"),
                   "was replaced by attention_kernel: { forward, forward_causal, backward, backward_causal }, each "
                   "{ plateau_rate, half_length } from a per-sequence-length measurement (see topologies/h100-sxm.yaml)");
  }
  // Absent: fused attention is timed as a GEMM. Given: every pass, each constant with its source,
  // as one profile (a mapping; head_dim optional) or a list of profiles at different head
  // dimensions (each with its head_dim).
  auto attention_profile = [](Section a, DeviceSpec::AttentionProfile& p, bool given, bool head_dim_required) {
    const Rule leaf = given ? kHardware : kOptionalHardware;
    const Rule length = given ? kHardwareLatency : kOptionalHardwareLatency;
    a.integer("head_dim", p.head_dim, head_dim_required ? kHardware : kOptionalHardware);
    if (a.integer("padded_above", p.padded_above, kOptionalHardware) && p.padded_above >= p.head_dim) {
      a.state().fail(a.full("padded_above"), "must be below the profile's head_dim (" + std::to_string(p.head_dim) +
                                                 "): the head dimensions its tile runs padded lie between the two");
    }
    const std::pair<const char*, DeviceSpec::AttentionPass*> passes[] = {
        {"forward", &p.forward}, {"forward_causal", &p.forward_causal},
        {"backward", &p.backward}, {"backward_causal", &p.backward_causal}};
    for (const auto& [pass_name, pass] : passes) {
      Section ps = a.section(pass_name, Rule{.required = given});
      ps.number("plateau_rate", pass->plateau_rate, Dimension::flop_rate, leaf);
      ps.number("half_length", pass->half_length, Dimension::count, length);
      ps.finish();
    }
    a.finish();
  };
  auto attention_kernel = [&](const char* key, const char* name) {
    DeviceSpec::AttentionKernel kernel;
    if (s.state().collecting) {  // the keys of one profile of the list form, listed as KEY[].…
      DeviceSpec::AttentionProfile scratch;
      attention_profile(Section(s.state(), YAML::Node(), s.file(), s.full(key) + "[]", SourceLoc{}, false), scratch,
                        true, true);
    }
    if (s.is_list(key)) {
      const auto list = s.raw(key, KeyKind::list);
      if (!list) return;
      if (list->size() == 0) {
        s.state().fail(s.full(key), "expected one profile (a mapping) or a non-empty list of profiles, each with its head_dim");
        return;
      }
      for (std::size_t i = 0; i < list->size(); ++i) {
        const YAML::Node item = (*list)[i];
        const std::string item_key = s.full(key) + "[" + std::to_string(i) + "]";
        if (!item.IsMap()) {
          s.state().error(s.position(key, item), item_key, "expected a mapping { head_dim, forward, forward_causal, backward, backward_causal }");
          continue;
        }
        DeviceSpec::AttentionProfile p;
        attention_profile(Section(s.state(), item, s.file(), item_key, s.position(key, item), false), p, true, true);
        for (const auto& other : kernel.profiles) {
          if (p.head_dim > 0 && other.head_dim == p.head_dim) {
            s.state().fail(item_key + ".head_dim", "head_dim " + std::to_string(p.head_dim) + " is given twice; one profile per head dimension");
          }
        }
        kernel.profiles.push_back(p);
      }
    } else {
      const bool given = s.has(key);
      DeviceSpec::AttentionProfile p;
      attention_profile(s.section(key), p, given, false);
      if (given) kernel.profiles.push_back(p);
    }
    if (kernel.given()) d.attention_kernels[name] = std::move(kernel);
  };
  for (const auto& [name, key] : kAttentionKernels) attention_kernel(key, name);
  const auto default_kernel = d.attention_kernels.find(kAttentionKernels[0].first);
  if (default_kernel != d.attention_kernels.end()) d.attention_kernel = default_kernel->second;
  s.integer("gemm_tile_m", d.gemm_tile_m, kOptionalHardware);
  s.integer("gemm_tile_n", d.gemm_tile_n, kOptionalHardware);
  s.number("max_gemm_shape_m", d.max_gemm_shape_m, Dimension::count, kOptionalHardware);
  s.number("max_gemm_shape_n", d.max_gemm_shape_n, Dimension::count, kOptionalHardware);
  s.number("max_gemm_shape_k", d.max_gemm_shape_k, Dimension::count, kOptionalHardware);
  s.number("gemm_k_fill", d.gemm_k_fill, Dimension::count, kOptionalHardwareLatency);
  if (s.number("fp8_split_accumulator_rate", d.fp8_split_accumulator_rate, Dimension::count, kOptionalHardware) &&
      d.fp8_split_accumulator_rate > 1) {
    s.state().fail(s.full("fp8_split_accumulator_rate"),
                   "must be at most 1 (a fraction of the fast-accumulation GEMM's rate)");
  }
  s.number("power_limit_w", d.power_limit_w, Dimension::count, kOptionalHardware);
  s.number("max_gemm_power_limit_w", d.max_gemm_power_limit_w, Dimension::count, kOptionalHardware);
  s.number("static_power_w", d.static_power_w, Dimension::count, kOptionalHardwareLatency);
  if (s.number("sustained_gemm_clock", d.sustained_gemm_clock, Dimension::count, kOptionalHardware) &&
      !(d.sustained_gemm_clock > 0 && d.sustained_gemm_clock <= 1)) {
    s.state().fail(s.full("sustained_gemm_clock"), "must be in (0, 1] (a fraction of the benchmark's clock)");
  }
  if (s.number("clock_power_exponent", d.clock_power_exponent, Dimension::count, kOptionalHardware) &&
      d.clock_power_exponent < 1) {
    s.state().fail(s.full("clock_power_exponent"), "must be at least 1 (dynamic power grows at least linearly with the clock)");
  }
  if (d.power_limit_w > 0 && !(d.power_limit_w > d.static_power_w && d.max_gemm_power_limit_w > d.static_power_w)) {
    s.state().fail(s.full("power_limit_w"), "power_limit_w and max_gemm_power_limit_w must both exceed static_power_w");
  }
  s.duration("kernel_launch_overhead", d.kernel_launch_overhead, kHardwareLatency);
  s.duration("library_gemm_call", d.library_gemm_call, kOptionalHardwareLatency);
  {
    Section dispatch = s.section("framework_dispatch");
    for (const char* framework : {"eager", "fused", "compile", "cuda_graphs"}) {
      Time value;
      if (dispatch.duration(framework, value, kOptionalHardwareLatency)) d.framework_dispatch[framework] = value;
    }
    dispatch.finish();
  }
  s.number("host_to_device_bandwidth", d.host_to_device_bandwidth, Dimension::bandwidth, kHardware);
  s.number("jpeg_decode_rate", d.jpeg_decode_rate, Dimension::count, kOptionalHardware);
  s.number("speed_variation_cv", d.speed_variation_cv, Dimension::count, kOptionalHardwareLatency);
  {
    // Absent: no allocator replay. Given: every constant, each with its source.
    const Rule rule = s.has("memory_allocator") ? kHardware : kOptionalHardware;
    Section m = s.include("memory_allocator");
    auto& a = d.memory_allocator;
    m.number("min_block_size", a.min_block, Dimension::bytes, rule);
    m.number("small_size", a.small_size, Dimension::bytes, rule);
    m.number("small_buffer", a.small_buffer, Dimension::bytes, rule);
    m.number("large_buffer", a.large_buffer, Dimension::bytes, rule);
    m.number("min_large_alloc", a.min_large_alloc, Dimension::bytes, rule);
    m.number("round_large", a.round_large, Dimension::bytes, rule);
    m.finish();
  }
  s.finish();
}

void parse_node(Section s, NodeSpec& n) {
  s.text("name", n.name);
  s.integer("gpus", n.gpus, kHardware);
  parse_link(s.section("nvlink", Rule{.required = true}), n.nvlink);
  s.integer("gpus_per_pcie_switch", n.gpus_per_pcie_switch, kHardware);
  parse_link(s.section("pcie", Rule{.required = true}), n.pcie);
  s.integer("nics", n.nics, kHardware);
  parse_link(s.section("nic", Rule{.required = true}), n.nic);
  s.number("nvswitch_reduce_bandwidth", n.nvswitch_reduce_bandwidth, Dimension::bandwidth, kOptionalHardware);
  s.integer("cpu_cores", n.cpu_cores, kOptionalHardware);
  s.number("host_memory_bandwidth", n.host_memory_bandwidth, Dimension::bandwidth, kOptionalHardware);
  s.finish();
}

void parse_fabric(Section s, FabricSpec& f) {
  s.choice("kind", f.kind, {"leaf_spine", "rail_optimized"});
  s.integer("nodes_per_leaf", f.nodes_per_leaf, kHardware);
  if (s.number("oversubscription", f.oversubscription, Dimension::count, kOptionalHardware) && f.oversubscription < 1) {
    s.state().fail(s.full("oversubscription"), "must be at least 1 (downlink : uplink capacity)");
  }
  s.integer("spines", f.spines, kOptionalHardwareLatency);
  parse_link(s.section("leaf_spine", Rule{.required = true}), f.leaf_spine);
  s.duration("switch_latency", f.switch_latency, kHardwareLatency);
  if (s.has("pod") || s.state().collecting) {  // collecting: the optional section's keys are listed too
    Section pod = s.section("pod");
    pod.integer("nodes", f.pod.nodes, kHardware);
    if (pod.number("oversubscription", f.pod.oversubscription, Dimension::count, kHardware) &&
        f.pod.oversubscription < 1) {
      pod.state().fail(pod.full("oversubscription"), "must be at least 1 (spine downlink : core uplink capacity)");
    }
    parse_link(pod.section("spine_core", Rule{.required = true}), f.pod.spine_core);
    pod.finish();
  }
  s.finish();
}

void parse_comm(Section s, CommSpec& c) {
  s.integer("channels", c.channels, kOptionalHardwareLatency);
  s.integer("kernel_sms", c.kernel_sms, kOptionalHardwareLatency);
  s.integer("node_kernel_sms", c.node_kernel_sms, kOptionalHardwareLatency);
  s.duration("launch_latency", c.launch_latency, kOptionalHardwareLatency);
  s.duration("step_latency", c.step_latency, kOptionalHardwareLatency);
  if (s.integer("flows_per_connection", c.flows_per_connection, kOptionalHardwareLatency) &&
      c.flows_per_connection < 1) {
    s.state().fail(s.full("flows_per_connection"), "must be at least 1");
  }
  s.number("chunk_bytes", c.chunk_bytes, Dimension::bytes, kOptionalHardware);
  s.number("tree_min_chunk_bytes", c.tree_min_chunk_bytes, Dimension::bytes, kOptionalHardware);
  {
    Section protocols = s.section("protocols");
    for (const char* name : {"ll", "ll128", "simple"}) {
      const Rule rule = protocols.has(name) ? kHardwareLatency : kOptionalHardwareLatency;
      Section p = protocols.section(name);
      CommSpec::Protocol proto;
      proto.name = name;
      proto.base_latency = c.launch_latency;
      p.duration("base_latency", proto.base_latency, kOptionalHardwareLatency);
      p.duration("nvlink_step_latency", proto.nvlink_step_latency, rule);
      p.duration("net_step_latency", proto.net_step_latency, rule);
      const Rule wire = protocols.has(name) ? kHardware : kOptionalHardware;
      if (p.number("wire_bytes_per_byte", proto.wire_bytes_per_byte, Dimension::count, wire) &&
          proto.wire_bytes_per_byte < 1) {
        p.state().fail(p.full("wire_bytes_per_byte"), "must be at least 1 (a protocol adds bytes, never removes them)");
      }
      p.finish();
      if (protocols.has(name)) c.protocols.push_back(proto);
    }
    protocols.finish();
  }
  {
    Section kernels = s.section("ep_kernels");
    for (auto [name, spec] : {std::pair{"deepep", &c.deepep}, std::pair{"hybridep", &c.hybridep}}) {
      Section k = kernels.section(name);
      k.number("rdma_rate", spec->rdma_rate, Dimension::bandwidth, kOptionalHardware);
      k.number("forward_rate", spec->forward_rate, Dimension::bandwidth, kOptionalHardware);
      k.finish();
    }
    kernels.finish();
  }
  s.finish();
}

void parse_topology(Section s, TopologySpec& t) {
  t.file = s.file();
  t.name = stem(s.file());
  s.text("name", t.name);
  s.text("source", t.source);
  parse_device(s.include("device", Rule{.required = true}), t.device);
  parse_node(s.section("node", Rule{.required = true}), t.node);
  parse_fabric(s.section("fabric", Rule{.required = true}), t.fabric);
  parse_comm(s.section("comm"), t.comm);
  s.finish();
}

void parse_published(Section s, PublishedFacts& p) {
  const Rule fact{.sign = Sign::non_negative, .required = false, .form = Form::sourced};
  auto read = [&](const char* name, std::optional<double>& out, Dimension dimension) {
    double value = 0;
    std::string source;
    Rule rule = fact;
    rule.source = &source;
    if (s.number(name, value, dimension, rule)) {
      out = value;
      p.sources[name] = source;
    }
  };
  read("params", p.params, Dimension::count);
  read("tokens", p.tokens, Dimension::count);
  read("gpu_hours", p.gpu_hours, Dimension::count);
  read("training_flops", p.training_flops, Dimension::flops);
  read("active_params", p.active_params, Dimension::count);
  auto text = [&](const char* name, std::string& out) {
    std::string source;
    if (s.text(name, out, Rule{.form = Form::sourced, .source = &source})) p.sources[name] = source;
  };
  text("hardware", p.hardware);
  text("throughput", p.throughput);
  s.finish();
}

/// A key that is a whole number of at least `minimum` (written to `out`) or the word `word`.
enum class CountOrWord { absent, count, word, bad };
CountOrWord parse_count_or_word(Section& s, const char* key, const char* word, int minimum, int& out) {
  const auto node = s.raw(key, KeyKind::value);
  if (!node) return CountOrWord::absent;
  const std::string text = node->IsScalar() ? trim(node->Scalar()) : "";
  if (text == word) return CountOrWord::word;
  const auto value = parse_quantity(text, Dimension::count, nullptr);
  if (!node->IsScalar() || !value || *value != std::floor(*value) || *value > 1e9) {
    s.state().fail(s.full(key), std::string("expected a whole number or \"") + word + "\", got " + in_quotes(text));
    return CountOrWord::bad;
  }
  if (*value < minimum) {
    s.state().fail(s.full(key), (minimum == 1 ? std::string("must be positive") : "must be >= " + std::to_string(minimum)) +
                                    ", got " + in_quotes(text));
    return CountOrWord::bad;
  }
  out = static_cast<int>(*value);
  return CountOrWord::count;
}

/// model.max_position: a whole number of rows, or `sequence` (ModelSpec::max_position_follows_sequence).
void parse_max_position(Section& s, ModelSpec& m) {
  if (parse_count_or_word(s, "max_position", "sequence", 0, m.max_position) == CountOrWord::word)
    m.max_position_follows_sequence = true;
}

void parse_model(Section s, ModelSpec& m) {
  m.file = s.file();
  m.name = stem(s.file());
  if (s.has("architecture") && !s.state().collecting) {
    auto list = std::make_shared<LayerModelSpec>();
    list->file = s.file();
    detail::parse_layer_card(s, *list);
    m.name = list->name.empty() ? m.name : list->name;
    m.source = list->source;
    m.published = list->published;
    m.layers = 0;
    for (const auto& l : list->layers) m.layers += l.repeat;
    m.layer_list = std::move(list);
    return;
  }
  s.text("name", m.name);
  s.text("source", m.source);
  s.integer("layers", m.layers, kShape);
  s.integer("hidden", m.hidden, kShape);
  s.integer("ffn_hidden", m.ffn_hidden, kShape);
  s.integer("heads", m.heads, kShape);
  m.kv_heads = 0;
  s.integer("kv_heads", m.kv_heads, Rule{.sign = Sign::positive, .form = Form::either});
  if (m.kv_heads == 0) m.kv_heads = m.heads;
  s.integer("vocab", m.vocab, kShape);
  s.choice("activation", m.activation, {"gelu", "swiglu", "squared_relu"});
  s.choice("norm", m.norm, {"layernorm", "rmsnorm"});
  s.choice("qk_norm", m.qk_norm, {"none", "full", "head"});
  s.flag("bias", m.bias);
  s.flag("tied_embeddings", m.tied_embeddings);
  s.choice("position_embedding", m.position_embedding, {"rope", "learned", "relative", "alibi"});
  parse_max_position(s, m);
  s.integer("experts", m.experts, Rule{.sign = Sign::positive, .form = Form::either});
  s.integer("experts_per_token", m.experts_per_token, Rule{.sign = Sign::positive, .form = Form::either});
  const Rule optional_size{.sign = Sign::non_negative, .form = Form::either};
  for (auto [key, out] : {std::pair<const char*, int*>{"shared_experts", &m.shared_experts},
                          {"moe_ffn_hidden", &m.moe_ffn_hidden},
                          {"dense_layers", &m.dense_layers},
                          {"head_dim", &m.head_dim},
                          {"q_lora_rank", &m.q_lora_rank},
                          {"kv_lora_rank", &m.kv_lora_rank},
                          {"qk_nope_head_dim", &m.qk_nope_head_dim},
                          {"qk_rope_head_dim", &m.qk_rope_head_dim},
                          {"v_head_dim", &m.v_head_dim}}) {
    s.integer(key, *out, optional_size);
  }
  for (auto [key, out] : {std::pair<const char*, double*>{"attention_dropout", &m.attention_dropout},
                          {"hidden_dropout", &m.hidden_dropout}}) {
    if (s.number(key, *out, Dimension::count, Rule{.sign = Sign::non_negative, .form = Form::either}) &&
        *out >= 1) {
      s.state().fail(s.full(key), "must be below 1 (a dropout probability in [0, 1))");
    }
  }
  parse_published(s.section("published"), m.published);
  if (s.state().collecting) {
    // The keys of a layer-list card (architecture: layer_list) are listed after the transformer
    // card's; the keys both read (name, source, layers, published) keep the transformer's traits.
    // The card's own keys (architecture, input_kind, input) are required of a layer-list card
    // only, so the listing does not call them required.
    std::set<std::string> before;
    for (const auto& [key, traits] : s.state().traits) before.insert(key);
    LayerModelSpec scratch;
    detail::parse_layer_card(s, scratch);
    for (auto& [key, traits] : s.state().traits) {
      if (!before.count(key) && key.find("[]") == std::string::npos) traits.required = false;
    }
  }
  s.finish();
}

void parse_seed(Section& s, std::uint64_t& seed) {
  const auto node = s.raw("seed", KeyKind::value);
  if (!node) return;
  const std::string text = node->IsScalar() ? trim(node->Scalar()) : "";
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    s.state().fail(s.full("seed"), "expected a whole number >= 0 like \"1\", got " +
                                       in_quotes(node->IsScalar() ? node->Scalar() : "a non-scalar"));
    return;
  }
  seed = value;
}

void parse_dp(Section& s, int& dp) {
  if (parse_count_or_word(s, "dp", "auto", 1, dp) == CountOrWord::word) dp = 0;
}

void parse_order(Section& s, std::vector<std::string>& order) {
  const auto node = s.raw("order", KeyKind::list);
  if (!node) return;
  LoadState& st = s.state();
  const std::string key = s.full("order");
  const std::vector<std::string> dims{"tp", "cp", "pp", "dp"};
  if (!node->IsSequence()) {
    st.fail(key, "expected a list of tp, cp, pp, dp, each once, like [tp, cp, pp, dp]");
    return;
  }
  std::vector<std::string> seen;
  bool good = true;
  for (const auto& item : *node) {
    const std::string name = item.IsScalar() ? item.Scalar() : "";
    if (std::find(dims.begin(), dims.end(), name) == dims.end()) {
      st.error(s.position("order", item), key, "unknown dimension " + in_quotes(name) + "; expected tp, cp, pp or dp");
      good = false;
    } else if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
      st.error(s.position("order", item), key, name + " appears twice");
      good = false;
    } else {
      seen.push_back(name);
    }
  }
  for (const auto& d : dims) {
    if (good && std::find(seen.begin(), seen.end(), d) == seen.end()) {
      st.error(st.where(key), key, "missing " + d + "; list each of tp, cp, pp, dp once");
      good = false;
    }
  }
  if (good) {
    order = seen;
  } else {
    st.bad.insert(key);
  }
}

void parse_parallel(Section s, ParallelSpec& p) {
  s.integer("tp", p.tp, kPositive);
  s.integer("pp", p.pp, kPositive);
  s.integer("cp", p.cp, kPositive);
  parse_dp(s, p.dp);
  if (s.integer("zero", p.zero, kNonNegative) && p.zero > 3) {
    s.state().fail(s.full("zero"), "expected 0, 1, 2 or 3, got " + std::to_string(p.zero));
  }
  s.choice("pp_schedule", p.pp_schedule, {"gpipe", "1f1b", "interleaved", "zb-h1"});
  s.choice("pp_runtime", p.pp_runtime, {"megatron", "torch", "deepspeed"});
  s.integer("virtual_stages", p.virtual_stages, kPositive);
  s.integer("microbatch_group_size", p.microbatch_group_size, kNonNegative);
  s.flag("sequence_parallel", p.sequence_parallel);
  s.choice("tp_runtime", p.tp_runtime, {"megatron", "torch"});
  s.flag("async_tp", p.async_tp);
  s.flag("reshard_after_forward", p.reshard_after_forward);
  s.flag("tp_comm_overlap", p.tp_comm_overlap);
  s.flag("overlap_param_gather", p.overlap_param_gather);
  s.flag("moe_a2a_overlap", p.moe_a2a_overlap);
  s.choice("moe_dispatcher", p.moe_dispatcher, {"alltoall", "deepep", "hybridep"});
  s.integer("moe_dispatcher_sms", p.moe_dispatcher_sms, kPositive);
  if (s.integer("fsdp_version", p.fsdp_version, kPositive) && p.fsdp_version > 2) {
    s.state().fail(s.full("fsdp_version"), "expected 1 or 2, got " + std::to_string(p.fsdp_version));
  }
  s.flag("async_tensor_parallel_allreduce", p.async_tensor_parallel_allreduce);
  s.integer("ep", p.ep, kPositive);
  s.integer("expert_tp", p.expert_tp, kPositive);
  parse_order(s, p.order);
  s.integer("microbatch_size", p.microbatch_size, kPositive);
  s.number("bucket_size", p.bucket_bytes, Dimension::bytes, kPositive);
  s.finish();
}

/// training.batch_ramp: a list of { until_tokens, global_batch_tokens }, until_tokens increasing.
void parse_ramp_stage(Section stage, BatchRampStage& b) {
  stage.number("until_tokens", b.until_tokens, Dimension::count, Rule{.sign = Sign::positive, .required = true});
  stage.number("global_batch_tokens", b.global_batch_tokens, Dimension::count,
               Rule{.sign = Sign::positive, .required = true});
  stage.finish();
}

void parse_batch_ramp(Section& s, std::vector<BatchRampStage>& ramp) {
  const auto node = s.raw("batch_ramp", KeyKind::list);
  const std::string key = s.full("batch_ramp");
  if (s.state().collecting) {  // the keys of one stage, listed as training.batch_ramp[].KEY
    BatchRampStage scratch;
    parse_ramp_stage(Section(s.state(), YAML::Node(), s.file(), key + "[]", SourceLoc{}, false), scratch);
  }
  if (!node) return;
  if (!node->IsSequence()) {
    s.state().fail(key, "expected a list of { until_tokens, global_batch_tokens }");
    return;
  }
  for (std::size_t i = 0; i < node->size(); ++i) {
    const YAML::Node item = (*node)[i];
    BatchRampStage b;
    parse_ramp_stage(Section(s.state(), item, s.file(), key + "." + std::to_string(i), s.position("batch_ramp", item),
                             false),
                     b);
    if (!ramp.empty() && b.until_tokens <= ramp.back().until_tokens) {
      s.state().error(s.position("batch_ramp", item), key, "until_tokens must increase from stage to stage");
    }
    ramp.push_back(b);
  }
}

void parse_training(Section s, TrainingSpec& t) {
  s.integer("sequence_length", t.sequence_length, kPositive);
  s.number("global_batch_tokens", t.global_batch_tokens, Dimension::count,
           Rule{.sign = Sign::positive, .required = true});
  s.number("tokens", t.tokens, Dimension::count, kNonNegative);
  s.choice("precision", t.precision, {"fp32", "bf16", "fp16", "fp8"});
  s.choice("optimizer", t.optimizer, {"sgd", "momentum", "rmsprop", "adam"});
  s.choice("optimizer_impl", t.optimizer_impl, {"foreach", "for_loop", "fused"});
  s.choice("activation_checkpointing", t.activation_checkpointing, {"none", "selective", "full", "op"});
  s.choice("framework", t.framework, {"fused", "eager", "compile", "cuda_graphs"});
  s.flag("launch_blocking", t.launch_blocking);
  s.flag("compile_loss", t.compile_loss);
  s.flag("fused_cross_entropy", t.fused_cross_entropy);
  s.flag("cross_entropy_loss_fusion", t.cross_entropy_loss_fusion);
  s.flag("moe_permute_fusion", t.moe_permute_fusion);
  s.choice("moe_expert_gemm", t.moe_expert_gemm, {"auto", "per_expert", "grouped"});
  s.flag("fused_mlp", t.fused_mlp);
  s.flag("fused_dropout_add_norm", t.fused_dropout_add_norm);
  s.integer("logit_metrics", t.logit_metrics, kNonNegative);
  s.flag("flash_attention", t.flash_attention);
  s.flag("attention_unpad", t.attention_unpad);
  std::vector<std::string> kernels;
  for (const auto& kernel : kAttentionKernels) kernels.emplace_back(kernel.first);
  s.choice("attention_kernel", t.attention_kernel, kernels);
  s.flag("gradient_accumulation_fusion", t.gradient_accumulation_fusion);
  s.flag("bf16_optimizer", t.bf16_optimizer);
  s.flag("autocast", t.autocast);
  s.choice("reduce_dtype", t.reduce_dtype, {"fp32", "bf16", "fp16"});
  s.choice("optimizer_dtype", t.optimizer_dtype, {"fp32", "bf16"});
  s.choice("communication_data_type", t.communication_data_type, {"fp32", "bf16", "fp16"});
  s.flag("fp8_all_gather", t.fp8_all_gather);
  s.choice("fp8_recipe", t.fp8_recipe, {"current", "delayed", "blockwise", "rowwise"});
  s.flag("expandable_segments", t.expandable_segments);
  parse_batch_ramp(s, t.batch_ramp);
  {
    Section e = s.section("evaluation");
    e.integer("every_steps", t.evaluation.every_steps, kNonNegative);
    e.number("tokens", t.evaluation.tokens, Dimension::count, kNonNegative);
    e.finish();
  }
  s.finish();
}

/// A time that must carry its unit ("2.5 ms"), like every dimensioned number (missing_unit_problem).
bool time_with_unit(Section& s, const std::string& key, const YAML::Node& node, double& out) {
  const SourceLoc at = s.position(key, node);
  if (!node.IsScalar()) {
    s.state().error(at, s.full(key), "expected a time with its unit like \"2.5 ms\"");
    s.state().bad.insert(s.full(key));
    return false;
  }
  const std::string text = node.Scalar();
  std::string error;
  const auto value = parse_quantity(text, Dimension::time, &error);
  if (!value) {
    s.state().error(at, s.full(key), error);
    s.state().bad.insert(s.full(key));
    return false;
  }
  if (const std::string problem =
          detail::missing_unit_problem(s.full(key), text, *value, Dimension::time,
                                       at.file == "--set" && !node.IsNull() && key != "samples");
      !problem.empty()) {
    s.state().error(at, s.full(key), problem);
    s.state().bad.insert(s.full(key));
    return false;
  }
  if (*value < 0) {
    s.state().error(at, s.full(key), "expected a time >= 0, got " + in_quotes(text));
    s.state().bad.insert(s.full(key));
    return false;
  }
  if (const std::string problem = detail::bound_problem(s.full(key), *value); !problem.empty()) {
    s.state().error(at, s.full(key), problem);
    s.state().bad.insert(s.full(key));
    return false;
  }
  out = *value;
  return true;
}

void parse_distribution(Section s, DistributionSpec& d) {
  s.choice("distribution", d.distribution, {"constant", "fixed", "normal", "exponential", "lognormal", "empirical"});
  if (const auto mean = s.raw("mean", KeyKind::value)) time_with_unit(s, "mean", *mean, d.mean);
  s.number("cv", d.cv, Dimension::count, kNonNegative);
  std::string source;  // documentation only: where the figures come from
  s.text("source", source);
  if (const auto list = s.raw("samples", KeyKind::list)) {
    if (!list->IsSequence() || list->size() == 0) {
      s.state().fail(s.full("samples"), "expected a non-empty list of times like [3 ms, 4.5 ms]");
    } else {
      d.samples.clear();
      for (const auto& item : *list) {
        double v = 0;
        if (time_with_unit(s, "samples", item, v)) d.samples.push_back(v);
      }
    }
  }
  s.finish();
}

void parse_data(Section s, DataSpec& d) {
  s.number("storage_bandwidth_per_node", d.storage_bandwidth_per_node, Dimension::bandwidth, kNonNegative);
  s.number("shared_fs_bandwidth", d.shared_fs_bandwidth, Dimension::bandwidth, kNonNegative);
  s.number("sample_bytes", d.sample_bytes, Dimension::bytes, kNonNegative);
  s.number("decoded_bytes", d.decoded_bytes, Dimension::bytes, kNonNegative);
  s.number("label_bytes", d.label_bytes, Dimension::bytes, kNonNegative);
  {
    Section loader = s.section("loader");
    loader.integer("workers_per_gpu", d.workers_per_gpu, kNonNegative);
    loader.integer("prefetch_batches", d.prefetch_batches, kPositive);
    loader.choice("decode_device", d.decode_device, {"cpu", "gpu"});
    if (d.decode_device == "gpu" && loader.has("decode_time")) {
      loader.state().fail(loader.full("decode_time"), "decode_device gpu decodes on the GPU's JPEG engine "
                                                      "(device.jpeg_decode_rate), not on host cores; remove decode_time");
    }
    if (d.decode_device == "gpu" && d.decoded_bytes > 0) {
      loader.state().fail(loader.full("decode_device"), "gpu copies the stored sample_bytes to the GPU and decodes "
                                                        "there; remove data.decoded_bytes");
    }
    parse_distribution(loader.section("decode_time"), d.decode_time);
    {
      Section slow = loader.section("slow_loader");
      slow.integer("gpu", d.slow_loader.gpu, kNonNegative);
      d.slow_loader.decode_time = d.decode_time;
      parse_distribution(slow.section("decode_time"), d.slow_loader.decode_time);
      slow.finish();
    }
    loader.finish();
  }
  s.finish();
}

void parse_reliability(Section s, ReliabilitySpec& r) {
  std::string failures;
  if (s.text("failures", failures) && !failures.empty()) {
    r.failures = detail::resolve_path(s.file(), failures);
    std::error_code error;  // a path the OS refuses (a name too long, a loop) is an input error too
    if (!std::filesystem::is_regular_file(r.failures, error)) {
      s.state().fail(s.full("failures"),
                     "cannot read " + in_quotes(r.failures) + ": " +
                         (error && error != std::errc::no_such_file_or_directory ? error.message() : "no such file"));
    } else if (auto doc = detail::load_document(r.failures, s.state(), s.state().where(s.full("failures")),
                                                s.full("failures"))) {
      detail::parse_failures(Section(s.state(), doc->root, doc->file, s.full("failures"),
                                     SourceLoc{doc->file, 1, 1}, false),
                             r.failure_rates);
    }
  }
  {
    Section c = s.section("checkpoint");
    c.choice("policy", r.checkpoint_policy, {"off", "fixed", "young_daly"});
    c.duration("interval", r.checkpoint_interval, kNonNegative);
    c.choice("mode", r.checkpoint_mode, {"async", "sync"});
    c.number("storage_bandwidth", r.checkpoint_storage_bandwidth, Dimension::bandwidth, kNonNegative);
    c.finish();
  }
  {
    Section restart = s.section("restart");
    restart.duration("detection", r.restart_detection, kNonNegative);
    restart.duration("reschedule", r.restart_reschedule, kNonNegative);
    restart.duration("initialize", r.restart_initialize, kNonNegative);
    restart.integer("hot_spares", r.hot_spares, kNonNegative);
    restart.duration("node_repair", r.node_repair, kNonNegative);
    restart.finish();
  }
  s.choice("elastic", r.elastic, {"off", "global_batch", "replica_batch"});
  s.finish();
}

void parse_parameter_server(Section s, ParameterServerSpec& ps) {
  s.integer("servers", ps.servers, kPositive);
  s.choice("placement", ps.placement, {"dedicated", "colocated"});
  s.integer("server_nodes", ps.server_nodes, kPositive);
  s.choice("mode", ps.mode, {"async", "sync"});
  s.number("min_shard_bytes", ps.min_shard_bytes, Dimension::bytes, kPositive);
  s.number("sparse_rows_per_batch", ps.sparse_rows_per_batch, Dimension::count, kNonNegative);
  s.finish();
}

void parse_scenario(Section& root, Scenario& sc) {
  sc.name = stem(root.file());
  root.text("name", sc.name);
  parse_seed(root, sc.seed);
  parse_model(root.include("model", Rule{.required = true}), sc.model);
  {
    Section cluster = root.section("cluster", Rule{.required = true});
    parse_topology(cluster.include("topology", Rule{.required = true}), sc.topology);
    cluster.integer("nodes", sc.nodes, Rule{.sign = Sign::positive, .required = true});
    cluster.finish();
  }
  parse_parallel(root.section("parallel"), sc.parallel);
  parse_training(root.section("training", Rule{.required = true}), sc.training);
  if (sc.model.max_position_follows_sequence) sc.model.max_position = sc.training.sequence_length;
  parse_data(root.section("data"), sc.data);
  parse_reliability(root.section("reliability"), sc.reliability);
  sc.parameter_server.enabled = root.has("parameter_server");
  parse_parameter_server(root.section("parameter_server"), sc.parameter_server);
  {
    Section run = root.section("run");
    run.integer("steps", sc.run.steps, kPositive);
    run.choice("mode", sc.run.mode, {"steps", "full"});
    run.choice("detail", sc.run.detail, {"symmetric", "full"});
    run.choice("collectives", sc.run.collectives, {"fluid", "stepped"});
    run.finish();
  }
  {
    Section output = root.section("output");
    std::string path;
    const bool given = output.text("path", path);
    if (given && path.empty()) {
      // An empty path is no path: refused, as `-o ""` is, rather than written to the default.
      output.state().error(output.state().where("output.path"), "output.path",
                           "the output path is empty; give a file name, or none for no file");
    }
    if (given && !path.empty()) {
      sc.output.path = path == "none" ? "" : detail::resolve_path(output.file(), path);
    } else {
      sc.output.path = detail::resolve_path(root.file(), "../outputs/" + sc.name + ".h5");
    }
    output.choice("trace", sc.output.trace, {"none", "step", "op", "flow"});
    output.finish();
  }
  root.finish();
}

/// The scenario schema: every key in reading order, with its kind.
std::vector<std::pair<std::string, KeyKind>> scenario_schema() { return detail::collect_scenario_schema().schema; }

/// The node at `key` under `root`, creating mappings on the way; nullopt if a scalar is in the way.
std::optional<YAML::Node> node_at(YAML::Node root, const std::vector<std::string>& parts) {
  YAML::Node cur = root;
  for (const auto& part : parts) {
    if (!cur.IsMap() && !cur.IsNull()) return std::nullopt;
    const YAML::Node& view = cur;
    const YAML::Node child = cur.IsMap() ? view[part] : YAML::Node();
    if (!child.IsDefined() || child.IsNull()) cur[part] = YAML::Node(YAML::NodeType::Map);
    YAML::Node next = cur[part];
    cur.reset(next);
  }
  return cur;
}

struct Override {
  std::string key;
  KeyKind kind;
  YAML::Node value;
};

/// Writes one `--set` into the scenario tree, descending into included files where the path
/// crosses an include (`cluster.topology.node.nic.bandwidth` lands in the topology file's tree).
void apply_override(LoadState& st, const Document& doc, const std::map<std::string, KeyKind>& kinds,
                    const Override& o) {
  const SourceLoc cli{"--set", 0, 0};
  const auto parts = split(o.key, '.');
  YAML::Node cur = doc.root;
  std::string file = doc.file;
  std::string path;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    path = path.empty() ? parts[i] : path + "." + parts[i];
    const auto kind = kinds.find(path);
    const bool is_include = kind != kinds.end() && kind->second == KeyKind::include;
    if (is_include) {
      if (auto it = st.includes.find(path); it != st.includes.end()) {
        cur.reset(it->second.root);
        file = it->second.file;
        continue;
      }
    }
    const YAML::Node& view = cur;
    const YAML::Node child = cur.IsMap() ? view[parts[i]] : YAML::Node();
    if (is_include && child.IsDefined() && child.IsScalar() && !child.IsNull()) {
      const auto mark = child.Mark();
      const SourceLoc at = st.overridden.count(path) ? cli : SourceLoc{file, mark.line + 1, mark.column + 1};
      auto included = detail::load_document(detail::resolve_path(file, child.Scalar()), st, at, path);
      if (!included) {
        st.bad.insert(path);
        return;
      }
      st.includes[path] = *included;
      cur.reset(included->root);
      file = included->file;
      continue;
    }
    if (!child.IsDefined() || child.IsNull()) {
      cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
    } else if (!child.IsMap()) {
      st.error(cli, o.key, "cannot set it: " + path + " is not a mapping");
      return;
    }
    YAML::Node next = cur[parts[i]];
    cur.reset(next);
  }
  YAML::Node value = YAML::Clone(o.value);
  if (o.kind == KeyKind::sourced && !o.value.IsMap()) {
    YAML::Node wrapped(YAML::NodeType::Map);
    wrapped["value"] = YAML::Clone(o.value);
    wrapped["source"] = kCommandLineSource;
    value.reset(wrapped);
  }
  cur[parts.back()] = value;
  st.overridden.insert(o.key);
  if (o.kind == KeyKind::include) {
    for (auto it = st.includes.begin(); it != st.includes.end();) {
      const bool inside = it->first == o.key || it->first.rfind(o.key + ".", 0) == 0;
      it = inside ? st.includes.erase(it) : std::next(it);
    }
  }
}

void apply_overrides(LoadState& st, const Document& doc, const std::vector<std::string>& overrides) {
  const SourceLoc cli{"--set", 0, 0};
  const auto schema = scenario_schema();
  const std::map<std::string, KeyKind> kinds(schema.begin(), schema.end());
  std::vector<std::string> settable;
  for (const auto& [key, kind] : schema) {
    if (kind != KeyKind::section && key.find("[]") == std::string::npos) settable.push_back(key);
  }

  std::vector<Override> pending;
  for (const auto& text : overrides) {
    const auto eq = text.find('=');
    const std::string key = eq == std::string::npos ? "" : trim(text.substr(0, eq));
    if (key.empty()) {
      st.error(cli, "", "expected KEY=VALUE, got " + in_quotes(text));
      continue;
    }
    const auto kind = kinds.find(key);
    if (const auto item = key.find("[]"); item != std::string::npos && kind != kinds.end()) {
      st.error(cli, key, "a key of a list item cannot be set alone; set the whole list, e.g. --set '" +
                             key.substr(0, item) + "=[...]'");
      continue;
    }
    if (kind == kinds.end()) {
      std::string message = "unknown key";
      const std::string guess = did_you_mean(key, settable);
      if (!guess.empty()) message += "; did you mean " + in_quotes(guess) + "?";
      st.error(cli, key, message);
      continue;
    }
    std::string error;
    const auto value = detail::parse_yaml_value(text.substr(eq + 1), &error);
    if (!value) {
      st.error(cli, key, "invalid value: " + error);
      continue;
    }
    pending.push_back(Override{key, kind->second, *value});
  }
  // Replacing an included file first, so that keys set inside it land in the new file. (Never
  // reorder the vector: assigning a YAML::Node writes through to the node it refers to.)
  for (const auto& o : pending) {
    if (o.kind == KeyKind::include) apply_override(st, doc, kinds, o);
  }
  for (const auto& o : pending) {
    if (o.kind != KeyKind::include) apply_override(st, doc, kinds, o);
  }
}

/// The scenario as one YAML document: includes inlined, overrides applied, paths resolved.
std::string resolved_yaml(const Document& doc, const LoadState& st, const Scenario& sc) {
  YAML::Node out = YAML::Clone(doc.root);
  for (const auto& [key, included] : st.includes) {  // std::map order: outer includes first
    if (auto at = node_at(out, split(key, '.'))) {
      YAML::Node target = *at;
      target = YAML::Clone(included.root);
    }
  }
  if (!sc.reliability.failures.empty()) {
    if (auto at = node_at(out, {"reliability", "failures"})) {
      YAML::Node target = *at;
      target = sc.reliability.failures;
    }
  }
  if (auto at = node_at(out, {"output", "path"})) {
    YAML::Node target = *at;
    target = sc.output.path.empty() ? std::string("none") : sc.output.path;
  }
  YAML::Emitter emitter;
  emitter << out;
  return std::string(emitter.c_str()) + "\n";
}

[[noreturn]] void throw_errors(LoadState& st) {
  if (st.dropped > 0) {
    st.diagnostics.push_back(Diagnostic{SourceLoc{st.root_file, 0, 0}, "",
                                        "... and " + std::to_string(st.dropped) + " more problems not shown"});
  }
  throw InputError(std::move(st.diagnostics));
}

Document load_root(LoadState& st, const std::string& path) {
  st.root_file = path;
  auto doc = detail::load_document(path, st, SourceLoc{path, 0, 0}, "");
  if (!doc) throw_errors(st);
  return *doc;
}

/// Runs `load`; a yaml-cpp exception that escaped the checks becomes an InputError, never a crash.
template <class Load>
auto guarded(const std::string& path, Load&& load) {
  try {
    return load();
  } catch (const YAML::Exception& e) {
    const int line = e.mark.line < 0 ? 0 : e.mark.line + 1;
    throw InputError(SourceLoc{path, line, e.mark.column + 1}, "", "cannot read the YAML: " + e.msg);
  }
}

std::size_t levenshtein(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const bool same =
          std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string last_part(const std::string& key) {
  const auto dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

}  // namespace

detail::LoadState detail::collect_scenario_schema() {
  LoadState state;
  state.collecting = true;
  Scenario scratch;
  Section root(state, YAML::Node(), "", "", SourceLoc{}, false);
  parse_scenario(root, scratch);
  return state;
}

SourceLoc Scenario::where(const std::string& key) const { return nearest_location(locations, key, SourceLoc{file, 0, 0}); }

std::string did_you_mean(const std::string& key, const std::vector<std::string>& candidates) {
  const std::size_t cap = key.size() <= 3 ? 2 : std::max<std::size_t>(2, key.size() / 3) + 1;
  std::string best;
  std::size_t best_distance = cap;
  // The lengths differ by at most the distance: a candidate that cannot come closer is not
  // compared, so a long key (a 16 MiB line) costs O(candidates), not O(size x candidates).
  const auto too_far = [](const std::string& a, const std::string& b, std::size_t bound) {
    return (a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) >= bound;
  };
  for (const auto& c : candidates) {
    if (too_far(key, c, best_distance)) continue;
    const std::size_t d = levenshtein(key, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  if (key.find('.') != std::string::npos) return best;
  // A bare name typed for a dotted key ("nodes" for "cluster.nodes"): match last parts, and
  // take that match when it is closer and no other candidate's last part is as close.
  // Among equally close last parts the shallowest key wins ("nodes": cluster.nodes, not
  // cluster.topology.fabric.pod.nodes); a tie at the same depth suggests nothing.
  std::string by_part;
  std::size_t part_distance = cap;
  bool unique = false;
  const auto depth = [](const std::string& k) { return std::count(k.begin(), k.end(), '.'); };
  for (const auto& c : candidates) {
    if (c.find('.') == std::string::npos) continue;
    if (too_far(key, last_part(c), part_distance + 1)) continue;
    const std::size_t d = levenshtein(key, last_part(c));
    if (d < part_distance || (d == part_distance && depth(c) < depth(by_part))) {
      by_part = c;
      part_distance = d;
      unique = true;
    } else if (d == part_distance && depth(c) == depth(by_part)) {
      unique = false;
    }
  }
  return unique && part_distance < best_distance ? by_part : best;
}

std::vector<std::string> scenario_keys() {
  std::vector<std::string> keys;
  for (const auto& [key, kind] : scenario_schema()) {
    // A key inside a list item (training.batch_ramp[].until_tokens) is written with its list.
    if (kind == KeyKind::section || key.find("[]") != std::string::npos) continue;
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  return keys;
}

namespace {

/// training.attention_kernel: the named kernel's profiles replace the device's default
/// (FlashAttention-2) ones. The scenario names the kernel: `framework: fused` covers every
/// hand-fused stack (Megatron-LM 2021, Meta's Llama 3 stack, Megatron-core with TE), and only the
/// last runs cuDNN's kernel (Transformer Engine prefers cuDNN fused attention on Hopper:
/// NVIDIA/NeMo docs, memory_optimizations.rst, PR #9188); MosaicML's llm-foundry ran FlashAttention's
/// Triton kernel under attn_impl: triton. A kernel the device has no profile of is refused, and
/// so is any kernel but the default without fused attention (it would time nothing).
void resolve_attention_kernel(Scenario& sc, LoadState& st) {
  const TrainingSpec& t = sc.training;
  DeviceSpec& d = sc.topology.device;
  if (t.attention_kernel == kAttentionKernels[0].first) return;
  if (!t.flash_attention) {
    st.report("training.attention_kernel", t.attention_kernel + " is a fused attention kernel, but training.flash_attention is false "
                                           "(attention runs unfused); remove the key or set flash_attention: true");
    return;
  }
  const auto it = d.attention_kernels.find(t.attention_kernel);
  if (it == d.attention_kernels.end()) {
    std::string device_key;
    for (const auto& [name, key] : kAttentionKernels) {
      if (t.attention_kernel == name) device_key = key;
    }
    st.report("training.attention_kernel", t.attention_kernel + " needs a device with " + device_key + " (device " +
                                               d.name + " has none); use " + kAttentionKernels[0].first);
    return;
  }
  d.attention_kernel = it->second;
}

}  // namespace

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  return guarded(path, [&] {
    LoadState st;
    const Document doc = load_root(st, path);
    apply_overrides(st, doc, overrides);

    Scenario sc;
    sc.file = path;
    Section root(st, doc.root, path, "", SourceLoc{path, 1, 1}, false);
    parse_scenario(root, sc);
    detail::validate_model(sc.model, st, "model");
    detail::validate_topology(sc.topology, st, "cluster.topology");
    detail::validate_scenario(sc, st);
    resolve_attention_kernel(sc, st);
    if (!st.diagnostics.empty()) throw_errors(st);

    sc.locations = st.locations;
    sc.resolved_yaml = resolved_yaml(doc, st, sc);
    return sc;
  });
}

namespace {

/// Loads one standalone file (a topology or a model card): parse, validate, throw all errors.
template <class Spec, class Parse, class Validate>
Spec load_standalone(const std::string& path, Parse parse, Validate validate) {
  return guarded(path, [&] {
    LoadState st;
    const Document doc = load_root(st, path);
    Spec spec;
    parse(Section(st, doc.root, path, "", SourceLoc{path, 1, 1}, false), spec);
    validate(spec, st, "");
    if (!st.diagnostics.empty()) throw_errors(st);
    return spec;
  });
}

}  // namespace

TopologySpec load_topology(const std::string& path) {
  return load_standalone<TopologySpec>(
      path, [](Section s, TopologySpec& t) { parse_topology(s, t); },
      [](const TopologySpec& t, LoadState& st, const std::string& prefix) { detail::validate_topology(t, st, prefix); });
}

ModelSpec load_model(const std::string& path) {
  return load_standalone<ModelSpec>(
      path, [](Section s, ModelSpec& m) { parse_model(s, m); },
      [](const ModelSpec& m, LoadState& st, const std::string& prefix) { detail::validate_model(m, st, prefix); });
}

}  // namespace ironlaw::config
