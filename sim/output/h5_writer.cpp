#include "output/h5_writer.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>

#include "output/atomic_file.hpp"
#include "output/h5_schema.hpp"

namespace ironlaw::output {

namespace {

H5Handle scalar_space(std::string_view file) {
  return space_handle(H5Screate(H5S_SCALAR), file, "cannot create a dataspace");
}

H5Handle vector_space(hsize_t rows, std::string_view file) {
  return space_handle(H5Screate_simple(1, &rows, nullptr), file, "cannot create a dataspace");
}

void write_attribute(hid_t object, const char* name, hid_t type, hid_t space, const void* data,
                     std::string_view file) {
  const std::string what = std::string("cannot write attribute '") + name + "'";
  const H5Handle attribute =
      attribute_handle(H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT), file, what);
  check_h5(H5Awrite(attribute.get(), type, data), file, what);
}

void write_string_attribute(hid_t object, const char* name, std::string_view value,
                            std::string_view file) {
  const H5Handle type = schema::make_string_type(value.size(), file);
  std::string padded(std::max<std::size_t>(value.size(), 1), '\0');
  std::copy(value.begin(), value.end(), padded.begin());
  write_attribute(object, name, type.get(), scalar_space(file).get(), padded.data(), file);
}

/// Packs strings into one NUL-padded block of `width` bytes each.
std::vector<char> pack_strings(const std::vector<std::string>& values, std::size_t width) {
  std::vector<char> block(std::max<std::size_t>(values.size(), 1) * width, '\0');
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::copy(values[i].begin(), values[i].end(), block.begin() + static_cast<long>(i * width));
  }
  return block;
}

std::size_t max_length(const std::vector<std::string>& values) {
  std::size_t width = 1;
  for (const auto& v : values) width = std::max(width, v.size());
  return width;
}

void write_strings_attribute(hid_t object, const char* name,
                             const std::vector<std::string>& values, std::string_view file) {
  const std::size_t width = max_length(values);
  const H5Handle type = schema::make_string_type(width, file);
  const std::vector<char> block = pack_strings(values, width);
  write_attribute(object, name, type.get(), vector_space(values.size(), file).get(), block.data(),
                  file);
}

void require_unique(const std::vector<std::string>& names, std::string_view file,
                    std::string_view what) {
  std::set<std::string> seen;
  for (const auto& n : names) {
    if (n.empty()) {
      throw std::runtime_error(std::string(file) + ": " + std::string(what) + ": empty name");
    }
    if (!seen.insert(n).second) {
      throw std::runtime_error(std::string(file) + ": " + std::string(what) + ": duplicate name '" +
                               n + "'");
    }
  }
}

/// A packed compound of 8-byte numeric fields named `names` with types `types`, in order.
H5Handle numeric_row_type(const std::vector<std::string>& names, const std::vector<hid_t>& types,
                          std::string_view file) {
  H5Handle row = type_handle(H5Tcreate(H5T_COMPOUND, 8 * names.size()), file,
                             "cannot create a row type");
  for (std::size_t i = 0; i < names.size(); ++i) {
    check_h5(H5Tinsert(row.get(), names[i].c_str(), 8 * i, types[i]), file,
             "cannot add field '" + names[i] + "' to a row type");
  }
  return row;
}

}  // namespace

H5Writer::H5Writer(std::filesystem::path target, H5WriterOptions options)
    : target_(std::move(target)), label_(target_.string()), options_(options) {
  silence_hdf5_errors();
  if (options_.event_chunk_rows == 0 || options_.step_chunk_rows == 0 ||
      options_.deflate_level > 9) {
    throw std::runtime_error(label_ + ": invalid HDF5 writer options");
  }
  check_output_location(target_);
  temporary_ = temporary_sibling(target_);
  event_buffer_.resize(options_.event_chunk_rows * schema::kEventRowBytes);
  step_buffer_.resize(options_.step_chunk_rows * schema::kStepRowBytes);

  const H5Handle fcpl =
      plist_handle(H5Pcreate(H5P_FILE_CREATE), label_, "cannot create file properties");
  check_h5(H5Pset_obj_track_times(fcpl.get(), 0), label_, "cannot disable root timestamps");
  const H5Handle fapl =
      plist_handle(H5Pcreate(H5P_FILE_ACCESS), label_, "cannot create file access properties");
  check_h5(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_EARLIEST, H5F_LIBVER_V18), label_,
           "cannot set HDF5 format bounds");
  file_ = checked_handle(H5Fcreate(temporary_.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()),
                         H5Fclose, label_,
                         "cannot create output file '" + temporary_.string() + "'");
  try {
    write_string_attribute(file_.get(), "format", kFileFormat, label_);
    write_attribute(file_.get(), "format_version", H5T_STD_I64LE, scalar_space(label_).get(),
                    &kFileFormatVersion, label_);
    event_type_ = schema::make_event_type(label_);
    step_type_ = schema::make_step_type(label_);
  } catch (...) {
    close_all();
    throw;
  }
}

H5Writer::~H5Writer() {
  if (!committed_) close_all();
}

void H5Writer::close_all() noexcept {
  steps_.reset();
  events_.reset();
  step_type_.reset();
  event_type_.reset();
  file_.reset();
  if (!committed_ && !temporary_.empty()) discard_temporary(temporary_);
}

void H5Writer::require_open(std::string_view what) const {
  if (committed_ || !file_.valid()) {
    throw std::runtime_error(label_ + ": cannot " + std::string(what) +
                             ": the output file was already committed or closed");
  }
}

std::uint32_t H5Writer::intern_resource(const std::string& name) {
  const auto [it, inserted] =
      resource_index_.try_emplace(name, static_cast<std::uint32_t>(resources_.size()));
  if (inserted) resources_.push_back(name);
  return it->second;
}

std::uint32_t H5Writer::intern_name(const std::string& name) {
  const auto [it, inserted] =
      name_index_.try_emplace(name, static_cast<std::uint32_t>(names_.size()));
  if (inserted) names_.push_back(name);
  return it->second;
}

void H5Writer::on_event(const EventRecord& record) {
  require_open("add an event");
  schema::pack_event(record, event_buffer_.data() + event_rows_buffered_ * schema::kEventRowBytes);
  if (++event_rows_buffered_ == options_.event_chunk_rows) flush_events();
}

void H5Writer::on_step(const StepRecord& record) {
  require_open("add a step");
  schema::pack_step(record, step_buffer_.data() + step_rows_buffered_ * schema::kStepRowBytes);
  if (++step_rows_buffered_ == options_.step_chunk_rows) flush_steps();
}

H5Handle H5Writer::create_group_plist() const {
  H5Handle gcpl =
      plist_handle(H5Pcreate(H5P_GROUP_CREATE), label_, "cannot create group properties");
  check_h5(H5Pset_obj_track_times(gcpl.get(), 0), label_, "cannot disable group timestamps");
  return gcpl;
}

H5Handle H5Writer::create_dataset_plist(std::size_t chunk_rows, bool compress) const {
  H5Handle dcpl =
      plist_handle(H5Pcreate(H5P_DATASET_CREATE), label_, "cannot create dataset properties");
  check_h5(H5Pset_obj_track_times(dcpl.get(), 0), label_, "cannot disable dataset timestamps");
  if (chunk_rows > 0) {
    const hsize_t chunk = chunk_rows;
    check_h5(H5Pset_chunk(dcpl.get(), 1, &chunk), label_, "cannot set the chunk size");
    // Unwritten parts of the last chunk hold the (zero) fill value, never stale memory.
    check_h5(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_ALLOC), label_, "cannot set fill time");
    if (compress) {
      check_h5(H5Pset_shuffle(dcpl.get()), label_, "cannot enable the shuffle filter");
      check_h5(H5Pset_deflate(dcpl.get(), options_.deflate_level), label_,
               "cannot enable deflate compression");
    }
  }
  return dcpl;
}

H5Handle H5Writer::create_extendible(const char* path, hid_t type, std::size_t chunk_rows) {
  const hsize_t zero = 0;
  const hsize_t unlimited = H5S_UNLIMITED;
  const H5Handle space = space_handle(H5Screate_simple(1, &zero, &unlimited), label_,
                                      std::string("cannot create the dataspace of ") + path);
  const H5Handle dcpl = create_dataset_plist(chunk_rows, true);
  H5Handle dataset = dataset_handle(
      H5Dcreate2(file_.get(), path, type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
      label_, std::string("cannot create ") + path);
  const auto units = path == std::string_view(schema::kEvents)
                         ? schema::units_of(schema::kEventFields)
                         : schema::units_of(schema::kStepFields);
  write_strings_attribute(dataset.get(), schema::kUnitsAttribute, units, label_);
  return dataset;
}

void H5Writer::append_rows(hid_t dataset, hid_t type, std::uint64_t& written,
                           const unsigned char* rows, std::size_t count, const char* what) {
  const std::string failure = std::string("cannot append rows to ") + what;
  const hsize_t start = written;
  const hsize_t n = count;
  const hsize_t new_size = start + n;
  check_h5(H5Dset_extent(dataset, &new_size), label_, failure);
  const H5Handle file_space = space_handle(H5Dget_space(dataset), label_, failure);
  check_h5(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &n, nullptr),
           label_, failure);
  const H5Handle memory_space = vector_space(n, label_);
  check_h5(H5Dwrite(dataset, type, memory_space.get(), file_space.get(), H5P_DEFAULT, rows),
           label_, failure);
  written += count;
}

void H5Writer::flush_events() {
  silence_hdf5_errors();
  if (!events_.valid()) {
    events_ = create_extendible(schema::kEvents, event_type_.get(), options_.event_chunk_rows);
  }
  if (event_rows_buffered_ == 0) return;
  const std::size_t rows = event_rows_buffered_;
  event_rows_buffered_ = 0;  // a failed append is not retried: the file is abandoned
  append_rows(events_.get(), event_type_.get(), events_written_, event_buffer_.data(), rows,
              schema::kEvents);
}

void H5Writer::flush_steps() {
  silence_hdf5_errors();
  if (!steps_.valid()) {
    steps_ = create_extendible(schema::kSteps, step_type_.get(), options_.step_chunk_rows);
  }
  if (step_rows_buffered_ == 0) return;
  const std::size_t rows = step_rows_buffered_;
  step_rows_buffered_ = 0;
  append_rows(steps_.get(), step_type_.get(), steps_written_, step_buffer_.data(), rows,
              schema::kSteps);
}

void H5Writer::write_scenario(std::string_view yaml_text, std::uint64_t seed,
                              std::string_view name, std::string_view version) {
  require_open("write /scenario");
  silence_hdf5_errors();
  if (scenario_written_) throw std::runtime_error(label_ + ": /scenario written twice");
  const H5Handle type = schema::make_string_type(yaml_text.size(), label_);
  const H5Handle dcpl = create_dataset_plist(0, false);
  const H5Handle space = scalar_space(label_);
  const H5Handle dataset = dataset_handle(
      H5Dcreate2(file_.get(), schema::kScenario, type.get(), space.get(), H5P_DEFAULT, dcpl.get(),
                 H5P_DEFAULT),
      label_, "cannot create /scenario");
  std::string padded(std::max<std::size_t>(yaml_text.size(), 1), '\0');
  std::copy(yaml_text.begin(), yaml_text.end(), padded.begin());
  check_h5(H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, padded.data()),
           label_, "cannot write /scenario");
  write_attribute(dataset.get(), "seed", H5T_STD_U64LE, space.get(), &seed, label_);
  write_string_attribute(dataset.get(), "name", name, label_);
  write_string_attribute(dataset.get(), "version", version, label_);
  scenario_written_ = true;
}

void H5Writer::write_summary(const std::vector<std::pair<std::string, double>>& metrics) {
  std::vector<std::string> units;
  units.reserve(metrics.size());
  for (const auto& [name, value] : metrics) units.push_back(default_metric_unit(name));
  write_summary(metrics, units);
}

void H5Writer::write_summary(const std::vector<std::pair<std::string, double>>& metrics,
                             const std::vector<std::string>& units) {
  require_open("write /summary");
  silence_hdf5_errors();
  if (summary_written_) throw std::runtime_error(label_ + ": /summary written twice");
  if (metrics.empty()) throw std::runtime_error(label_ + ": /summary needs at least one metric");
  if (units.size() != metrics.size()) {
    throw std::runtime_error(label_ + ": /summary: " + std::to_string(metrics.size()) +
                             " metrics but " + std::to_string(units.size()) + " units");
  }
  std::vector<std::string> names;
  std::vector<double> values;
  for (const auto& [name, value] : metrics) {
    names.push_back(name);
    values.push_back(value);
  }
  require_unique(names, label_, "/summary");
  const H5Handle row = numeric_row_type(
      names, std::vector<hid_t>(names.size(), H5T_IEEE_F64LE), label_);
  const H5Handle dcpl = create_dataset_plist(0, false);
  const H5Handle space = vector_space(1, label_);
  const H5Handle dataset = dataset_handle(
      H5Dcreate2(file_.get(), schema::kSummary, row.get(), space.get(), H5P_DEFAULT, dcpl.get(),
                 H5P_DEFAULT),
      label_, "cannot create /summary");
  check_h5(H5Dwrite(dataset.get(), row.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
           label_, "cannot write /summary");
  write_strings_attribute(dataset.get(), schema::kUnitsAttribute, units, label_);
  std::vector<std::string> descriptions;
  for (const auto& name : names) descriptions.push_back(metric_description(name));
  write_strings_attribute(dataset.get(), schema::kDescriptionsAttribute, descriptions, label_);
  summary_written_ = true;
}

void H5Writer::write_table(const std::string& name, const std::vector<TableColumn>& columns) {
  require_open("write a /run table");
  silence_hdf5_errors();
  const std::string path = std::string(schema::kRun) + "/" + name;
  if (name.empty() || name.find('/') != std::string::npos || name == ".") {
    throw std::runtime_error(label_ + ": invalid /run table name '" + name + "'");
  }
  if (std::find(run_tables_.begin(), run_tables_.end(), name) != run_tables_.end()) {
    throw std::runtime_error(label_ + ": " + path + " written twice");
  }
  ensure_run_layout();
  write_numeric_table(path, columns);
  run_tables_.push_back(name);
}

void H5Writer::write_links(const std::vector<std::string>& names, const std::vector<double>& bytes,
                           const std::vector<double>& busy_s) {
  require_open("write /links");
  silence_hdf5_errors();
  if (bytes.size() != names.size() || busy_s.size() != names.size()) {
    throw std::runtime_error(label_ + ": /links: names, bytes and busy_s differ in length");
  }
  if (links_written_) throw std::runtime_error(label_ + ": /links written twice");
  write_string_table(schema::kLinkNames, names);
  write_numeric_table(schema::kLinks, {TableColumn{"bytes", "B", bytes}, TableColumn{"busy_s", "s", busy_s}});
  links_written_ = true;
}

void H5Writer::write_link_series(const std::vector<std::string>& names, const std::vector<double>& bandwidth,
                                 double start_s, double bin_s, double end_s,
                                 const std::vector<std::vector<double>>& busy) {
  require_open("write /link_series");
  silence_hdf5_errors();
  if (bandwidth.size() != names.size() || busy.size() != names.size()) {
    throw std::runtime_error(label_ + ": /link_series: names, bandwidth and busy differ in length");
  }
  if (link_series_written_) throw std::runtime_error(label_ + ": /link_series written twice");
  std::vector<std::int64_t> link, bin;
  std::vector<double> start, end, busy_s, fraction, capacity;
  for (std::size_t l = 0; l < names.size(); ++l) {
    if (busy[l].size() != busy.front().size()) throw std::runtime_error(label_ + ": /link_series: links differ in bins");
    for (std::size_t b = 0; b < busy[l].size(); ++b) {
      const double a = start_s + static_cast<double>(b) * bin_s;
      const double e = b + 1 == busy[l].size() ? end_s : a + bin_s;
      link.push_back(static_cast<std::int64_t>(l));
      bin.push_back(static_cast<std::int64_t>(b));
      start.push_back(a);
      end.push_back(e);
      busy_s.push_back(busy[l][b]);
      fraction.push_back(e > a ? busy[l][b] / (e - a) : 0.0);
      capacity.push_back(bandwidth[l]);
    }
  }
  write_string_table(schema::kLinkSeriesNames, names);
  write_numeric_table(schema::kLinkSeries,
                      {TableColumn{"link", "", link}, TableColumn{"bin", "", bin}, TableColumn{"start_s", "s", start},
                       TableColumn{"end_s", "s", end}, TableColumn{"busy_s", "s", busy_s},
                       TableColumn{"busy_fraction", "1", fraction}, TableColumn{"bandwidth", "B/s", capacity}});
  link_series_written_ = true;
}

void H5Writer::write_numeric_table(const std::string& path, const std::vector<TableColumn>& columns) {
  if (columns.empty()) throw std::runtime_error(label_ + ": " + path + " has no columns");
  std::vector<std::string> names;
  std::vector<hid_t> types;
  std::vector<std::string> units;
  const std::size_t rows = columns.front().size();
  for (const auto& c : columns) {
    if (c.size() != rows) {
      throw std::runtime_error(label_ + ": " + path + ": column '" + c.name + "' has " +
                               std::to_string(c.size()) + " rows, expected " +
                               std::to_string(rows));
    }
    names.push_back(c.name);
    units.push_back(c.unit);
    types.push_back(std::holds_alternative<std::vector<double>>(c.values) ? H5T_IEEE_F64LE
                                                                           : H5T_STD_I64LE);
  }
  require_unique(names, label_, path);

  std::vector<unsigned char> block(rows * 8 * columns.size(), 0);
  for (std::size_t j = 0; j < columns.size(); ++j) {
    std::visit(
        [&](const auto& values) {
          for (std::size_t i = 0; i < rows; ++i) {
            std::memcpy(block.data() + (i * columns.size() + j) * 8, &values[i], 8);
          }
        },
        columns[j].values);
  }

  const H5Handle row = numeric_row_type(names, types, label_);
  const H5Handle dcpl = create_dataset_plist(0, false);
  const H5Handle space = vector_space(rows, label_);
  const H5Handle dataset =
      dataset_handle(H5Dcreate2(file_.get(), path.c_str(), row.get(), space.get(), H5P_DEFAULT,
                                dcpl.get(), H5P_DEFAULT),
                     label_, "cannot create " + path);
  if (rows > 0) {
    check_h5(H5Dwrite(dataset.get(), row.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, block.data()),
             label_, "cannot write " + path);
  }
  write_strings_attribute(dataset.get(), schema::kUnitsAttribute, units, label_);
}

void H5Writer::set_run_mode(std::string_view simulated) {
  require_open("set the run mode");
  if (simulated != "steps" && simulated != "full") {
    throw std::runtime_error(label_ + ": run mode must be \"steps\" or \"full\", got \"" +
                             std::string(simulated) + "\"");
  }
  run_mode_ = simulated;
}

void H5Writer::ensure_run_layout() {
  const htri_t exists = H5Lexists(file_.get(), schema::kRun, H5P_DEFAULT);
  check_h5(exists, label_, "cannot look up /run");
  if (exists > 0) return;
  const H5Handle gcpl = create_group_plist();
  const H5Handle group =
      group_handle(H5Gcreate2(file_.get(), schema::kRun, H5P_DEFAULT, gcpl.get(), H5P_DEFAULT),
                   label_, "cannot create /run");
}

void H5Writer::write_sweep(const std::vector<std::string>& varied_keys,
                           const std::vector<std::string>& metric_names,
                           const std::vector<SweepRow>& rows) {
  require_open("write /sweep");
  if (sweep_written_) throw std::runtime_error(label_ + ": /sweep written twice");
  std::vector<std::string> units, descriptions;
  for (const auto& m : metric_names) units.push_back(default_metric_unit(m));
  for (const auto& key : varied_keys) descriptions.push_back("the value of the scenario key " + key + " at this point");
  descriptions.push_back(metric_description(kSweepStatusField));
  for (const auto& m : metric_names) descriptions.push_back(metric_description(m));
  const H5Handle dataset = write_labelled_rows(schema::kSweep, varied_keys, metric_names, units, descriptions, rows);
  write_strings_attribute(dataset.get(), "varied_keys", varied_keys, label_);
  write_strings_attribute(dataset.get(), "metrics", metric_names, label_);
  sweep_written_ = true;
}

void H5Writer::write_plan(const std::vector<std::string>& text_fields, const std::vector<std::string>& metric_names,
                          const std::vector<std::string>& metric_units,
                          const std::vector<std::string>& metric_descriptions, const std::vector<SweepRow>& rows,
                          const std::vector<std::pair<std::string, double>>& counts) {
  require_open("write /plan");
  if (plan_written_) throw std::runtime_error(label_ + ": /plan written twice");
  if (metric_units.size() != metric_names.size() || metric_descriptions.size() != metric_names.size())
    throw std::runtime_error(label_ + ": /plan needs one unit and one description per metric");
  std::vector<std::string> descriptions;
  for (const auto& f : text_fields) descriptions.push_back("the layout's " + f);
  descriptions.push_back("ok (simulated), predicted (ranked, not simulated) or why the simulation failed");
  descriptions.insert(descriptions.end(), metric_descriptions.begin(), metric_descriptions.end());
  const H5Handle dataset = write_labelled_rows("/plan", text_fields, metric_names, metric_units, descriptions, rows);
  for (const auto& [name, value] : counts) {
    const H5Handle space = space_handle(H5Screate(H5S_SCALAR), label_, "cannot create an attribute space");
    const H5Handle attr = attribute_handle(
        H5Acreate2(dataset.get(), name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), label_,
        "cannot create the attribute " + name + " of /plan");
    check_h5(H5Awrite(attr.get(), H5T_NATIVE_DOUBLE, &value), label_, "cannot write the attribute " + name + " of /plan");
  }
  plan_written_ = true;
}

H5Handle H5Writer::write_labelled_rows(const char* path, const std::vector<std::string>& varied_keys,
                                    const std::vector<std::string>& metric_names,
                                    const std::vector<std::string>& metric_units,
                                    const std::vector<std::string>& descriptions, const std::vector<SweepRow>& rows) {
  silence_hdf5_errors();
  const std::string where = path;
  std::vector<std::string> all_names = varied_keys;
  all_names.push_back(kSweepStatusField);
  all_names.insert(all_names.end(), metric_names.begin(), metric_names.end());
  require_unique(all_names, label_, where.c_str());
  if (all_names.empty()) throw std::runtime_error(label_ + ": " + where + " has no columns");

  // One string field per label, then the status field.
  std::vector<std::size_t> widths(varied_keys.size() + 1, 1);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].values.size() != varied_keys.size() ||
        rows[r].metrics.size() != metric_names.size()) {
      throw std::runtime_error(label_ + ": " + where + " row " + std::to_string(r) + " has " +
                               std::to_string(rows[r].values.size()) + " values and " +
                               std::to_string(rows[r].metrics.size()) + " metrics, expected " +
                               std::to_string(varied_keys.size()) + " and " +
                               std::to_string(metric_names.size()));
    }
    for (std::size_t k = 0; k < varied_keys.size(); ++k) {
      widths[k] = std::max(widths[k], rows[r].values[k].size());
    }
    widths.back() = std::max(widths.back(), rows[r].status.size());
  }
  std::size_t string_bytes = 0;
  std::vector<std::size_t> offsets;
  for (std::size_t w : widths) {
    offsets.push_back(string_bytes);
    string_bytes += w;
  }
  const std::size_t row_bytes = string_bytes + 8 * metric_names.size();
  const H5Handle row = type_handle(H5Tcreate(H5T_COMPOUND, row_bytes), label_,
                                   "cannot create the " + where + " row type");
  for (std::size_t k = 0; k <= varied_keys.size(); ++k) {
    const std::string& name = k < varied_keys.size() ? varied_keys[k] : std::string(kSweepStatusField);
    const H5Handle string_type = schema::make_string_type(widths[k], label_);
    check_h5(H5Tinsert(row.get(), name.c_str(), offsets[k], string_type.get()), label_,
             "cannot add field '" + name + "' to " + where);
  }
  for (std::size_t m = 0; m < metric_names.size(); ++m) {
    check_h5(H5Tinsert(row.get(), metric_names[m].c_str(), string_bytes + 8 * m, H5T_IEEE_F64LE),
             label_, "cannot add field '" + metric_names[m] + "' to " + where);
  }
  std::vector<unsigned char> block(rows.size() * row_bytes, 0);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    unsigned char* out = block.data() + r * row_bytes;
    for (std::size_t k = 0; k < varied_keys.size(); ++k) {
      std::memcpy(out + offsets[k], rows[r].values[k].data(), rows[r].values[k].size());
    }
    std::memcpy(out + offsets.back(), rows[r].status.data(), rows[r].status.size());
    for (std::size_t m = 0; m < metric_names.size(); ++m) {
      std::memcpy(out + string_bytes + 8 * m, &rows[r].metrics[m], 8);
    }
  }

  const H5Handle dcpl = create_dataset_plist(0, false);
  const H5Handle space = vector_space(rows.size(), label_);
  H5Handle dataset = dataset_handle(
      H5Dcreate2(file_.get(), path, row.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT), label_,
      "cannot create " + where);
  if (!rows.empty()) {
    check_h5(H5Dwrite(dataset.get(), row.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, block.data()), label_,
             "cannot write " + where);
  }
  std::vector<std::string> units(varied_keys.size() + 1, "");
  units.insert(units.end(), metric_units.begin(), metric_units.end());
  write_strings_attribute(dataset.get(), schema::kUnitsAttribute, units, label_);
  write_strings_attribute(dataset.get(), schema::kDescriptionsAttribute, descriptions, label_);
  return dataset;
}

void H5Writer::write_string_table(const char* path, const std::vector<std::string>& values) {
  const std::size_t width = max_length(values);
  const H5Handle type = schema::make_string_type(width, label_);
  // Large tables are chunked and compressed; the threshold is fixed, so layout is reproducible.
  constexpr std::size_t kChunkRows = 4096;
  const bool chunked = values.size() >= kChunkRows;
  const H5Handle dcpl = create_dataset_plist(chunked ? kChunkRows : 0, chunked);
  const H5Handle space = vector_space(values.size(), label_);
  const H5Handle dataset =
      dataset_handle(H5Dcreate2(file_.get(), path, type.get(), space.get(), H5P_DEFAULT,
                                dcpl.get(), H5P_DEFAULT),
                     label_, std::string("cannot create ") + path);
  if (!values.empty()) {
    const std::vector<char> block = pack_strings(values, width);
    check_h5(H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, block.data()),
             label_, std::string("cannot write ") + path);
  }
}

void H5Writer::commit() {
  finish();
  publish();
}

void H5Writer::publish() {
  if (committed_ || !finished_) {
    throw std::runtime_error(label_ + ": cannot publish: the output file was " +
                             (committed_ ? "already committed" : "not finished"));
  }
  commit_rename(temporary_, target_);
  committed_ = true;
}

void H5Writer::finish() {
  require_open("commit");
  silence_hdf5_errors();
  const bool run_file = !sweep_written_;
  if (run_file || step_count() > 0) flush_steps();
  if (run_file || event_count() > 0) flush_events();
  if (run_file || event_count() > 0 || !names_.empty() || !resources_.empty()) {
    write_string_table(schema::kEventNames, names_);
    write_string_table(schema::kEventResources, resources_);
  }
  if (run_file || !run_tables_.empty() || !run_mode_.empty()) {
    ensure_run_layout();
    const H5Handle group = group_handle(H5Gopen2(file_.get(), schema::kRun, H5P_DEFAULT), label_,
                                        "cannot open /run");
    const std::string mode = !run_mode_.empty() ? run_mode_
                             : run_tables_.empty() ? "steps"
                                                   : "full";
    write_string_attribute(group.get(), "simulated", mode, label_);
    write_strings_attribute(group.get(), "tables", run_tables_, label_);
  }

  steps_.reset();
  events_.reset();
  step_type_.reset();
  event_type_.reset();
  if (!file_.close()) throw_h5_error(label_, "cannot close (flush) the output file");
  finished_ = true;
}

}  // namespace ironlaw::output
