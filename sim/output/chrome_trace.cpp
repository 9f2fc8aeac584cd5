#include "output/chrome_trace.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <algorithm>
#include <cstring>
#include <iterator>
#include <set>
#include <stdexcept>
#include <variant>

#include "core/error.hpp"
#include "output/atomic_file.hpp"
#include "output/h5_reader.hpp"
#include "output/h5_schema.hpp"

namespace ironlaw::output {

namespace {

void write_json_string(std::ostream& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.put('"');
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out << "\\\""; break;
      case '\\': out << "\\\\"; break;
      case '\n': out << "\\n"; break;
      case '\r': out << "\\r"; break;
      case '\t': out << "\\t"; break;
      default:
        if (c < 0x20) {
          out << "\\u00" << kHex[c >> 4] << kHex[c & 0xF];
        } else {
          out.put(ch);
        }
    }
  }
  out.put('"');
}

/// Shortest round-trip text of a finite double; JSON has no inf/nan, so those become null.
void write_json_number(std::ostream& out, double value) {
  if (!std::isfinite(value)) {
    out << "null";
    return;
  }
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.write(buffer, result.ptr - buffer);
}

std::int64_t pid_of(std::int32_t rank) { return rank < 0 ? kFabricPid : rank; }

const std::string& lookup(const std::vector<std::string>& table, std::uint32_t index,
                          const char* what) {
  if (index >= table.size()) {
    throw std::runtime_error(std::string("chrome trace: event refers to ") + what + " index " +
                             std::to_string(index) + ", table has " +
                             std::to_string(table.size()) + " entries");
  }
  return table[index];
}

}  // namespace

std::string format_microseconds(std::int64_t ns) {
  const bool negative = ns < 0;
  // Work on the magnitude as unsigned so INT64_MIN does not overflow.
  const std::uint64_t magnitude =
      negative ? std::uint64_t{0} - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  const std::uint64_t fraction = magnitude % 1000;
  std::string out = negative ? "-" : "";
  out += std::to_string(magnitude / 1000);
  out += '.';
  out += static_cast<char>('0' + fraction / 100);
  out += static_cast<char>('0' + fraction / 10 % 10);
  out += static_cast<char>('0' + fraction % 10);
  return out;
}

ChromeTraceWriter::ChromeTraceWriter(std::filesystem::path target) : target_(std::move(target)) {
  check_output_location(target_);
  temporary_ = temporary_sibling(target_);
  out_.open(temporary_, std::ios::binary | std::ios::trunc);
  if (!out_) {
    throw IoError(target_.string() + ": cannot create Chrome trace file '" + temporary_.string() +
                  "': " + std::strerror(errno));
  }
  out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
}

ChromeTraceWriter::~ChromeTraceWriter() {
  if (!committed_) {
    out_.close();
    discard_temporary(temporary_);
  }
}

void ChromeTraceWriter::check_stream(std::string_view what) {
  if (!out_) {
    throw IoError(target_.string() + ": cannot " + std::string(what) + " Chrome trace file '" +
                  temporary_.string() + "': " + std::strerror(errno));
  }
}

void ChromeTraceWriter::begin_record() {
  out_ << (first_ ? "\n" : ",\n");
  first_ = false;
}

void ChromeTraceWriter::add(const EventRecord& record, std::string_view resource,
                            std::string_view name) {
  if (committed_) throw std::runtime_error(target_.string() + ": Chrome trace already committed");
  const std::int64_t pid = pid_of(record.rank);
  if (processes_seen_.insert(pid).second) {
    begin_record();
    out_ << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << pid
         << ",\"tid\":0,\"args\":{\"name\":";
    write_json_string(out_, record.rank < 0 ? std::string("fabric")
                                            : "rank " + std::to_string(record.rank));
    out_ << "}}";
    begin_record();
    out_ << "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" << pid
         << ",\"tid\":0,\"args\":{\"sort_index\":" << pid << "}}";
  }
  const std::uint64_t thread_key =
      (static_cast<std::uint64_t>(static_cast<std::uint32_t>(pid)) << 32) | record.resource;
  if (threads_seen_.insert(thread_key).second) {
    begin_record();
    out_ << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << pid
         << ",\"tid\":" << record.resource << ",\"args\":{\"name\":";
    write_json_string(out_, resource);
    out_ << "}}";
  }
  begin_record();
  out_ << "{\"ph\":\"X\",\"name\":";
  write_json_string(out_, name);
  out_ << ",\"cat\":\"" << event_kind_name(record.kind) << "\",\"pid\":" << pid
       << ",\"tid\":" << record.resource << ",\"ts\":" << format_microseconds(record.start_ns)
       << ",\"dur\":" << format_microseconds(record.end_ns - record.start_ns)
       << ",\"args\":{\"flops\":";
  write_json_number(out_, record.flops);
  out_ << ",\"bytes\":";
  write_json_number(out_, record.bytes);
  out_ << "}}";
}

void ChromeTraceWriter::add_counter(std::int64_t pid, std::string_view process_name, std::string_view track,
                                    std::int64_t ts_ns, double value) {
  if (committed_) throw std::runtime_error(target_.string() + ": Chrome trace already committed");
  if (processes_seen_.insert(pid).second) {
    begin_record();
    out_ << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << pid << ",\"tid\":0,\"args\":{\"name\":";
    write_json_string(out_, process_name);
    out_ << "}}";
  }
  begin_record();
  out_ << "{\"ph\":\"C\",\"name\":";
  write_json_string(out_, track);
  out_ << ",\"pid\":" << pid << ",\"ts\":" << format_microseconds(ts_ns) << ",\"args\":{\"busy share\":";
  write_json_number(out_, value);
  out_ << "}}";
}

void ChromeTraceWriter::commit() {
  if (committed_) throw std::runtime_error(target_.string() + ": Chrome trace already committed");
  out_ << "\n]}\n";
  out_.flush();
  check_stream("write");
  out_.close();
  check_stream("close");
  commit_rename(temporary_, target_);
  committed_ = true;
}

void write_chrome_trace(const std::filesystem::path& target, const std::vector<EventRecord>& events,
                        const std::vector<std::string>& resources,
                        const std::vector<std::string>& names) {
  ChromeTraceWriter writer(target);
  for (const EventRecord& e : events) {
    writer.add(e, lookup(resources, e.resource, "resource"), lookup(names, e.name, "name"));
  }
  writer.commit();
}

std::string format_rank_set(const std::vector<int>& ranks) {
  if (ranks.empty()) return "none";
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int> recorded_ranks(const H5Reader& reader) {
  std::set<int> seen;
  if (reader.has("/events")) {
    reader.for_each_event_batch([&](const std::vector<EventRecord>& batch) {
      for (const EventRecord& e : batch)
        if (e.rank >= 0) seen.insert(e.rank);
    });
  }
  return {seen.begin(), seen.end()};
}

void export_chrome_trace(const H5Reader& reader, const std::filesystem::path& target, const std::vector<int>& ranks,
                         const std::string& key, const std::string& file_label) {
  const std::string file = file_label.empty() ? reader.path().string() : file_label;
  if (!ranks.empty()) {
    const std::vector<int> present = recorded_ranks(reader);
    std::vector<int> missing;
    std::set_difference(ranks.begin(), ranks.end(), present.begin(), present.end(), std::back_inserter(missing));
    if (!missing.empty()) {
      throw InputError({}, key,
                       "rank(s) " + format_rank_set(missing) + " have no events in " + file +
                           ", which holds rank(s) " + format_rank_set(present) +
                           " (run.detail: symmetric simulates one data-parallel replica op by op, run.detail: "
                           "full every rank; --trace op or flow records them)");
    }
  }
  const auto chosen = [&](std::int32_t rank) {
    return rank < 0 || ranks.empty() || std::binary_search(ranks.begin(), ranks.end(), static_cast<int>(rank));
  };
  const bool has_events = reader.has("/events");
  const std::vector<std::string> resources =
      has_events ? reader.event_resources() : std::vector<std::string>{};
  const std::vector<std::string> names =
      has_events ? reader.event_names() : std::vector<std::string>{};
  ChromeTraceWriter writer(target);
  reader.for_each_event_batch([&](const std::vector<EventRecord>& batch) {
    for (const EventRecord& e : batch) {
      if (!chosen(e.rank)) continue;
      writer.add(e, lookup(resources, e.resource, "resource"), lookup(names, e.name, "name"));
    }
  });
  if (reader.has(schema::kLinkSeries) && reader.has(schema::kLinkSeriesNames)) {
    // Over time: one counter value per time bin of /link_series (the busiest links first, as
    // the file lists them), held until the next bin; 0 after the last.
    const std::vector<std::string> link_names = reader.link_series_names();
    const std::vector<TableColumn> columns = reader.link_series();
    const auto field = [&](const char* name) -> const TableColumn* {
      for (const auto& c : columns)
        if (c.name == name) return &c;
      return nullptr;
    };
    const auto* link = field("link") ? std::get_if<std::vector<std::int64_t>>(&field("link")->values) : nullptr;
    const auto* start = field("start_s") ? std::get_if<std::vector<double>>(&field("start_s")->values) : nullptr;
    const auto* end = field("end_s") ? std::get_if<std::vector<double>>(&field("end_s")->values) : nullptr;
    const auto* share = field("busy_fraction") ? std::get_if<std::vector<double>>(&field("busy_fraction")->values) : nullptr;
    if (!link || !start || !end || !share || start->size() != link->size() || end->size() != link->size() ||
        share->size() != link->size()) {
      throw std::runtime_error(file + ": /link_series lacks link, start_s, end_s or busy_fraction");
    }
    const auto ns = [](double s) { return static_cast<std::int64_t>(std::llround(s * 1e9)); };
    for (std::size_t r = 0; r < link->size(); ++r) {
      const std::int64_t l = (*link)[r];
      if (l < 0 || static_cast<std::size_t>(l) >= link_names.size())
        throw std::runtime_error(file + ": /link_series names a link /link_series_names lacks");
      if (static_cast<std::size_t>(l) >= kMaxLinkCounters) continue;
      const std::string& name = link_names[static_cast<std::size_t>(l)];
      writer.add_counter(kLinksPid, "links: busy share per time bin", name, ns((*start)[r]), std::clamp((*share)[r], 0.0, 1.0));
      const bool last = r + 1 == link->size() || (*link)[r + 1] != l;
      if (last) writer.add_counter(kLinksPid, "links: busy share per time bin", name, ns((*end)[r]), 0.0);
    }
  } else if (reader.has("/links") && reader.has("/steps")) {
    const std::vector<StepRecord> steps = reader.steps();
    const std::vector<std::string> link_names = reader.link_names();
    const std::vector<TableColumn> columns = reader.links();
    const auto* busy = columns.size() >= 2 ? std::get_if<std::vector<double>>(&columns[1].values) : nullptr;
    if (!steps.empty() && busy != nullptr && busy->size() == link_names.size()) {
      const std::int64_t start = steps.front().start_ns, end = steps.back().end_ns;
      const double span_s = static_cast<double>(end - start) * 1e-9;
      std::vector<std::size_t> order(link_names.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return (*busy)[a] > (*busy)[b]; });
      order.resize(std::min(order.size(), kMaxLinkCounters));
      for (const std::size_t i : order) {
        const double share = span_s > 0 ? std::clamp((*busy)[i] / span_s, 0.0, 1.0) : 0.0;
        writer.add_counter(kLinksPid, "links: busy share (whole-run mean)", link_names[i], start, share);
        writer.add_counter(kLinksPid, "links: busy share (whole-run mean)", link_names[i], end, share);
      }
    }
  }
  writer.commit();
}

}  // namespace ironlaw::output
