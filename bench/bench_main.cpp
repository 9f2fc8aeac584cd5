// ironlaw_bench: runs the benchmarks registered in bench/*.cpp (see bench.hpp).
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "bench.hpp"

namespace ironlaw::bench {

std::vector<Benchmark>& registry() {
  static std::vector<Benchmark> benchmarks;
  return benchmarks;
}

void report(const char* name, double value, const char* unit) {
  std::printf("%s: %.12g %s\n", name, value, unit);
  std::fflush(stdout);
}

}  // namespace ironlaw::bench

int main(int argc, char** argv) {
  using ironlaw::bench::Benchmark;
  std::vector<Benchmark> all = ironlaw::bench::registry();
  std::sort(all.begin(), all.end(),
            [](const Benchmark& a, const Benchmark& b) { return std::strcmp(a.name, b.name) < 0; });
  const bool list = argc > 1 && std::strcmp(argv[1], "--list") == 0;
  const char* filter = argc > 1 && !list ? argv[1] : "";
  int ran = 0;
  for (const Benchmark& b : all) {
    if (std::strstr(b.name, filter) == nullptr) continue;
    if (list) {
      std::printf("%s\n", b.name);
    } else {
      b.fn();
    }
    ++ran;
  }
  if (ran == 0) {
    std::fprintf(stderr, "ironlaw_bench: no benchmark matches \"%s\" (try --list)\n", filter);
    return 1;
  }
  return 0;
}
