#pragma once
/// \file The processes a sweep shares its points with. A plain `ironlaw` is one process (rank
/// 0 of 1) and never touches MPI; `ironlaw-mpi` (sim/cli/mpi/, built when Boost.MPI is found)
/// installs an MPI implementation before it runs the command, so the command code needs no MPI
/// headers and the single-process binary no MPI library at run time.
#include <string>
#include <vector>

namespace ironlaw::cli {

/// A group of processes running the same command on the same input: each simulates the
/// points whose index i satisfies i % size() == rank(), and rank 0 gathers the results and
/// writes every output.
class Ranks {
 public:
  virtual ~Ranks() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Collective: every rank passes the encoded results of its own points, in index order.
  /// Returns, on rank 0, every rank's list indexed by rank; elsewhere an empty list.
  virtual std::vector<std::vector<std::string>> gather(const std::vector<std::string>& mine) = 0;
};

/// The ranks of this process: the installed group, else one process (rank 0 of 1).
Ranks& ranks();
/// Installs `group` (nullptr: back to one process). Not thread-safe: call before any command runs.
void install_ranks(Ranks* group);

}  // namespace ironlaw::cli
