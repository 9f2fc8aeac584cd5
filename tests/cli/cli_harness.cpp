#include "cli_harness.hpp"

#include <fcntl.h>
#include <pty.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>

namespace ironlaw::cli_test {

namespace {

std::atomic<unsigned> g_temp_counter{0};

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

/// A fresh file for one captured stream; the caller reads it and removes it.
fs::path capture_file(const char* stream) {
  std::string name = (fs::temp_directory_path() / ("ironlaw-cli-" + std::string(stream) + "-XXXXXX")).string();
  const int fd = ::mkstemp(name.data());
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "mkstemp " + name);
  ::close(fd);
  return name;
}

/// Waits for the child `pid` and records how it ended in `outcome`.
void wait_for(pid_t pid, Outcome& outcome) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "waitpid");
  }
  if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
}

/// IRONLAW_BINARY followed by `args`, as the NULL-terminated argv that exec wants (built before
/// fork: the child may only make async-signal-safe calls).
class CommandLine {
 public:
  explicit CommandLine(const std::vector<std::string>& args) {
    storage_.reserve(args.size() + 1);
    storage_.emplace_back(IRONLAW_BINARY);
    storage_.insert(storage_.end(), args.begin(), args.end());
    for (auto& a : storage_) argv_.push_back(a.data());
    argv_.push_back(nullptr);
  }
  char* const* argv() { return argv_.data(); }

 private:
  std::vector<std::string> storage_;
  std::vector<char*> argv_;
};

}  // namespace

TempDir::TempDir() {
  std::random_device entropy;
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::ostringstream name;
    name << "ironlaw-cli-" << ::getpid() << "-" << g_temp_counter++ << "-" << std::hex << entropy();
    fs::path candidate = fs::temp_directory_path() / name.str();
    if (fs::create_directory(candidate)) {
      path_ = fs::canonical(candidate);
      return;
    }
  }
  throw std::runtime_error("cannot create a unique temporary folder");
}

TempDir::~TempDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

fs::path TempDir::write(const std::string& name, const std::string& text) const {
  const fs::path target = path_ / name;
  fs::create_directories(target.parent_path());
  std::ofstream file(target, std::ios::binary);
  file << text;
  if (!file) throw std::runtime_error("cannot write " + target.string());
  return target;
}

Outcome run_ironlaw(const std::vector<std::string>& args, const fs::path& cwd, std::uint64_t memory_limit_bytes,
                    std::uint64_t file_size_limit_bytes) {
  const fs::path out_path = capture_file("stdout");
  const fs::path err_path = capture_file("stderr");
  CommandLine command(args);
  char* const* argv = command.argv();
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!(kAddressSanitizer && memory_limit_bytes > 0 && std::string_view(*e).substr(0, 13) == "ASAN_OPTIONS=")) {
      environment.emplace_back(*e);
    }
  }
  if (kAddressSanitizer && memory_limit_bytes > 0) {
    const char* options = std::getenv("ASAN_OPTIONS");
    environment.push_back("ASAN_OPTIONS=" + std::string(options != nullptr ? options : "") +
                          ":hard_rss_limit_mb=" + std::to_string(memory_limit_bytes >> 20));
  }
  std::vector<char*> envp;
  for (auto& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  const rlimit address_space{static_cast<rlim_t>(memory_limit_bytes), static_cast<rlim_t>(memory_limit_bytes)};
  const bool limit_address_space = !kAddressSanitizer && memory_limit_bytes > 0;
  const rlimit file_size{static_cast<rlim_t>(file_size_limit_bytes), static_cast<rlim_t>(file_size_limit_bytes)};

  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_TRUNC);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_TRUNC);
    if (in < 0 || out < 0 || err < 0 || ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::dup2(in, STDIN_FILENO);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    if (limit_address_space && ::setrlimit(RLIMIT_AS, &address_space) != 0) ::_exit(126);
    if (file_size_limit_bytes > 0 && ::setrlimit(RLIMIT_FSIZE, &file_size) != 0) ::_exit(126);
    ::execve(argv[0], argv, envp.data());
    ::_exit(127);
  }
  Outcome outcome;
  wait_for(pid, outcome);
  outcome.out = read_file(out_path);
  outcome.err = read_file(err_path);
  std::error_code ignored;
  fs::remove(out_path, ignored);
  fs::remove(err_path, ignored);
  return outcome;
}

Outcome run_ironlaw_on_terminal(const std::vector<std::string>& args, const fs::path& cwd) {
  const fs::path out_path = capture_file("stdout");
  CommandLine command(args);
  char* const* argv = command.argv();
  int master = -1, slave = -1;
  if (::openpty(&master, &slave, nullptr, nullptr, nullptr) != 0)
    throw std::system_error(errno, std::generic_category(), "openpty");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_TRUNC);
    if (in < 0 || out < 0 || ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::dup2(in, STDIN_FILENO);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(slave, STDERR_FILENO);
    ::close(master);
    ::close(slave);
    ::execv(argv[0], argv);
    ::_exit(127);
  }
  ::close(slave);
  // Drain the master while the child runs (a full terminal buffer would block it); Linux
  // answers EIO once the last slave descriptor is closed, i.e. when the child has ended.
  Outcome outcome;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n > 0) {
      outcome.err.append(buf, static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  ::close(master);
  wait_for(pid, outcome);
  outcome.out = read_file(out_path);
  std::error_code ignored;
  fs::remove(out_path, ignored);
  return outcome;
}

std::string repo_path(const std::string& relative) { return (fs::path(IRONLAW_SOURCE_DIR) / relative).string(); }

std::string read_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return "";
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<std::string> entries_of(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  std::string word;
  while (in >> word) words.push_back(word);
  return words;
}

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  for (char c : line) {
    if (c == ',') {
      fields.push_back(field);
      field.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  fields.push_back(field);
  return fields;
}

double number(const std::string& text) {
  if (text.empty()) throw std::invalid_argument("not a number: \"\"");
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) throw std::invalid_argument("not a number: \"" + text + "\"");
  return value;
}

bool is_integer(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string replace_once(const std::string& text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos || text.find(from, at + 1) != std::string::npos)
    throw std::invalid_argument("replace_once: \"" + from + "\" does not occur exactly once");
  std::string result = text;
  result.replace(at, from.size(), to);
  return result;
}

Position position_of(const std::string& text, const std::string& context, std::size_t offset) {
  const auto at = text.find(context);
  if (at == std::string::npos || text.find(context, at + 1) != std::string::npos)
    throw std::invalid_argument("position_of: \"" + context + "\" does not occur exactly once");
  const std::size_t target = at + offset;
  Position p{1, 1};
  for (std::size_t i = 0; i < target; ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

std::string diagnostic_prefix(const fs::path& file, Position at, const std::string& key) {
  return file.string() + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": " + key + ": ";
}

std::string tiny_scenario(const fs::path& output_path) {
  return "name: tiny-cli\n"
         "seed: 1\n"
         "model: " + repo_path("models/gpt2-124m.yaml") + "\n"
         "cluster:\n"
         "  topology: " + repo_path("topologies/dgx-h100-leaf-spine.yaml") + "\n"
         "  nodes: 1\n"
         "parallel:\n"
         "  dp: auto\n"
         "  zero: 0\n"
         "  microbatch_size: 16\n"
         "training:\n"
         "  sequence_length: 1024\n"
         "  global_batch_tokens: 128 Ki\n"
         "  tokens: 10 G\n"
         "  precision: bf16\n"
         "  optimizer: adam\n"
         "  activation_checkpointing: none\n"
         "  flash_attention: true\n"
         "run:\n"
         "  steps: 1\n"
         "output:\n"
         "  path: " + output_path.string() + "\n"
         "  trace: step\n";
}

}  // namespace ironlaw::cli_test
