#include "output/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <atomic>
#include <functional>
#include <string>
#include <system_error>
#include <thread>

#include "core/error.hpp"

namespace ironlaw::output {

namespace {

// Built with append(): GCC 12 misreports "\"" + s with -Wrestrict.
std::string quoted(const std::filesystem::path& p) {
  std::string out = "\"";
  out.append(p.string()).append("\"");
  return out;
}

[[noreturn]] void fail(const std::filesystem::path& target, const std::string& why) {
  throw IoError("cannot write output " + quoted(target) + ": " + why);
}

/// What a non-regular file is, in words.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

/// Refuses a target that exists as anything but a regular file (the link itself is examined:
/// a rename would replace a symbolic link, not what it points to).
void require_regular_or_absent(const std::filesystem::path& target) {
  struct stat st {};
  if (::lstat(target.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return;  // absent; the folder is checked next
    fail(target, std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) fail(target, std::string("it is ") + kind_of(st.st_mode) + "; only regular files are written");
}

/// The pid in "<anything>.tmp-<pid>-<digits>", or 0 when `name` is not such a name.
pid_t temporary_owner(const std::string& name) {
  const auto tag = name.rfind(".tmp-");
  if (tag == std::string::npos) return 0;
  const std::string rest = name.substr(tag + 5);
  const auto dash = rest.find('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == rest.size() || dash > 9) return 0;
  const std::string pid = rest.substr(0, dash), n = rest.substr(dash + 1);
  if (pid.find_first_not_of("0123456789") != std::string::npos || n.find_first_not_of("0123456789") != std::string::npos) {
    return 0;
  }
  return static_cast<pid_t>(std::stol(pid));
}

// The temporaries in use: a slot is 0 (free), 1 (being written) or 2 (holds a path). The
// signal handler reads only slots at 2 and calls only unlink.
constexpr std::size_t kPathMax = 4096;
struct TrackedSlot {
  std::atomic<int> state{0};
  char path[kPathMax];
};
TrackedSlot g_tracked[kTrackedTemporaries];

void track(const std::filesystem::path& p) {
  const std::string& s = p.native();
  if (s.size() >= kPathMax) return;
  for (auto& slot : g_tracked) {
    int expected = 0;
    if (!slot.state.compare_exchange_strong(expected, 1)) continue;
    std::memcpy(slot.path, s.c_str(), s.size() + 1);
    slot.state.store(2);
    return;
  }
}

void untrack(const std::filesystem::path& p) {
  const std::string& s = p.native();
  for (auto& slot : g_tracked) {
    if (slot.state.load() != 2 || std::strcmp(slot.path, s.c_str()) != 0) continue;
    int expected = 2;
    if (slot.state.compare_exchange_strong(expected, 1)) {
      slot.path[0] = '\0';
      slot.state.store(0);
    }
    return;
  }
}

extern "C" void on_fatal_signal(int sig) {
  for (auto& slot : g_tracked)
    if (slot.state.load() == 2) ::unlink(slot.path);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void install_signal_cleanup() {
  ::signal(SIGXFSZ, SIG_IGN);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    ::sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    // A signal the parent ignores (nohup, a shell's background job) stays ignored.
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &sa, nullptr);
  }
}

void remove_tracked_temporaries() noexcept {
  for (auto& slot : g_tracked)
    if (slot.state.load() == 2) ::unlink(slot.path);
}

int tracked_temporaries() {
  int n = 0;
  for (const auto& slot : g_tracked) n += slot.state.load() == 2 ? 1 : 0;
  return n;
}

std::filesystem::path temporary_sibling(const std::filesystem::path& target) {
  const std::size_t thread = std::hash<std::thread::id>{}(std::this_thread::get_id());
  const std::string suffix = ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(thread % 1000000);
  std::string name = target.filename().string();
  // A file name may hold 255 bytes (NAME_MAX): a target of up to 255 is valid, its temporary
  // name would not be. Such a name is cut (at a UTF-8 boundary) and marked with a hash of the
  // whole name, so two long targets sharing a prefix (an .h5 and its Chrome trace) never share
  // a temporary; the ".tmp-<pid>-<n>" tail stays, so stale ones are still found and removed.
  constexpr std::size_t kNameMax = 255;
  if (name.size() + suffix.size() > kNameMax) {
    char mark[24];
    std::snprintf(mark, sizeof mark, "~%016zx", std::hash<std::string>{}(name));
    std::size_t keep = kNameMax - suffix.size() - std::strlen(mark);
    while (keep > 0 && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;
    name = name.substr(0, keep) + mark;
  }
  std::filesystem::path temporary = target.parent_path() / (name + suffix);
  track(temporary);
  return temporary;
}

void check_output_location(const std::filesystem::path& target) {
  if (target.empty()) throw IoError("cannot write output: the output path is empty");
  if (!target.has_filename()) fail(target, "it names a directory, expected a file path");
  require_regular_or_absent(target);
  const std::filesystem::path parent = target.parent_path();
  if (!parent.empty()) {
    struct stat st {};
    if (::stat(parent.c_str(), &st) != 0) {
      fail(target, "directory " + quoted(parent) + (errno == ENOENT ? std::string(" does not exist") : ": " + std::string(std::strerror(errno))));
    }
    if (!S_ISDIR(st.st_mode)) fail(target, quoted(parent) + " is not a directory");
  }
}

void probe_output(const std::filesystem::path& target) {
  check_output_location(target);
  const std::filesystem::path parent = target.parent_path();
  remove_stale_temporaries(parent.empty() ? std::filesystem::path(".") : parent);
  const std::filesystem::path probe = temporary_sibling(target);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    const int err = errno;
    untrack(probe);
    fail(target, "cannot create a file in its directory: " + std::string(std::strerror(err)));
  }
  ::close(fd);
  discard_temporary(probe);
}

std::size_t remove_stale_temporaries(const std::filesystem::path& directory) noexcept {
  std::size_t removed = 0;
  std::error_code ec;
  std::filesystem::directory_iterator it(directory, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const pid_t owner = temporary_owner(name);
    if (owner <= 0 || owner == ::getpid()) continue;
    if (::kill(owner, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (::unlink(it->path().c_str()) == 0) ++removed;
  }
  return removed;
}

void commit_rename(const std::filesystem::path& temporary, const std::filesystem::path& target) {
  struct Untrack {
    const std::filesystem::path& p;
    ~Untrack() { untrack(p); }
  } untrack_at_end{temporary};
  try {
    require_regular_or_absent(target);
  } catch (...) {
    discard_temporary(temporary);
    throw;
  }
  if (::rename(temporary.c_str(), target.c_str()) != 0) {
    const int err = errno;
    discard_temporary(temporary);
    fail(target, "cannot move the finished file from " + quoted(temporary) + ": " + std::strerror(err));
  }
}

void discard_temporary(const std::filesystem::path& temporary) noexcept {
  std::error_code ec;
  std::filesystem::remove(temporary, ec);
  untrack(temporary);
}

}  // namespace ironlaw::output
