#pragma once
/// \file How much of the simulated timeline goes to the record sink.
#include <string>

namespace ironlaw::run {

/// none: steps only in the result; step: one record per step; op: one per kernel and
/// collective of every simulated rank; flow: also one per network flow.
enum class TraceLevel { none, step, op, flow };
TraceLevel parse_trace_level(const std::string& text);  ///< throws std::invalid_argument

}  // namespace ironlaw::run
