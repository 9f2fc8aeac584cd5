#include "core/error.hpp"

namespace ironlaw {

std::string SourceLoc::str() const {
  if (line <= 0) return file;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

std::string Diagnostic::str() const {
  std::string out = where.str();
  if (!out.empty()) out += ": ";
  if (!key.empty()) out += key + ": ";
  return out + message;
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
