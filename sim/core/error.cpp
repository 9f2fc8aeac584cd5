#include "core/error.hpp"

namespace ironlaw {

// Built with append() rather than operator+ chains: GCC 12 misreports those with -Wrestrict.
std::string SourceLoc::str() const {
  std::string out = file;
  if (line <= 0) return out;
  out.append(":").append(std::to_string(line)).append(":").append(std::to_string(column));
  return out;
}

SourceLoc nearest_location(const std::map<std::string, SourceLoc>& locations, std::string key, SourceLoc fallback) {
  while (true) {
    if (auto it = locations.find(key); it != locations.end()) return it->second;
    const auto dot = key.rfind('.');
    if (dot == std::string::npos) return fallback;
    key.resize(dot);
  }
}

std::string Diagnostic::str() const {
  std::string out = where.str();
  if (!out.empty()) out.append(": ");
  if (!key.empty()) out.append(key).append(": ");
  out.append(message);
  return out;
}

namespace {
std::string join(const std::vector<Diagnostic>& ds) {
  std::string out;
  for (const auto& d : ds) {
    if (!out.empty()) out += "\n";
    out += d.str();
  }
  return out;
}
}  // namespace

InputError::InputError(std::vector<Diagnostic> diagnostics)
    : std::runtime_error(join(diagnostics)), diagnostics_(std::move(diagnostics)) {}

InputError::InputError(SourceLoc where, std::string key, std::string message)
    : InputError(std::vector<Diagnostic>{Diagnostic{std::move(where), std::move(key), std::move(message)}}) {}

}  // namespace ironlaw
