// Safe outputs (issue 7): only regular files are created or replaced; a device, FIFO, socket,
// folder or symbolic link at the target is refused before it is touched, with IoError naming
// the path; temporaries of dead processes are removed, those of live ones kept.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "output/atomic_file.hpp"
#include "output/h5_writer.hpp"

namespace fs = std::filesystem;
using ironlaw::IoError;
using namespace ironlaw::output;

namespace {

struct Folder {
  fs::path path = fs::temp_directory_path() / ("ironlaw-atomic-" + std::to_string(::getpid()));
  Folder() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Folder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path file(const std::string& name, const std::string& text = "x") const {
    std::ofstream(path / name) << text;
    return path / name;
  }
};

bool still_fifo(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

std::string message_of(const fs::path& target) {
  try {
    probe_output(target);
  } catch (const IoError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("A FIFO, a symbolic link or a folder at the output is refused and left as it was") {
  Folder dir;
  const fs::path fifo = dir.path / "out.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(message_of(fifo) == "cannot write output \"" + fifo.string() + "\": it is a FIFO; only regular files are written");
  CHECK_THROWS_AS(H5Writer(fifo), IoError);
  CHECK(still_fifo(fifo));

  const fs::path link = dir.path / "link.h5";
  fs::create_symlink(dir.path / "elsewhere.h5", link);
  CHECK(message_of(link).find("it is a symbolic link") != std::string::npos);
  CHECK(fs::is_symlink(link));

  CHECK(message_of(dir.path).find("it is a directory") != std::string::npos);
  CHECK(message_of("/dev/null").find("it is a character device") != std::string::npos);
  CHECK(message_of("").find("empty") != std::string::npos);
}

TEST_CASE("commit_rename checks the target again and never replaces a FIFO that appeared meanwhile") {
  Folder dir;
  const fs::path target = dir.path / "out.h5";
  const fs::path temporary = dir.file("out.h5.tmp-1-1");
  REQUIRE(::mkfifo(target.c_str(), 0600) == 0);
  CHECK_THROWS_AS(commit_rename(temporary, target), IoError);
  CHECK(still_fifo(target));
  CHECK_FALSE(fs::exists(temporary));  // discarded
}

TEST_CASE("An output under a regular file or in a missing folder is an IoError naming the path") {
  Folder dir;
  dir.file("plain");
  CHECK(message_of(dir.path / "plain" / "out.h5").find("is not a directory") != std::string::npos);
  CHECK(message_of(dir.path / "missing" / "out.h5").find("does not exist") != std::string::npos);
  CHECK(fs::is_regular_file(dir.path / "plain"));
}

TEST_CASE("Stale temporaries of dead processes are removed, others kept") {
  Folder dir;
  // pid_max is at most 2^22 on Linux: 4194311 cannot be a live process.
  const fs::path dead = dir.file("a.h5.tmp-4194311-7");
  const fs::path live = dir.file("a.h5.tmp-" + std::to_string(::getpid()) + "-7");
  const fs::path init = dir.file("a.h5.tmp-1-7");  // pid 1 always exists
  const fs::path not_ours = dir.file("a.h5.tmp-x-7");
  const fs::path plain = dir.file("a.h5");
  CHECK(remove_stale_temporaries(dir.path) == 1);
  CHECK_FALSE(fs::exists(dead));
  CHECK(fs::exists(live));
  CHECK(fs::exists(init));
  CHECK(fs::exists(not_ours));
  CHECK(fs::exists(plain));
}

TEST_CASE("the temporary of a target with a 255-byte name fits NAME_MAX and differs from its neighbour's", "[output][hostile]") {
  // NAME_MAX on Linux file systems is 255 bytes: the target is valid, "<target>.tmp-<pid>-<n>"
  // would not be (ENAMETOOLONG, so a valid output was refused).
  const std::string long_name(250, 'y');
  const auto a = ironlaw::output::temporary_sibling("dir/" + long_name + ".h5");
  const auto b = ironlaw::output::temporary_sibling("dir/" + long_name + ".jsn");
  CHECK(a.parent_path() == "dir");
  CHECK(a.filename().string().size() <= 255);
  CHECK(b.filename().string().size() <= 255);
  CHECK(a != b);  // the same 230-byte prefix, told apart by the hash of the whole name
  const std::string tail = ".tmp-" + std::to_string(::getpid()) + "-";
  CHECK(a.filename().string().find(tail) != std::string::npos);
  // A short name keeps the plain form.
  CHECK(ironlaw::output::temporary_sibling("dir/out.h5").filename().string().rfind("out.h5" + tail, 0) == 0);
}
