#pragma once
/// \file The on-disk layout shared by H5Writer and H5Reader (documented for users in
/// outputs/README.md): packed row formats of /events and /steps, their HDF5 types and units,
/// and small type helpers. Internal to the output layer.
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/records.hpp"
#include "output/h5_handle.hpp"

namespace ironlaw::output::schema {

/// Dataset and group names (absolute paths).
inline constexpr const char* kScenario = "/scenario";
inline constexpr const char* kSummary = "/summary";
inline constexpr const char* kSteps = "/steps";
inline constexpr const char* kEvents = "/events";
inline constexpr const char* kEventNames = "/event_names";
inline constexpr const char* kEventResources = "/event_resources";
inline constexpr const char* kRun = "/run";
inline constexpr const char* kSweep = "/sweep";
inline constexpr const char* kLinks = "/links";
inline constexpr const char* kLinkNames = "/link_names";
/// Link utilisation over time (run::LinkSeries): one row per (link, bin), and the links' names.
inline constexpr const char* kLinkSeries = "/link_series";
inline constexpr const char* kLinkSeriesNames = "/link_series_names";
/// Attribute holding one unit string per compound field, in field order.
inline constexpr const char* kUnitsAttribute = "units";
/// One sentence per field of /summary and /sweep (metric_description), in field order.
inline constexpr const char* kDescriptionsAttribute = "descriptions";

/// One field of a packed row: name, byte offset in the row, unit.
struct Field {
  const char* name;
  std::size_t offset;
  const char* unit;
};

/// /events rows: rank i32, resource u32, kind enum(u8), name u32, start_ns i64, end_ns i64,
/// flops f64, bytes f64; packed (no padding), little-endian: 45 bytes.
inline constexpr std::size_t kEventRowBytes = 45;
inline constexpr std::array<Field, 8> kEventFields{{
    {"rank", 0, ""},
    {"resource", 4, ""},
    {"kind", 8, ""},
    {"name", 9, ""},
    {"start_ns", 13, "ns"},
    {"end_ns", 21, "ns"},
    {"flops", 29, "FLOP"},
    {"bytes", 37, "B"},
}};
/// Writes `record` as one packed row at `out` (kEventRowBytes bytes).
void pack_event(const EventRecord& record, unsigned char* out);
/// Reads one packed row.
EventRecord unpack_event(const unsigned char* in);
/// The HDF5 enum of EventKind (base uint8, names of event_kind_name).
H5Handle make_kind_type(std::string_view file);
/// The packed compound type of an /events row.
H5Handle make_event_type(std::string_view file);

/// /steps rows: step, start_ns, end_ns as i64, then the eight doubles of StepRecord in
/// declaration order: 88 bytes.
inline constexpr std::size_t kStepRowBytes = 88;
inline constexpr std::array<Field, 11> kStepFields{{
    {"step", 0, ""},
    {"start_ns", 8, "ns"},
    {"end_ns", 16, "ns"},
    {"compute_s", 24, "s"},
    {"exposed_comm_s", 32, "s"},
    {"bubble_s", 40, "s"},
    {"data_stall_s", 48, "s"},
    {"other_s", 56, "s"},
    {"model_flops", 64, "FLOP"},
    {"hardware_flops", 72, "FLOP"},
    {"tokens", 80, "tokens"},
}};
void pack_step(const StepRecord& record, unsigned char* out);
StepRecord unpack_step(const unsigned char* in);
H5Handle make_step_type(std::string_view file);

/// A fixed-length UTF-8 string type, NUL-padded, of `width` bytes (at least 1).
H5Handle make_string_type(std::size_t width, std::string_view file);

/// The units of `fields`, in order.
template <std::size_t N>
std::vector<std::string> units_of(const std::array<Field, N>& fields) {
  std::vector<std::string> units;
  for (const Field& f : fields) units.emplace_back(f.unit);
  return units;
}

}  // namespace ironlaw::output::schema
