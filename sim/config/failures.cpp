#include "config/failures.hpp"

#include <filesystem>

#include "config/reader.hpp"

namespace ironlaw::config {

const std::vector<std::string> kFailureCauses{
    "gpu",          "hbm",         "sram",        "gpu_system_processor", "thermal", "nic",
    "host",         "switch_cable", "software",   "nccl_hang",            "sdc",     "ssd",
    "power_supply", "chassis",     "io_board",    "dependency",           "cpu",     "host_memory",
    "planned",      "unattributed"};

namespace detail {

namespace {

constexpr double kSecondsPerDay = 86400.0;

void parse_cause(Section s, const std::string& name, double observed_node_s, FailureCauseSpec& c) {
  c.name = name;
  const Rule sourced{.sign = Sign::non_negative, .required = false, .form = Form::sourced};
  double count = 0, per_1000 = 0;
  const bool has_count = s.number("count", count, Dimension::count, sourced);
  const bool has_rate = s.number("per_1000_node_days", per_1000, Dimension::count, sourced);
  const bool count_given = s.has("count"), rate_given = s.has("per_1000_node_days");
  if (count_given && rate_given) {
    s.state().fail(s.full("count"), "give count or per_1000_node_days, not both");
  } else if (!count_given && !rate_given) {
    s.state().error(s.state().where(s.prefix()), s.prefix(), "missing required key: count or per_1000_node_days");
    s.state().bad.insert(s.prefix());
  } else if (has_count) {
    if (observed_node_s > 0) {
      c.rate_per_node_s = count / observed_node_s;
    } else {
      s.state().report(s.full("count"), "a count needs observation.nodes and observation.duration");
    }
  } else if (has_rate) {
    c.rate_per_node_s = per_1000 / 1000.0 / kSecondsPerDay;
  }
  s.choice("detection", c.detection, {"crash", "hang", "planned"});
  s.choice("distribution", c.distribution, {"exponential", "weibull"});
  if (s.number("shape", c.weibull_shape, Dimension::count, Rule{.sign = Sign::positive})) {
    if (c.distribution != "weibull") s.state().report(s.full("shape"), "only a weibull distribution has a shape");
  }
  s.finish();
}

}  // namespace

void parse_failures(Section s, FailureRatesSpec& out) {
  out.file = s.file();
  out.name = std::filesystem::path(s.file()).stem().string();
  s.text("name", out.name);
  s.text("source", out.source, Rule{.required = true});
  double nodes = 0, duration = 0;
  {
    Section obs = s.section("observation");
    const Rule sourced{.sign = Sign::positive, .required = false, .form = Form::sourced};
    obs.number("nodes", nodes, Dimension::count, sourced);
    obs.number("duration", duration, Dimension::time, sourced);
    obs.finish();
  }
  Section causes = s.section("causes", Rule{.required = true});
  if (s.state().collecting) {  // `ironlaw keys`: every cause takes the same keys
    FailureCauseSpec c;
    parse_cause(causes.section(kFailureCausePlaceholder), kFailureCausePlaceholder, 0, c);
  }
  for (const auto& name : kFailureCauses) {
    if (!causes.has(name)) continue;
    FailureCauseSpec c;
    parse_cause(causes.section(name), name, nodes * duration, c);
    out.causes.push_back(c);
  }
  causes.finish();
  s.finish();
}

LoadState collect_failures_schema() {
  LoadState state;
  state.collecting = true;
  FailureRatesSpec scratch;
  parse_failures(Section(state, YAML::Node(), "", "failures", SourceLoc{}, false), scratch);
  return state;
}

}  // namespace detail

FailureRatesSpec load_failures(const std::string& path) {
  detail::LoadState st;
  st.root_file = path;
  FailureRatesSpec spec;
  try {
    auto doc = detail::load_document(path, st, SourceLoc{path, 0, 0}, "");
    if (doc) detail::parse_failures(detail::Section(st, doc->root, path, "", SourceLoc{path, 1, 1}, false), spec);
  } catch (const YAML::Exception& e) {
    const int line = e.mark.line < 0 ? 0 : e.mark.line + 1;
    throw InputError(SourceLoc{path, line, e.mark.column + 1}, "", "cannot read the YAML: " + e.msg);
  }
  if (!st.diagnostics.empty()) throw InputError(std::move(st.diagnostics));
  return spec;
}

}  // namespace ironlaw::config
