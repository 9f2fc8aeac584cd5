#include "output/chrome_trace.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "core/error.hpp"
#include "output/atomic_file.hpp"
#include "output/h5_reader.hpp"

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

void export_chrome_trace(const H5Reader& reader, const std::filesystem::path& target) {
  const bool has_events = reader.has("/events");
  const std::vector<std::string> resources =
      has_events ? reader.event_resources() : std::vector<std::string>{};
  const std::vector<std::string> names =
      has_events ? reader.event_names() : std::vector<std::string>{};
  ChromeTraceWriter writer(target);
  reader.for_each_event_batch([&](const std::vector<EventRecord>& batch) {
    for (const EventRecord& e : batch) {
      writer.add(e, lookup(resources, e.resource, "resource"), lookup(names, e.name, "name"));
    }
  });
  writer.commit();
}

}  // namespace ironlaw::output
