#pragma once
/// \file Output files appear under their name complete or not at all: a writer fills a
/// temporary sibling and renames it onto the target only when everything was written.
#include <filesystem>

namespace ironlaw::output {

/// A temporary name next to `target` (same directory, so the final rename is atomic):
/// "<target>.tmp-<pid>-<thread>". Distinct for writers in different processes or threads.
std::filesystem::path temporary_sibling(const std::filesystem::path& target);

/// Throws std::runtime_error naming `target` if its directory does not exist or `target` is a
/// directory.
void check_output_location(const std::filesystem::path& target);

/// Atomically replaces `target` by `temporary` (POSIX rename); throws std::runtime_error naming
/// both on failure.
void commit_rename(const std::filesystem::path& temporary, const std::filesystem::path& target);

/// Removes `temporary` if it exists; never throws (used on the error path).
void discard_temporary(const std::filesystem::path& temporary) noexcept;

}  // namespace ironlaw::output
