#pragma once
/// \file The training-compute budget of seed 003 (../shared/seeds/README.md): 6ND, the causal
/// attention term 6·L·d·D·(s+1), hours = FLOPs / (peak × MFU × 3600), wall days, cost, the
/// Chinchilla 20·N comparison and the MFU implied by published GPU-hours.
///
/// This is the ONE place in ironlaw where MFU is an input (DESIGN.md principle 1): it is the
/// analytical baseline printed beside simulated results, not a model of the hardware. N is the
/// number the user gives, not one rebuilt from a shape; L, d and s only feed the attention term.
///
/// Every numeric input is clamped to a documented range and each clamp is returned as a note
/// ("mfu 1.01 clamped to 1"), never applied silently. Nothing here prints; `ironlaw budget`
/// formats the report.
#include <optional>
#include <string>
#include <vector>

namespace ironlaw::workload {

/// Inputs of the budget. Defaults are the seed's opening state: the Llama 3 8B preset on
/// 1,024 H100 SXM at MFU 0.40 and $2.5 per GPU-hour.
///
/// Ranges (inclusive; values outside are clamped, NaN is replaced by the default, and the
/// integer-valued fields are rounded to the nearest integer — each with a note):
///   params [1, 1e15], tokens [1, 1e17], layers [1, 10,000] integer, width [1, 1e6] integer,
///   sequence_length [1, 1e8] integer, peak_flops [1e9, 1e18] FLOP/s, mfu [0.01, 1],
///   devices [1, 1e8] integer, price_per_hour [0, 1e4] USD, published_gpu_hours [1, 1e12],
///   published_flops [1, 1e30].
struct BudgetInputs {
  double params = 8.03e9;             ///< N [parameters]
  double tokens = 15e12;              ///< D [tokens]
  double layers = 32;                 ///< L (attention term only)
  double width = 4096;                ///< d, model width (attention term only)
  double sequence_length = 8192;      ///< s [tokens] (attention term only)
  /// Dense BF16 peak per device [FLOP/s]. 989.5e12 is seed 003's own input (1,979 / 2 for
  /// sparsity); the H100 device profile (../shared/reference/hardware.md) carries 989.4e12.
  /// The budget keeps the seed's number so its figures reproduce exactly.
  double peak_flops = 989.5e12;
  double mfu = 0.40;                  ///< assumed model FLOPs utilisation, (0, 1] — an INPUT here only
  double devices = 1024;              ///< devices running in parallel for the whole run
  double price_per_hour = 2.5;        ///< [USD per device-hour]
  std::optional<double> published_gpu_hours;  ///< for the implied MFU
  std::optional<double> published_flops;      ///< published total training compute [FLOP]
};

/// A named preset: the seed's models, with where each number comes from.
struct BudgetPreset {
  std::string name;     ///< llama3-8b | llama3-70b | gpt3-175b | chinchilla-70b
  BudgetInputs inputs;
  std::string source;
};

/// The four presets of seed 003, in the seed's order. O(1).
std::vector<BudgetPreset> budget_presets();
/// The preset called `name`, or nullopt.
std::optional<BudgetPreset> find_budget_preset(const std::string& name);

/// A FLOP total turned into time and money at the inputs' peak × MFU.
struct Bill {
  double flops = 0;       ///< [FLOP]
  double gpu_hours = 0;   ///< flops / (peak · mfu · 3600)
  double gpu_days = 0;    ///< gpu_hours / 24
  double wall_days = 0;   ///< gpu_hours / (devices · 24)
  double cost = 0;        ///< gpu_hours · price [USD]
};

/// The whole report, as numbers (unrounded; the seed prints them rounded).
struct BudgetReport {
  BudgetInputs inputs;              ///< after clamping
  std::vector<std::string> notes;   ///< one per clamped / rounded / replaced input

  double forward_flops = 0;         ///< 2·N·D
  double backward_flops = 0;        ///< 4·N·D
  double attention_flops = 0;       ///< 6·L·d·D·(s+1): causal QKᵀ and PV, forward + backward
  double attention_fraction = 0;    ///< attention / 6ND = L·d·(s+1)/N
  double attention_share = 0;       ///< attention / (6ND + attention)
  double mask_cells = 0;            ///< s(s+1)/2 causal cells per sequence
  double sequences = 0;             ///< D / s
  double device_flops_per_second = 0;  ///< peak · mfu
  double flops_per_gpu_hour = 0;    ///< peak · mfu · 3600

  Bill six_nd;                      ///< the 6ND bill (what the seed's hours use)
  Bill with_attention;              ///< 6ND + attention

  double tokens_per_param = 0;      ///< D / N
  double chinchilla_tokens = 0;     ///< 20·N
  Bill chinchilla;                  ///< 6·N·20N
  double chinchilla_ratio = 0;      ///< six_nd.flops / chinchilla.flops = D / (20·N)

  std::optional<double> implied_mfu;                 ///< 6ND / (published hours · 3600 · peak)
  std::optional<double> implied_mfu_with_attention;  ///< (6ND + attention) / (same)
  std::optional<double> published_flops;             ///< as given
  std::optional<double> published_vs_six_nd;         ///< (6ND − published) / published
};

/// Clamps `inputs` (with notes) and computes the report. O(1).
BudgetReport compute_budget(const BudgetInputs& inputs);

}  // namespace ironlaw::workload
