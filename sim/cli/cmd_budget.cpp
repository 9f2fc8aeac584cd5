// `ironlaw budget`: seed 003's training-compute calculator, the analytical baseline. The one
// command where MFU is an input (DESIGN.md principle 1) — and it says so in its output.
#include <boost/program_options.hpp>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "config/units.hpp"
#include "workload/budget.hpp"

namespace po = boost::program_options;

namespace ironlaw::cli {

namespace {

/// 1234567.8 → "1,234,568" (rounded to `decimals`, thousands separated).
std::string grouped(double v, int decimals = 0) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, std::fabs(v));
  std::string s = buf;
  const auto dot = s.find('.');
  std::string int_part = s.substr(0, dot), frac = dot == std::string::npos ? "" : s.substr(dot);
  std::string out;
  for (std::size_t i = 0; i < int_part.size(); ++i) {
    if (i > 0 && (int_part.size() - i) % 3 == 0) out += ',';
    out += int_part[i];
  }
  return (v < 0 ? "-" : "") + out + frac;
}

/// FLOPs with an SI prefix putting the value in [1, 1000): one decimal from 100 up, two below
/// (the seed's 722.7 ZFLOP, 96.65 ZFLOP, 6.35 YFLOP).
std::string flops(double f) {
  static const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E", "Z", "Y"};
  int p = 0;
  while (p < 8 && std::fabs(f) >= 1000.0) {
    f /= 1000.0;
    ++p;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, f >= 100 ? "%.1f %sFLOP" : "%.2f %sFLOP", f, prefixes[p]);
  return buf;
}

std::string pct(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100.0 * fraction);
  return buf;
}

double quantity(const std::string& text, config::Dimension d, const std::string& option) {
  std::string error;
  const auto v = config::parse_quantity(text, d, &error);
  if (!v) throw InputError({option, 0, 0}, option, error);
  return *v;
}

/// A command-line number within [lo, hi] (finite): a 1e300 or NaN input is an input error, not a
/// 301-digit echo in the table.
double bounded(double v, double lo, double hi, const std::string& option) {
  if (!(v >= lo && v <= hi)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "expected a number from %g to %g, got %g", lo, hi, v);
    throw InputError({option, 0, 0}, option, buf);
  }
  return v;
}

/// An MFU as given to --mfu: a fraction in (0, 1] ("0.4") or a percentage with its sign
/// ("40%", "40 %"). A bare number above 1 is refused (it is most likely a percentage without
/// `%`), as is anything outside (0, 1] once converted.
double parse_mfu(const std::string& text) {
  std::string t = text;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  bool percent = false;
  if (!t.empty() && t.back() == '%') {
    percent = true;
    t.pop_back();
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  }
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (t.empty() || used != t.size() || !std::isfinite(v)) {
    throw InputError({"--mfu", 0, 0}, "--mfu", "expected a fraction in (0, 1] like 0.40 or a percentage like 40%, got \"" + text + "\"");
  }
  if (!percent && v > 1) {
    throw InputError({"--mfu", 0, 0}, "--mfu", "expected a fraction in (0, 1], got " + text +
                                                   "; for a percentage write it with %, e.g. --mfu " + text + "%");
  }
  const double fraction = percent ? v / 100.0 : v;
  if (!(fraction > 0 && fraction <= 1)) {
    throw InputError({"--mfu", 0, 0}, "--mfu", "expected an MFU in (0, 1] (0 % to 100 %), got \"" + text + "\"");
  }
  return fraction;
}

void row(const std::string& what, const std::string& how, const std::string& value) {
  std::printf("  %-34s %-36s %s\n", what.c_str(), how.c_str(), value.c_str());
}

void bill(const char* title, const workload::Bill& b) {
  std::printf("%s\n", title);
  row("FLOPs", "", flops(b.flops));
  row("GPU-hours", "FLOPs / (peak x MFU x 3600)", grouped(b.gpu_hours) + " h");
  row("GPU-days", "GPU-hours / 24", grouped(b.gpu_days, 1));
  row("wall-clock", "GPU-hours / (devices x 24)", grouped(b.wall_days, 1) + " days");
  row("cost", "GPU-hours x price", "$" + grouped(b.cost));
}

}  // namespace

int cmd_budget(const Args& args) {
  po::options_description opts(
      "ironlaw budget [--preset NAME | --params N --tokens D] [--layers L --width d --seq s]\n"
      "               [--peak-tflops P --mfu M --devices K --price USD_PER_HOUR]\n\n"
      "The 6ND training-compute calculator of seed 003. MFU is an INPUT here (default 0.40);\n"
      "`ironlaw run` is where MFU comes out of a simulation instead");
  std::string preset, params, tokens, published_hours, mfu;
  double layers = 0, width = 0, seq = 0, peak_tflops = 0, devices = 0, price = 0;
  opts.add_options()
      ("help,h", "show this help")
      ("preset", po::value(&preset), "llama3-8b | llama3-70b | gpt3-175b | chinchilla-70b")
      ("params", po::value(&params), "N, parameters (e.g. 8.03e9 or \"8.03 G\")")
      ("tokens", po::value(&tokens), "D, training tokens (e.g. \"15 T\")")
      ("layers", po::value(&layers), "L (attention term only)")
      ("width", po::value(&width), "d, model width (attention term only)")
      ("seq", po::value(&seq), "s, sequence length (attention term only)")
      ("peak-tflops", po::value(&peak_tflops), "dense peak per device [TFLOP/s] (default 989.5, the seed's H100 BF16)")
      ("mfu", po::value(&mfu), "ASSUMED model FLOPs utilisation: a fraction in (0, 1] or a percentage with % (default 0.40)")
      ("devices", po::value(&devices), "devices in parallel (default 1024)")
      ("price", po::value(&price), "USD per device-hour (default 2.5)")
      ("published-gpu-hours", po::value(&published_hours), "published GPU-hours, for the implied MFU");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return kExitOk;
  }
  po::notify(vm);

  // Malformed options first, before any check between them.
  const double mfu_fraction = vm.count("mfu") ? parse_mfu(mfu) : 0;
  workload::BudgetInputs in;
  std::string source = "seed 003 opening state (Llama 3 8B)";
  if (!preset.empty()) {
    const auto p = workload::find_budget_preset(preset);
    if (!p) throw InputError({}, "--preset", "unknown preset \"" + preset + "\"; expected llama3-8b, llama3-70b, gpt3-175b or chinchilla-70b");
    in = p->inputs;
    source = p->name + ": " + p->source;
  }
  if (vm.count("params")) in.params = bounded(quantity(params, config::Dimension::count, "--params"), 0, 1e15, "--params");
  if (vm.count("tokens")) in.tokens = bounded(quantity(tokens, config::Dimension::count, "--tokens"), 0, 1e18, "--tokens");
  // The attention term needs the model's shape: a --params of another model with the default
  // (Llama 3 8B) shape would silently mix two models, so without --preset the shape is demanded.
  if (vm.count("params") && preset.empty()) {
    std::string missing;
    for (const char* o : {"layers", "width", "seq"}) {
      if (!vm.count(o)) missing += std::string(missing.empty() ? "" : ", ") + "--" + o;
    }
    if (!missing.empty()) {
      throw InputError({"--params", 0, 0}, "--params",
                       "a model of " + params + " parameters needs its shape for the attention term: give " + missing +
                           " (e.g. Llama 3 70B: --layers 80 --width 8192 --seq 8192), or a --preset");
    }
  }
  if (vm.count("params") || vm.count("tokens")) {
    if (preset.empty()) source = "user inputs";
    if (preset.empty()) in.published_gpu_hours.reset();
  }
  if (vm.count("layers")) in.layers = bounded(layers, 0, 1e6, "--layers");
  if (vm.count("width")) in.width = bounded(width, 0, 1e8, "--width");
  if (vm.count("seq")) in.sequence_length = bounded(seq, 0, 1e9, "--seq");
  if (vm.count("peak-tflops")) in.peak_flops = bounded(peak_tflops, 1e-3, 1e7, "--peak-tflops") * 1e12;
  if (vm.count("mfu")) in.mfu = mfu_fraction;
  if (vm.count("devices")) in.devices = bounded(devices, 1, 1e9, "--devices");
  if (vm.count("price")) in.price_per_hour = bounded(price, 0, 1e6, "--price");
  if (vm.count("published-gpu-hours"))
    in.published_gpu_hours = bounded(quantity(published_hours, config::Dimension::count, "--published-gpu-hours"), 0,
                                     1e15, "--published-gpu-hours");

  const auto r = workload::compute_budget(in);
  const auto& x = r.inputs;
  for (const auto& note : r.notes) std::printf("note: %s\n", note.c_str());
  if (!r.notes.empty()) std::printf("\n");
  std::printf("training compute budget — %s\n", source.c_str());
  std::printf("N = %s parameters, D = %s tokens, L = %s, d = %s, s = %s\n", grouped(x.params).c_str(),
              grouped(x.tokens).c_str(), grouped(x.layers).c_str(), grouped(x.width).c_str(),
              grouped(x.sequence_length).c_str());
  std::printf("MFU %.2f is an ASSUMPTION of this calculator, not a measurement (ironlaw run simulates it)\n\n", x.mfu);

  std::printf("FLOPs\n");
  row("forward", "2 x N x D", flops(r.forward_flops));
  row("backward", "4 x N x D", flops(r.backward_flops));
  row("6ND", "6 x N x D", flops(r.six_nd.flops));
  row("attention that 6ND omits", "6 x L x d x D x (s + 1)", flops(r.attention_flops) + " (" + pct(r.attention_fraction) + " of 6ND)");
  row("  share of the true total", "attention / (6ND + attention)", pct(r.attention_share));
  row("  causal mask cells per sequence", "s (s + 1) / 2", grouped(r.mask_cells));
  row("  sequences", "D / s", grouped(r.sequences));
  std::printf("\nrate\n");
  row("per device", "peak x MFU", grouped(r.device_flops_per_second / 1e12, 1) + " TFLOP/s");
  char eflop[32];
  std::snprintf(eflop, sizeof eflop, "%.2f EFLOP", r.flops_per_gpu_hour / 1e18);
  row("per GPU-hour", "peak x MFU x 3600", eflop);
  std::printf("\n");
  bill("bill on 6ND (what the seed's hours use)", r.six_nd);
  std::printf("\n");
  bill("bill on 6ND + attention", r.with_attention);
  std::printf("\nChinchilla (D = 20 N) for the same N\n");
  row("tokens per parameter", "D / N", grouped(r.tokens_per_param, 2));
  row("compute-optimal tokens", "20 x N", grouped(r.chinchilla_tokens / 1e9, 1) + " B");
  row("FLOPs", "6 x N x 20N", flops(r.chinchilla.flops));
  row("GPU-hours", "", grouped(r.chinchilla.gpu_hours) + " h");
  row("cost", "", "$" + grouped(r.chinchilla.cost));
  row("this run / Chinchilla", "D / (20 N)", grouped(r.chinchilla_ratio, 1) + " x");
  if (r.published_flops) {
    std::printf("\npublished compute\n");
    row("published", "", flops(*r.published_flops));
    row("6ND", "", flops(r.six_nd.flops));
    row("6ND vs published", "", pct(*r.published_vs_six_nd));
  }
  if (r.implied_mfu) {
    std::printf("\nimplied by published GPU-hours (%s h)\n", grouped(*x.published_gpu_hours).c_str());
    row("MFU (6ND)", "6ND / (hours x 3600 x peak)", pct(*r.implied_mfu));
    row("MFU (6ND + attention)", "", pct(*r.implied_mfu_with_attention));
    row("published / estimated hours", "at the assumed MFU", grouped(*x.published_gpu_hours / r.six_nd.gpu_hours, 2) + " x");
  }
  std::printf("\n6ND ignores softmax, norms, activations, the optimizer step, embeddings and all communication:\n"
              "a lower bound, not a bill. `ironlaw run` schedules the work instead.\n");
  return kExitOk;
}

}  // namespace ironlaw::cli
