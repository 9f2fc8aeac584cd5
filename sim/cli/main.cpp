// Entry point of the ironlaw command line: dispatches to a subcommand and turns every error
// into a message and an exit status (2 bad input, 3 internal), never a crash.
#include <boost/program_options/errors.hpp>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>
#include <iostream>
#include <string>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/error.hpp"
#include "output/atomic_file.hpp"
#include "output/h5_handle.hpp"
#include "core/time.hpp"

namespace {

const char* kUsage =
    "ironlaw — discrete-event simulator of distributed training on GPU clusters\n"
    "\n"
    "usage: ironlaw COMMAND [OPTIONS]   (ironlaw help COMMAND, or ironlaw COMMAND --help, for each)\n"
    "       ironlaw --version\n"
    "\n"
    "commands:\n"
    "  run SCENARIO.yaml        simulate training steps; print step time, MFU, breakdown, memory\n"
    "  sweep SCENARIO.yaml      vary keys over values (--vary KEY=V1,V2,...), one row per point\n"
    "  analyze OUT.h5           time breakdown of a recorded run by kind, rank or step\n"
    "  plot OUT.h5              SVG figure: --kind breakdown | timeline | sweep | links\n"
    "  explain SCENARIO.yaml    simulated vs published GPU-hours (--published-gpu-hours H)\n"
    "  budget                   the 6ND training-compute calculator of seed 003 (MFU is an input)\n"
    "  validate                 compare simulated results with published figures\n"
    "  collective               an nccl-tests-style table of simulated collectives\n"
    "  plan MODEL|SCENARIO      search layouts and cluster sizes; simulate the best (--gpus, --days, --budget)\n"
    "  keys [PREFIX]            every scenario key with type, unit, default, bounds and meaning\n"
    "  help COMMAND             the options of COMMAND (the same as COMMAND --help)\n";

int run_command(int argc, char** argv) {
  using namespace ironlaw::cli;
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::cout << kUsage;
    return argc < 2 ? kExitBadInput : kExitOk;
  }
  if (std::string(argv[1]) == "--version" || std::string(argv[1]) == "version") {
    std::cout << "ironlaw " << IRONLAW_VERSION << "\n";
    return kExitOk;
  }
  std::string command = argv[1];
  Args args(argv + 2, argv + argc);
  if (command == "help") {
    if (args.empty()) {
      std::cout << kUsage;
      return kExitOk;
    }
    if (args.size() > 1) {
      std::cerr << "ironlaw help: expected one COMMAND, got " << args.size() << " arguments\n";
      return kExitBadInput;
    }
    command = args.front();
    args = {"--help"};
  }
  try {
    // One CPU bound for the whole command (--cpu-limit, cli/common.hpp), analyze's and plot's
    // forked HDF5 probe included (the watchdog is parked across every fork).
    start_command_cpu_watchdog("ironlaw " + printable(command));
    check_argument_count(args);
    if (command == "run") return cmd_run(args);
    if (command == "sweep") return cmd_sweep(args);
    if (command == "analyze") return cmd_analyze(args);
    if (command == "plot") return cmd_plot(args);
    if (command == "explain") return cmd_explain(args);
    if (command == "budget") return cmd_budget(args);
    if (command == "validate") return cmd_validate(args);
    if (command == "plan") return cmd_plan(args);
    if (command == "keys") return cmd_keys(args);
    if (command == "collective") {
      check_collective_args(args);
      return cmd_collective(args);
    }
    std::cerr << "ironlaw: unknown command \"" << printable(command) << "\"\n\n" << kUsage;
    return kExitBadInput;
  } catch (const ironlaw::InputError& e) {
    for (const auto& d : e.diagnostics()) std::cerr << printable(d.str()) << "\n";
    return kExitBadInput;
  } catch (const ironlaw::IoError& e) {
    std::cerr << "ironlaw " << printable(command) << ": " << printable(e.what()) << "\n";
    return kExitBadInput;
  } catch (const ironlaw::TimeOverflow& e) {
    std::cerr << "ironlaw " << printable(command) << ": " << printable(e.what())
              << ": the scenario's durations, sizes or rates put the simulated clock past its limit; "
                 "bring the extreme value back into range\n";
    return kExitBadInput;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "ironlaw " << printable(command) << ": " << printable(e.what()) << "\n";
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "ironlaw " << printable(command) << ": out of memory: the scenario needs more memory than this machine gives; "
                 "reduce it (see --max-memory)\n";
    return kExitBadInput;
  } catch (const boost::program_options::error& e) {
    std::cerr << "ironlaw " << printable(command) << ": " << printable(e.what()) << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "ironlaw " << printable(command) << ": internal error: " << printable(e.what()) << "\n";
    return kExitInternal;
  }
}

}  // namespace

int main(int argc, char** argv) {
  ironlaw::output::skip_hdf5_exit_cleanup();  // a failed write's half-open file crashed at exit
  ironlaw::output::install_signal_cleanup();  // an interrupted run leaves no temporary (output/atomic_file.hpp)
  const int status = run_command(argc, argv);
  return ironlaw::cli::finish_stdout(status, argc > 1 ? argv[1] : "");
}
