#pragma once
/// \file The one unit parser, shared by YAML files and `--set`/`--vary` (STYLE.md §2).
/// Knows GB (1e9) from GiB (2^30) and B (byte) from b/bit.
#include <optional>
#include <string>
#include <vector>

namespace ironlaw::config {

enum class Dimension {
  count,      ///< plain number; suffixes k M G T P (1e3…) and Ki Mi Gi Ti (2^10…) allowed
  bytes,      ///< B, kB/KB, MB, GB, TB, KiB, MiB, GiB, TiB; also bit, Kbit, Mbit, Gbit (÷8)
  bandwidth,  ///< bytes per second: GB/s, GiB/s, MB/s, Gbit/s, Gb/s, Tbit/s, ...
  time,       ///< ns, us (µs), ms, s, min, h, d
  flops,      ///< FLOP, kFLOP, MFLOP, GFLOP, TFLOP, PFLOP, EFLOP, ZFLOP
  flop_rate,  ///< FLOP/s: GFLOPS, TFLOPS, PFLOPS, "TFLOP/s"
  price,      ///< USD per hour: plain number
};
const char* dimension_name(Dimension d);
/// An example of a well-formed value of `d`, for error messages ("400 Gbit/s").
const char* dimension_example(Dimension d);

/// Parses "400 Gbit/s", "80 GiB", "5 us", "15 T", "4 Mi", "989.4 TFLOPS" or a plain SI number.
/// Returns the value in SI base units (bytes, seconds, B/s, FLOP, FLOP/s), or nullopt with
/// `error` set ("expected a bandwidth like \"400 Gbit/s\", got \"400 GB\"").
std::optional<double> parse_quantity(const std::string& text, Dimension expected, std::string* error);

/// True for the dimensions whose numbers must be written with a unit in scenario, topology and
/// model files and in `--set`: sizes, bandwidths, times, FLOP counts and FLOP rates. Counts and
/// prices stay bare.
bool needs_unit(Dimension d);

/// True when `text` is a number with nothing after it ("0.5", "1e18"), i.e. no unit. O(length).
bool is_bare_number(const std::string& text);

/// How a bare number `text`, read as `si` in SI base units of `d`, should have been written:
/// {"0.5 s", "500 ms"}, {"1e18 B/s", "1 EB/s"}, {"2 s"}: with the base unit, then with the
/// prefixed unit that puts the value between 1 and 1000 when that differs (a binary one such
/// as MiB when the value is a whole number of those and not of the decimal one). For "has no
/// unit" messages. O(1).
std::vector<std::string> unit_suggestions(const std::string& text, double si, Dimension d);

}  // namespace ironlaw::config
