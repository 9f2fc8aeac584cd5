#include "core/records.hpp"

#include <algorithm>

namespace ironlaw {

const char* event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::forward: return "forward";
    case EventKind::backward: return "backward";
    case EventKind::recompute: return "recompute";
    case EventKind::optimizer: return "optimizer";
    case EventKind::collective: return "collective";
    case EventKind::flow: return "flow";
    case EventKind::data: return "data";
    case EventKind::stall: return "stall";
  }
  return "unknown";
}

namespace {
std::uint32_t intern(std::vector<std::string>& table, const std::string& name) {
  auto it = std::find(table.begin(), table.end(), name);
  if (it != table.end()) return static_cast<std::uint32_t>(it - table.begin());
  table.push_back(name);
  return static_cast<std::uint32_t>(table.size() - 1);
}
}  // namespace

std::uint32_t MemorySink::intern_resource(const std::string& name) { return intern(resources, name); }
std::uint32_t MemorySink::intern_name(const std::string& name) { return intern(names, name); }

}  // namespace ironlaw
