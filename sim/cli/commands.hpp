#pragma once
/// \file The `ironlaw` subcommands. Each takes the arguments after its name and returns the
/// process exit status: 0 ok, 1 the simulated job failed (e.g. OOM), 2 bad input, 3 internal
/// error. Only this layer prints.
#include <cstddef>
#include <string>
#include <vector>

namespace ironlaw::cli {

using Args = std::vector<std::string>;

int cmd_run(const Args& args);
int cmd_sweep(const Args& args);
int cmd_analyze(const Args& args);
int cmd_explain(const Args& args);
int cmd_budget(const Args& args);
int cmd_validate(const Args& args);
int cmd_collective(const Args& args);
int cmd_keys(const Args& args);
int cmd_plan(const Args& args);
int cmd_plot(const Args& args);

inline constexpr int kExitOk = 0;
inline constexpr int kExitJobFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternal = 3;
/// `sweep` (and `plan`): 10 + N when N points could not be simulated (invalid, out of memory,
/// over a limit), N capped at kExitSweepFailedMax, so 11..110; 0 when every point ran.
inline constexpr int kExitSweepFailedBase = 10;
inline constexpr std::size_t kExitSweepFailedMax = 100;

/// The exit status of a sweep with `failed_points` points that could not be simulated.
int sweep_exit_status(std::size_t failed_points);

}  // namespace ironlaw::cli
