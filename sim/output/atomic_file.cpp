#include "output/atomic_file.hpp"

#include <unistd.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

namespace ironlaw::output {

std::filesystem::path temporary_sibling(const std::filesystem::path& target) {
  const std::size_t thread = std::hash<std::thread::id>{}(std::this_thread::get_id());
  std::filesystem::path temporary = target;
  temporary += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(thread % 1000000);
  return temporary;
}

void check_output_location(const std::filesystem::path& target) {
  if (target.empty()) throw std::runtime_error("empty output path");
  std::error_code ec;
  if (std::filesystem::is_directory(target, ec)) {
    throw std::runtime_error(target.string() + ": cannot write output: is a directory");
  }
  const std::filesystem::path parent = target.parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    throw std::runtime_error(target.string() + ": cannot write output: directory '" +
                             parent.string() + "' does not exist");
  }
}

void commit_rename(const std::filesystem::path& temporary, const std::filesystem::path& target) {
  std::error_code ec;
  std::filesystem::rename(temporary, target, ec);
  if (ec) {
    discard_temporary(temporary);
    throw std::runtime_error(target.string() + ": cannot move finished output from '" +
                             temporary.string() + "': " + ec.message());
  }
}

void discard_temporary(const std::filesystem::path& temporary) noexcept {
  std::error_code ec;
  std::filesystem::remove(temporary, ec);
}

}  // namespace ironlaw::output
