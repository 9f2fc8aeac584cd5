#pragma once
/// \file Validation cases: published figures beside what ironlaw predicts for the published
/// configuration, with the error. Nothing is fitted per case (DESIGN.md principle 2): a case
/// that misses is reported as a miss.
#include <string>
#include <vector>

namespace ironlaw::report {

struct ValidationRow {
  std::string label;     ///< what is compared, e.g. "all_reduce busbw, 8 GPUs, 8 GiB"
  double published = 0;
  double predicted = 0;
  std::string unit;
  std::string source;    ///< where the published figure comes from
  /// (predicted − published) / published.
  double error() const { return published != 0 ? (predicted - published) / published : 0; }
};

struct ValidationCase {
  std::string name;
  std::string description;
  std::vector<ValidationRow> rows;
};

/// Names of the known cases, in the order `ironlaw validate` runs them.
std::vector<std::string> validation_case_names();
/// Runs one case. `data_dir` holds topologies/, models/ and scenarios/. Throws
/// std::invalid_argument for an unknown name.
ValidationCase run_validation(const std::string& name, const std::string& data_dir);

}  // namespace ironlaw::report
