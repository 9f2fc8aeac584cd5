// The README as a new user reads it from a clone: every Markdown file it points at exists in the
// repository, and it points at nothing outside the repository (a clone has no ../shared/).
#include <catch2/catch.hpp>

#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_harness.hpp"

using namespace ironlaw::cli_test;

namespace {

/// Every maximal run of path characters in `text` that ends in ".md", except inside URLs.
std::vector<std::string> markdown_paths(const std::string& text) {
  std::vector<std::string> out;
  const auto path_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/' || c == ':';
  };
  for (std::size_t at = text.find(".md"); at != std::string::npos; at = text.find(".md", at + 3)) {
    if (at + 3 < text.size() && (std::isalnum(static_cast<unsigned char>(text[at + 3])) || text[at + 3] == '_')) continue;
    std::size_t start = at;
    while (start > 0 && path_char(text[start - 1])) --start;
    const std::string path = text.substr(start, at + 3 - start);
    if (path.find("://") != std::string::npos) continue;
    out.push_back(path);
  }
  return out;
}

}  // namespace

TEST_CASE("README points only at Markdown files that exist in the repository", "[cli][docs]") {
  const std::string readme = read_file(repo_path("README.md"));
  REQUIRE_FALSE(readme.empty());
  CHECK(readme.find("../shared") == std::string::npos);
  const auto paths = markdown_paths(readme);
  CHECK_FALSE(paths.empty());
  for (const auto& p : paths) {
    INFO(p);
    CHECK(fs::exists(repo_path(p)));
  }
}
