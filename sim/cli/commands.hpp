#pragma once
/// \file The `ironlaw` subcommands. Each takes the arguments after its name and returns the
/// process exit status: 0 ok, 1 the simulated job failed (e.g. OOM), 2 bad input, 3 internal
/// error. Only this layer prints.
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

inline constexpr int kExitOk = 0;
inline constexpr int kExitJobFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternal = 3;

}  // namespace ironlaw::cli
