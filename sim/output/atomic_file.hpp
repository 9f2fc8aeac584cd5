#pragma once
/// \file Output files appear under their name complete or not at all: a writer fills a
/// temporary sibling and renames it onto the target only when everything was written.
///
/// Only regular files are ever created or replaced: a target that exists and is anything else
/// (a device node, a FIFO, a socket, a folder, a symbolic link) is refused before it is
/// touched. Every failure throws IoError (exit status 2) naming the path and the errno text.
#include <filesystem>
#include <string>

namespace ironlaw::output {

/// A temporary name next to `target` (same directory, so the final rename is atomic):
/// "<target>.tmp-<pid>-<thread>". Distinct for writers in different processes or threads.
std::filesystem::path temporary_sibling(const std::filesystem::path& target);

/// Throws IoError naming `target` if it is empty, exists as anything but a regular file, or
/// its directory does not exist. Touches nothing. O(1) system calls.
void check_output_location(const std::filesystem::path& target);

/// check_output_location(), then proves the directory writable by creating (O_EXCL) and
/// removing an empty temporary sibling, and removes stale temporaries of dead processes there
/// (remove_stale_temporaries). Call it for every output before simulating. Throws IoError.
void probe_output(const std::filesystem::path& target);

/// Removes the files "<name>.tmp-<pid>-<n>" in `directory` whose process <pid> no longer
/// exists (left by a killed run); regular files only, never those of a live process. Returns
/// how many were removed. Never throws. O(entries of the directory).
std::size_t remove_stale_temporaries(const std::filesystem::path& directory) noexcept;

/// Atomically replaces `target` by `temporary` (POSIX rename) after checking again that
/// `target` is absent or a regular file; throws IoError naming both on failure (and removes
/// the temporary).
void commit_rename(const std::filesystem::path& temporary, const std::filesystem::path& target);

/// Removes `temporary` if it exists; never throws (used on the error path).
void discard_temporary(const std::filesystem::path& temporary) noexcept;

/// Every name temporary_sibling() hands out is remembered until commit_rename() or
/// discard_temporary() ends it (up to kTrackedTemporaries at once, more than any command
/// writes). install_signal_cleanup() makes SIGINT, SIGTERM, SIGHUP and SIGQUIT remove the
/// remembered temporaries (unlink only: async-signal-safe) before the process dies of the
/// signal as it would have, so an interrupted run leaves neither a half output (the target is
/// only ever renamed into place) nor a temporary; and it ignores SIGXFSZ, so a file past the
/// size limit (ulimit -f) fails its write with EFBIG, which ends as an IoError (exit 2) naming
/// the path, not as a kill that leaves the temporary behind. Call once, at start-up.
inline constexpr int kTrackedTemporaries = 64;
void install_signal_cleanup();
/// Unlinks every remembered temporary (what the signal handler does), for a command that ends
/// the process itself (the command CPU bound, cli/common.hpp). Async-signal-safe. Never throws.
void remove_tracked_temporaries() noexcept;
/// Temporaries now remembered (for tests). O(kTrackedTemporaries).
int tracked_temporaries();

}  // namespace ironlaw::output
