// `ironlaw-mpi sweep|plan ...` under mpirun or srun: the points of one sweep, or the layouts a
// plan simulates, spread over the MPI ranks (cli/ranks.hpp), rank 0 gathering them into the one
// HDF5 file and table that `ironlaw sweep` or `ironlaw plan` writes, byte for byte. A separate
// binary, so that `ironlaw` itself neither links MPI nor needs an MPI runtime; built only when
// CMake finds Boost.MPI.
#include <boost/mpi/collectives.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>
#include <boost/program_options/errors.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/ranks.hpp"
#include "core/error.hpp"

namespace ironlaw::cli {

namespace {

class MpiRanks final : public Ranks {
 public:
  explicit MpiRanks(boost::mpi::communicator world) : world_(std::move(world)) {}
  int rank() const override { return world_.rank(); }
  int size() const override { return world_.size(); }
  std::vector<std::vector<std::string>> gather(const std::vector<std::string>& mine) override {
    std::vector<std::vector<std::string>> all;
    boost::mpi::gather(world_, mine, all, 0);
    return all;
  }

 private:
  boost::mpi::communicator world_;
};

constexpr const char* kUsage =
    "usage: mpirun -n N ironlaw-mpi sweep SCENARIO.yaml --vary KEY=V1,V2,... [options]\n"
    "       mpirun -n N ironlaw-mpi plan MODEL.yaml|SCENARIO.yaml [options]\n"
    "       srun -n N ironlaw-mpi sweep|plan ...\n"
    "The points of the sweep, or the --top K layouts the plan simulates, are spread over the N\n"
    "ranks (rank r takes r, r+N, ...); rank 0 prints the table and writes the HDF5 file, identical\n"
    "to `ironlaw sweep`'s or `ironlaw plan`'s. -j threads run within each rank. Every other\n"
    "command: `ironlaw`.\n";

}  // namespace

}  // namespace ironlaw::cli

int main(int argc, char** argv) {
  using namespace ironlaw::cli;
  boost::mpi::environment env(argc, argv);
  boost::mpi::communicator world;
  MpiRanks group(world);
  install_ranks(&group);
  const bool root = world.rank() == 0;
  if (!root && !std::freopen("/dev/null", "w", stdout)) return kExitInternal;  // rank 0 alone prints results

  const std::string command = argc < 2 ? "" : argv[1];
  if (command == "--help" || command == "-h" || command == "help") {
    if (root) std::cout << kUsage;
    return kExitOk;
  }
  if (command != "sweep" && command != "plan") {
    if (root) std::cerr << "ironlaw-mpi: expected the command sweep or plan, got \"" << command << "\"\n" << kUsage;
    return kExitBadInput;
  }
  const Args args(argv + 2, argv + argc);
  const std::string who = "ironlaw-mpi " + command;
  // The command's CPU bound (--cpu-limit, cli/common.hpp) on each rank's process: past it the
  // rank exits 2 without MPI_Finalize, which ends the whole job under mpirun.
  try {
    start_command_cpu_watchdog(who);
    return command == "plan" ? cmd_plan(args) : cmd_sweep(args);
  } catch (const ironlaw::InputError& e) {
    // Bad input is found by every rank alike before any point runs: each returns, rank 0 says why.
    if (root) {
      for (const auto& d : e.diagnostics()) std::cerr << d.str() << "\n";
    }
    return kExitBadInput;
  } catch (const boost::program_options::error& e) {
    if (root) std::cerr << who << ": " << e.what() << "\n";
    return kExitBadInput;
  } catch (const ironlaw::IoError& e) {
    // Anything else may strike one rank alone while the others wait to gather: stop them all.
    std::cerr << who << " (rank " << world.rank() << "): " << e.what() << "\n";
    env.abort(kExitBadInput);
  } catch (const std::exception& e) {
    std::cerr << who << " (rank " << world.rank() << "): internal error: " << e.what() << "\n";
    env.abort(kExitInternal);
  }
  return kExitInternal;
}
