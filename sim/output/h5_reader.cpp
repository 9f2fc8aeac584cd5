#include "output/h5_reader.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <new>
#include <stdexcept>
#include <system_error>

#include "output/h5_schema.hpp"

namespace ironlaw::output {

namespace {

/// Number of elements of a dataspace (1 for a scalar).
hsize_t element_count(hid_t space, std::string_view file, std::string_view what) {
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  if (n < 0) throw_h5_error(file, what);
  return static_cast<hsize_t>(n);
}

/// Bytes of an in-memory copy of `elements` elements of `element_bytes` each, refused (with the
/// path and the declared size) when the file cannot hold that much data. A damaged header may
/// declare any dataspace, so a buffer is never sized from it alone: a dataset's stored bytes
/// (H5Dget_storage_size) bound what it can expand to, allowing zlib's maximum deflate ratio
/// (1032:1) times the widest conversion the reader asks for (1-byte integer to 8-byte int64);
/// an attribute, never compressed, is bounded by the file's size. Overflow counts as too large.
std::size_t checked_buffer_bytes(hid_t object, bool is_attribute, hsize_t elements,
                                 std::size_t element_bytes, std::string_view file,
                                 std::string_view what) {
  constexpr std::uint64_t kMaxExpansion = 1032 * 8;
  std::uint64_t stored = 0;
  if (is_attribute) {
    const hid_t owner = H5Iget_file_id(object);
    if (owner < 0) throw_h5_error(file, what);
    hsize_t size = 0;
    const herr_t status = H5Fget_filesize(owner, &size);
    H5Fclose(owner);
    check_h5(status, file, what);
    stored = size;
  } else {
    stored = H5Dget_storage_size(object);
  }
  const std::uint64_t limit =
      stored > std::numeric_limits<std::uint64_t>::max() / kMaxExpansion ? std::numeric_limits<std::uint64_t>::max()
                                                                        : stored * kMaxExpansion;
  const bool overflow = element_bytes != 0 && elements > std::numeric_limits<std::uint64_t>::max() / element_bytes;
  const std::uint64_t bytes = overflow ? 0 : elements * element_bytes;
  if (overflow || bytes > limit || bytes > std::numeric_limits<std::size_t>::max()) {
    throw std::runtime_error(std::string(file) + ": " + std::string(what) + ": declares " +
                             std::to_string(elements) + " elements of " + std::to_string(element_bytes) +
                             " bytes, more than its " + std::to_string(stored) +
                             " stored bytes can hold (a damaged file)");
  }
  return static_cast<std::size_t>(bytes);
}

/// Reads the strings stored in a dataset or attribute (fixed-length or variable-length).
std::vector<std::string> read_strings(hid_t object, bool is_attribute, std::string_view file,
                                      const std::string& what) {
  const std::string failure = "cannot read " + what;
  const H5Handle type = type_handle(is_attribute ? H5Aget_type(object) : H5Dget_type(object),
                                    file, failure);
  if (H5Tget_class(type.get()) != H5T_STRING) {
    throw std::runtime_error(std::string(file) + ": " + what + " is not a string");
  }
  const H5Handle space = space_handle(
      is_attribute ? H5Aget_space(object) : H5Dget_space(object), file, failure);
  const hsize_t n = element_count(space.get(), file, failure);
  std::vector<std::string> out;
  if (n == 0) return out;
  const htri_t variable = H5Tis_variable_str(type.get());
  check_h5(variable, file, failure);
  const std::size_t stored_width = variable > 0 ? 1 : H5Tget_size(type.get());
  checked_buffer_bytes(object, is_attribute, n, std::max<std::size_t>(stored_width, sizeof(char*)), file,
                       failure);
  out.reserve(n);
  if (variable > 0) {
    const H5Handle memory = type_handle(H5Tcopy(H5T_C_S1), file, failure);
    check_h5(H5Tset_size(memory.get(), H5T_VARIABLE), file, failure);
    check_h5(H5Tset_cset(memory.get(), H5Tget_cset(type.get())), file, failure);
    std::vector<char*> pointers(n, nullptr);
    const herr_t read = is_attribute ? H5Aread(object, memory.get(), pointers.data())
                                     : H5Dread(object, memory.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                               pointers.data());
    if (read < 0) {
      // A damaged file can fail part-way: free the strings already read before reporting.
      for (char* p : pointers) {
        if (p != nullptr) H5free_memory(p);
      }
      throw_h5_error(file, failure);
    }
    for (char* p : pointers) out.emplace_back(p != nullptr ? p : "");
    H5Dvlen_reclaim(memory.get(), space.get(), H5P_DEFAULT, pointers.data());
    return out;
  }
  const std::size_t width = H5Tget_size(type.get());
  if (width == 0) throw_h5_error(file, failure);
  std::vector<char> block(checked_buffer_bytes(object, is_attribute, n, width, file, failure), '\0');
  check_h5(is_attribute ? H5Aread(object, type.get(), block.data())
                        : H5Dread(object, type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, block.data()),
           file, failure);
  for (hsize_t i = 0; i < n; ++i) {
    const char* begin = block.data() + i * width;
    const char* end = std::find(begin, begin + width, '\0');
    out.emplace_back(begin, end);
  }
  return out;
}

/// A compound type as stored is trusted by HDF5's conversion, which copies each member from its
/// stored offset: a damaged header whose members reach past the row, or whose unfiltered data is
/// shorter than its rows, makes libhdf5 read out of bounds. Both are refused here first.
void check_stored_layout(hid_t dataset, hid_t type, hsize_t rows, std::string_view file,
                         const std::string& what) {
  const std::string failure = "cannot read " + what;
  const std::size_t row = H5Tget_size(type);
  if (row == 0) throw_h5_error(file, failure);
  const int members = H5Tget_nmembers(type);
  if (members < 0) throw_h5_error(file, failure);
  for (unsigned i = 0; i < static_cast<unsigned>(members); ++i) {
    const H5Handle member = type_handle(H5Tget_member_type(type, i), file, failure);
    const std::size_t offset = H5Tget_member_offset(type, i);
    const std::size_t width = H5Tget_size(member.get());
    if (width == 0 || offset > row || width > row - offset) {
      throw std::runtime_error(std::string(file) + ": " + what + ": field " + std::to_string(i) +
                               " lies outside its " + std::to_string(row) + "-byte row (a damaged file)");
    }
  }
  // libhdf5 sizes its conversion buffer from the stored row, whatever the memory row is.
  checked_buffer_bytes(dataset, false, rows, row, file, failure);
  const H5Handle dcpl = plist_handle(H5Dget_create_plist(dataset), file, failure);
  const int filters = H5Pget_nfilters(dcpl.get());
  if (filters < 0) throw_h5_error(file, failure);
  if (filters == 0 && rows > 0) {
    const std::uint64_t stored = H5Dget_storage_size(dataset);
    const bool overflow = rows > std::numeric_limits<std::uint64_t>::max() / row;
    if (overflow || stored < rows * row) {
      throw std::runtime_error(std::string(file) + ": " + what + ": " + std::to_string(rows) + " rows of " +
                               std::to_string(row) + " bytes but only " + std::to_string(stored) +
                               " bytes stored (a damaged file)");
    }
  }
}

H5Handle open_attribute(hid_t object, const char* name, std::string_view file,
                        const std::string& owner) {
  const htri_t exists = H5Aexists(object, name);
  if (exists <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw std::runtime_error(std::string(file) + ": " + owner + " has no attribute '" + name +
                             "'");
  }
  return attribute_handle(H5Aopen(object, name, H5P_DEFAULT), file,
                          "cannot open attribute '" + std::string(name) + "' of " + owner);
}

std::string read_string_attribute(hid_t object, const char* name, std::string_view file,
                                  const std::string& owner) {
  const H5Handle attribute = open_attribute(object, name, file, owner);
  const auto values = read_strings(attribute.get(), true, file,
                                   "attribute '" + std::string(name) + "' of " + owner);
  return values.empty() ? std::string() : values.front();
}

std::vector<std::string> read_strings_attribute(hid_t object, const char* name,
                                                std::string_view file, const std::string& owner) {
  const H5Handle attribute = open_attribute(object, name, file, owner);
  return read_strings(attribute.get(), true, file,
                      "attribute '" + std::string(name) + "' of " + owner);
}

/// One field of a compound dataset read generically.
struct GenericColumn {
  enum class Kind { floating, integer, text };
  std::string name;
  Kind kind = Kind::floating;
  std::size_t width = 8;  ///< bytes in the memory row
  std::vector<double> floats;
  std::vector<std::int64_t> integers;
  std::vector<std::string> texts;
};

/// Reads every row of a 1-D compound dataset; float fields as double, integer fields as int64,
/// fixed-length strings as text. Other field types are an error.
std::vector<GenericColumn> read_compound(hid_t dataset, std::string_view file,
                                         const std::string& what) {
  const std::string failure = "cannot read " + what;
  const H5Handle type = type_handle(H5Dget_type(dataset), file, failure);
  if (H5Tget_class(type.get()) != H5T_COMPOUND) {
    throw std::runtime_error(std::string(file) + ": " + what + " is not a table (compound)");
  }
  const int members = H5Tget_nmembers(type.get());
  if (members < 0) throw_h5_error(file, failure);
  std::vector<GenericColumn> columns(static_cast<std::size_t>(members));
  std::vector<H5Handle> member_types;
  std::size_t row_bytes = 0;
  for (unsigned i = 0; i < static_cast<unsigned>(members); ++i) {
    GenericColumn& c = columns[i];
    char* raw_name = H5Tget_member_name(type.get(), i);
    if (raw_name == nullptr) throw_h5_error(file, failure);
    c.name = raw_name;
    H5free_memory(raw_name);
    const H5T_class_t cls = H5Tget_member_class(type.get(), i);
    if (cls == H5T_FLOAT) {
      c.kind = GenericColumn::Kind::floating;
      member_types.push_back(type_handle(H5Tcopy(H5T_NATIVE_DOUBLE), file, failure));
    } else if (cls == H5T_INTEGER) {
      c.kind = GenericColumn::Kind::integer;
      member_types.push_back(type_handle(H5Tcopy(H5T_NATIVE_INT64), file, failure));
    } else if (cls == H5T_STRING) {
      c.kind = GenericColumn::Kind::text;
      H5Handle member = type_handle(H5Tget_member_type(type.get(), i), file, failure);
      if (H5Tis_variable_str(member.get()) > 0) {
        throw std::runtime_error(std::string(file) + ": " + what + ": field '" + c.name +
                                 "' is a variable-length string (unsupported)");
      }
      c.width = H5Tget_size(member.get());
      member_types.push_back(std::move(member));
    } else {
      throw std::runtime_error(std::string(file) + ": " + what + ": field '" + c.name +
                               "' has an unsupported type");
    }
    row_bytes += c.width;
  }
  const H5Handle memory = type_handle(H5Tcreate(H5T_COMPOUND, std::max<std::size_t>(row_bytes, 1)),
                                      file, failure);
  std::vector<std::size_t> offsets;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    check_h5(H5Tinsert(memory.get(), columns[i].name.c_str(), offset, member_types[i].get()), file,
             failure);
    offsets.push_back(offset);
    offset += columns[i].width;
  }
  const H5Handle space = space_handle(H5Dget_space(dataset), file, failure);
  const hsize_t rows = element_count(space.get(), file, failure);
  check_stored_layout(dataset, type.get(), rows, file, what);
  std::vector<unsigned char> block(checked_buffer_bytes(dataset, false, rows, row_bytes, file, failure));
  if (rows > 0) {
    check_h5(H5Dread(dataset, memory.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, block.data()), file,
             failure);
  }
  for (std::size_t i = 0; i < columns.size(); ++i) {
    GenericColumn& c = columns[i];
    for (hsize_t r = 0; r < rows; ++r) {
      const unsigned char* p = block.data() + r * row_bytes + offsets[i];
      if (c.kind == GenericColumn::Kind::floating) {
        double v;
        std::memcpy(&v, p, sizeof v);
        c.floats.push_back(v);
      } else if (c.kind == GenericColumn::Kind::integer) {
        std::int64_t v;
        std::memcpy(&v, p, sizeof v);
        c.integers.push_back(v);
      } else {
        const char* begin = reinterpret_cast<const char*>(p);
        c.texts.emplace_back(begin, std::find(begin, begin + c.width, '\0'));
      }
    }
  }
  return columns;
}

}  // namespace

H5Reader::H5Reader(std::filesystem::path path) : path_(std::move(path)), label_(path_.string()) {
  silence_hdf5_errors();
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) {
    // A loop of symbolic links is not a missing file: say which (stat's ELOOP).
    throw std::runtime_error(label_ + (ec.value() == ELOOP ? ": a loop of symbolic links" : ": no such file"));
  }
  if (!std::filesystem::is_regular_file(path_, ec)) {
    throw std::runtime_error(label_ + ": not a regular file");
  }
  const htri_t is_hdf5 = H5Fis_hdf5(path_.c_str());
  if (is_hdf5 <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw std::runtime_error(label_ + ": not an HDF5 file (or unreadable)");
  }
  file_ = checked_handle(H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, label_,
                         "cannot open HDF5 file");
  const htri_t marked = H5Aexists(file_.get(), "format");
  std::string format;
  if (marked > 0) format = read_string_attribute(file_.get(), "format", label_, "/");
  H5Eclear2(H5E_DEFAULT);
  if (format != kFileFormat) {
    throw std::runtime_error(label_ +
                             ": not an ironlaw output file (the root attribute 'format' is not "
                             "\"ironlaw\")");
  }
  const H5Handle version = open_attribute(file_.get(), "format_version", label_, "/");
  check_h5(H5Aread(version.get(), H5T_NATIVE_INT64, &format_version_), label_,
           "cannot read /format_version");
  if (format_version_ > kFileFormatVersion) {
    throw std::runtime_error(label_ + ": written in format version " +
                             std::to_string(format_version_) + ", this ironlaw reads up to " +
                             std::to_string(kFileFormatVersion));
  }
}

bool H5Reader::has(const std::string& object_path) const {
  silence_hdf5_errors();
  // H5Lexists fails on a path whose intermediate groups are missing: check each prefix.
  std::size_t position = 0;
  while (position != std::string::npos) {
    position = object_path.find('/', position + 1);
    const std::string prefix = object_path.substr(0, position);
    if (prefix.empty() || prefix == "/") continue;
    const htri_t exists = H5Lexists(file_.get(), prefix.c_str(), H5P_DEFAULT);
    // Every shorter prefix exists, so a failure is not "missing": the group's own structures
    // (its symbol table, local heap or B-tree) are damaged, and looking again would repeat it.
    if (exists < 0) throw_h5_error(label_, "cannot look up " + prefix);
    if (exists == 0) return false;
  }
  return true;
}

H5Handle H5Reader::open_dataset(const std::string& dataset_path) const {
  silence_hdf5_errors();
  if (!has(dataset_path)) {
    throw std::runtime_error(label_ + ": no " + dataset_path + " in this file");
  }
  return dataset_handle(H5Dopen2(file_.get(), dataset_path.c_str(), H5P_DEFAULT), label_,
                        "cannot open " + dataset_path);
}

ScenarioInfo H5Reader::scenario() const {
  const H5Handle dataset = open_dataset(schema::kScenario);
  ScenarioInfo info;
  const auto text = read_strings(dataset.get(), false, label_, schema::kScenario);
  if (!text.empty()) info.yaml = text.front();
  const H5Handle seed = open_attribute(dataset.get(), "seed", label_, schema::kScenario);
  check_h5(H5Aread(seed.get(), H5T_NATIVE_UINT64, &info.seed), label_,
           "cannot read /scenario@seed");
  info.name = read_string_attribute(dataset.get(), "name", label_, schema::kScenario);
  info.version = read_string_attribute(dataset.get(), "version", label_, schema::kScenario);
  return info;
}

std::vector<std::pair<std::string, double>> H5Reader::summary() const {
  const H5Handle dataset = open_dataset(schema::kSummary);
  const auto columns = read_compound(dataset.get(), label_, schema::kSummary);
  std::vector<std::pair<std::string, double>> out;
  for (const auto& c : columns) {
    if (c.kind == GenericColumn::Kind::text) continue;
    const bool has_row = c.kind == GenericColumn::Kind::floating ? !c.floats.empty()
                                                                 : !c.integers.empty();
    if (!has_row) throw std::runtime_error(label_ + ": /summary has no row");
    out.emplace_back(c.name, c.kind == GenericColumn::Kind::floating
                                 ? c.floats.front()
                                 : static_cast<double>(c.integers.front()));
  }
  return out;
}

std::vector<std::string> H5Reader::units(const std::string& dataset_path) const {
  const H5Handle dataset = open_dataset(dataset_path);
  return read_strings_attribute(dataset.get(), schema::kUnitsAttribute, label_, dataset_path);
}

std::vector<std::string> H5Reader::descriptions(const std::string& dataset_path) const {
  const H5Handle dataset = open_dataset(dataset_path);
  return read_strings_attribute(dataset.get(), schema::kDescriptionsAttribute, label_, dataset_path);
}

std::vector<StepRecord> H5Reader::steps() const {
  const H5Handle dataset = open_dataset(schema::kSteps);
  const H5Handle type = schema::make_step_type(label_);
  const H5Handle space = space_handle(H5Dget_space(dataset.get()), label_, "cannot read /steps");
  const hsize_t rows = element_count(space.get(), label_, "cannot read /steps");
  {
    const H5Handle stored = type_handle(H5Dget_type(dataset.get()), label_, "cannot read /steps");
    check_stored_layout(dataset.get(), stored.get(), rows, label_, schema::kSteps);
  }
  std::vector<unsigned char> block(
      checked_buffer_bytes(dataset.get(), false, rows, schema::kStepRowBytes, label_, "cannot read /steps"));
  if (rows > 0) {
    check_h5(H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, block.data()),
             label_, "cannot read /steps");
  }
  std::vector<StepRecord> out;
  out.reserve(rows);
  for (hsize_t r = 0; r < rows; ++r) {
    out.push_back(schema::unpack_step(block.data() + r * schema::kStepRowBytes));
    // A simulated step starts at or after 0 and ends after it starts; its figures are finite.
    // A file that says otherwise was not written by ironlaw: refused here, so no reader
    // subtracts times that overflow or draws NaN.
    const StepRecord& st = out.back();
    bool sane = st.start_ns >= 0 && st.end_ns >= st.start_ns;
    for (const double v : {st.compute_s, st.exposed_comm_s, st.bubble_s, st.data_stall_s, st.other_s, st.model_flops,
                           st.hardware_flops, st.tokens})
      sane = sane && std::isfinite(v);
    if (!sane) {
      throw std::runtime_error(label_ + ": /steps row " + std::to_string(r) +
                               " is impossible (a negative or reversed time, or a value that is not finite)");
    }
  }
  return out;
}

std::vector<std::string> H5Reader::read_string_vector(const char* dataset_path) const {
  const H5Handle dataset = open_dataset(dataset_path);
  return read_strings(dataset.get(), false, label_, dataset_path);
}

std::vector<std::string> H5Reader::event_names() const {
  return read_string_vector(schema::kEventNames);
}

std::vector<std::string> H5Reader::event_resources() const {
  return read_string_vector(schema::kEventResources);
}

std::uint64_t H5Reader::event_count() const {
  if (!has(schema::kEvents)) return 0;
  const H5Handle dataset = open_dataset(schema::kEvents);
  const H5Handle space = space_handle(H5Dget_space(dataset.get()), label_, "cannot read /events");
  const hsize_t rows = element_count(space.get(), label_, "cannot read /events");
  checked_buffer_bytes(dataset.get(), false, rows, schema::kEventRowBytes, label_, "cannot read /events");
  return rows;
}

void H5Reader::for_each_event_batch(
    const std::function<void(const std::vector<EventRecord>&)>& visit,
    std::size_t batch_rows, std::uint64_t max_rows) const {
  if (batch_rows == 0) throw std::runtime_error(label_ + ": event batch size must be positive");
  if (!has(schema::kEvents)) return;
  silence_hdf5_errors();
  const std::string failure = "cannot read /events";
  // A cache that holds a few chunks, so batches that straddle chunks do not inflate them twice.
  const H5Handle dapl = plist_handle(H5Pcreate(H5P_DATASET_ACCESS), label_, failure);
  check_h5(H5Pset_chunk_cache(dapl.get(), 521, 16u << 20, 1.0), label_, failure);
  const H5Handle dataset = dataset_handle(
      H5Dopen2(file_.get(), schema::kEvents, dapl.get()), label_, "cannot open /events");
  const H5Handle type = schema::make_event_type(label_);
  const H5Handle file_space = space_handle(H5Dget_space(dataset.get()), label_, failure);
  const hsize_t total = element_count(file_space.get(), label_, failure);
  // Never allocated whole, but a damaged row count would make the batch loop run for ever.
  checked_buffer_bytes(dataset.get(), false, total, schema::kEventRowBytes, label_, failure);
  {
    const H5Handle stored = type_handle(H5Dget_type(dataset.get()), label_, failure);
    check_stored_layout(dataset.get(), stored.get(), total, label_, schema::kEvents);
  }
  const hsize_t end = std::min<hsize_t>(total, max_rows);
  std::vector<unsigned char> block(std::min<hsize_t>(batch_rows, end) * schema::kEventRowBytes);
  std::vector<EventRecord> batch;
  for (hsize_t start = 0; start < end; start += batch_rows) {
    const hsize_t n = std::min<hsize_t>(batch_rows, end - start);
    check_h5(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &n, nullptr),
             label_, failure);
    const H5Handle memory_space =
        space_handle(H5Screate_simple(1, &n, nullptr), label_, failure);
    check_h5(H5Dread(dataset.get(), type.get(), memory_space.get(), file_space.get(), H5P_DEFAULT,
                     block.data()),
             label_, failure);
    batch.clear();
    for (hsize_t r = 0; r < n; ++r) {
      batch.push_back(schema::unpack_event(block.data() + r * schema::kEventRowBytes));
    }
    visit(batch);
  }
}

std::string H5Reader::run_mode() const {
  silence_hdf5_errors();
  if (!has(schema::kRun)) throw std::runtime_error(label_ + ": no /run in this file");
  const H5Handle group = group_handle(H5Gopen2(file_.get(), schema::kRun, H5P_DEFAULT), label_,
                                      "cannot open /run");
  return read_string_attribute(group.get(), "simulated", label_, schema::kRun);
}

std::vector<std::string> H5Reader::run_tables() const {
  silence_hdf5_errors();
  if (!has(schema::kRun)) return {};
  const H5Handle group = group_handle(H5Gopen2(file_.get(), schema::kRun, H5P_DEFAULT), label_,
                                      "cannot open /run");
  return read_strings_attribute(group.get(), "tables", label_, schema::kRun);
}

std::vector<TableColumn> H5Reader::read_table(const std::string& name) const {
  return read_numeric_table(std::string(schema::kRun) + "/" + name);
}

std::vector<std::string> H5Reader::link_names() const { return read_string_vector(schema::kLinkNames); }

std::vector<TableColumn> H5Reader::links() const { return read_numeric_table(schema::kLinks); }

std::vector<std::string> H5Reader::link_series_names() const { return read_string_vector(schema::kLinkSeriesNames); }

std::vector<TableColumn> H5Reader::link_series() const { return read_numeric_table(schema::kLinkSeries); }

std::vector<TableColumn> H5Reader::read_numeric_table(const std::string& path) const {
  const H5Handle dataset = open_dataset(path);
  const auto columns = read_compound(dataset.get(), label_, path);
  std::vector<std::string> unit_list;
  if (H5Aexists(dataset.get(), schema::kUnitsAttribute) > 0) {
    unit_list = read_strings_attribute(dataset.get(), schema::kUnitsAttribute, label_, path);
  }
  std::vector<TableColumn> out;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const GenericColumn& c = columns[i];
    TableColumn column;
    column.name = c.name;
    column.unit = i < unit_list.size() ? unit_list[i] : "";
    if (c.kind == GenericColumn::Kind::floating) {
      column.values = c.floats;
    } else if (c.kind == GenericColumn::Kind::integer) {
      column.values = c.integers;
    } else {
      throw std::runtime_error(label_ + ": " + path + ": field '" + c.name + "' is not numeric");
    }
    out.push_back(std::move(column));
  }
  return out;
}

SweepTable H5Reader::sweep() const {
  const H5Handle dataset = open_dataset(schema::kSweep);
  SweepTable table;
  table.varied_keys = read_strings_attribute(dataset.get(), "varied_keys", label_, schema::kSweep);
  table.metric_names = read_strings_attribute(dataset.get(), "metrics", label_, schema::kSweep);
  const auto columns = read_compound(dataset.get(), label_, schema::kSweep);
  const auto find = [&](const std::string& name) -> const GenericColumn& {
    for (const auto& c : columns) {
      if (c.name == name) return c;
    }
    throw std::runtime_error(label_ + ": /sweep has no field '" + name + "'");
  };
  const std::vector<std::string> unit_list =
      read_strings_attribute(dataset.get(), schema::kUnitsAttribute, label_, schema::kSweep);
  std::size_t rows = 0;
  for (const auto& c : columns) {
    rows = std::max({rows, c.floats.size(), c.integers.size(), c.texts.size()});
  }
  table.rows.resize(rows);
  for (const auto& key : table.varied_keys) {
    const GenericColumn& c = find(key);
    if (c.kind != GenericColumn::Kind::text) {
      throw std::runtime_error(label_ + ": /sweep field '" + key + "' is not a string");
    }
    for (std::size_t r = 0; r < rows; ++r) table.rows[r].values.push_back(c.texts[r]);
  }
  for (const auto& c : columns) {
    if (c.name != kSweepStatusField || c.kind != GenericColumn::Kind::text) continue;
    for (std::size_t r = 0; r < rows && r < c.texts.size(); ++r) table.rows[r].status = c.texts[r];
  }
  for (const auto& metric : table.metric_names) {
    const GenericColumn& c = find(metric);
    for (std::size_t r = 0; r < rows; ++r) {
      table.rows[r].metrics.push_back(c.kind == GenericColumn::Kind::floating
                                          ? c.floats[r]
                                          : static_cast<double>(c.integers.at(r)));
    }
    const auto index = static_cast<std::size_t>(&c - columns.data());
    table.metric_units.push_back(index < unit_list.size() ? unit_list[index] : "");
  }
  return table;
}

SweepTable H5Reader::plan() const {
  const H5Handle dataset = open_dataset("/plan");
  const auto columns = read_compound(dataset.get(), label_, "/plan");
  const std::vector<std::string> unit_list =
      read_strings_attribute(dataset.get(), schema::kUnitsAttribute, label_, "/plan");
  std::size_t rows = 0;
  for (const auto& c : columns) rows = std::max({rows, c.floats.size(), c.integers.size(), c.texts.size()});
  SweepTable table;
  table.rows.resize(rows);
  for (std::size_t index = 0; index < columns.size(); ++index) {
    const GenericColumn& c = columns[index];
    const std::size_t size = std::max({c.floats.size(), c.integers.size(), c.texts.size()});
    if (size != rows) throw std::runtime_error(label_ + ": /plan field '" + c.name + "' has " + std::to_string(size) + " rows, expected " + std::to_string(rows));
    if (c.kind == GenericColumn::Kind::text) {
      if (c.name == kSweepStatusField) {
        for (std::size_t r = 0; r < rows; ++r) table.rows[r].status = c.texts[r];
        continue;
      }
      table.varied_keys.push_back(c.name);
      for (std::size_t r = 0; r < rows; ++r) table.rows[r].values.push_back(c.texts[r]);
      continue;
    }
    table.metric_names.push_back(c.name);
    table.metric_units.push_back(index < unit_list.size() ? unit_list[index] : "");
    for (std::size_t r = 0; r < rows; ++r)
      table.rows[r].metrics.push_back(c.kind == GenericColumn::Kind::floating ? c.floats[r] : static_cast<double>(c.integers[r]));
  }
  return table;
}

void read_all_tables(const H5Reader& reader, std::size_t event_rows) {
  if (reader.has(schema::kScenario)) (void)reader.scenario();
  if (reader.has(schema::kSteps)) (void)reader.steps();
  if (reader.has(schema::kSummary)) (void)reader.summary();
  if (reader.has(schema::kLinkNames)) (void)reader.link_names();
  if (reader.has(schema::kLinks)) (void)reader.links();
  if (reader.has(schema::kLinkSeriesNames)) (void)reader.link_series_names();
  if (reader.has(schema::kLinkSeries)) (void)reader.link_series();
  if (reader.has(schema::kEventNames)) (void)reader.event_names();
  if (reader.has(schema::kEventResources)) (void)reader.event_resources();
  if (reader.has(schema::kSweep)) (void)reader.sweep();
  if (reader.has("/plan")) (void)reader.plan();
  if (reader.has(schema::kRun)) {
    (void)reader.run_mode();
    for (const auto& name : reader.run_tables()) (void)reader.read_table(name);
  }
  (void)reader.event_count();
  if (event_rows > 0) reader.for_each_event_batch([](const std::vector<EventRecord>&) {}, event_rows, event_rows);
}

namespace {

/// The size in bytes of the line "<key>:  N kB" of /proc/self/status; 0 when absent.
unsigned long long status_bytes(const std::string& key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.compare(0, key.size() + 1, key + ":") == 0) return std::stoull(line.substr(key.size() + 1)) * 1024;
  }
  return 0;
}

/// Lowers `resource` to `used + extra` bytes, unless its hard limit is already below that.
void limit_growth(int resource, unsigned long long used, std::uint64_t extra) {
  rlimit current{};
  if (used == 0 || ::getrlimit(resource, &current) != 0) return;
  const unsigned long long wanted = used + extra;
  if (current.rlim_max != RLIM_INFINITY && wanted >= current.rlim_max) return;
  const rlimit lowered{static_cast<rlim_t>(wanted), static_cast<rlim_t>(wanted)};
  ::setrlimit(resource, &lowered);
}

}  // namespace

// A sanitizer runtime's interface (sanitizer/common_interface_defs.h), present only in a
// sanitized or fuzzing build: weak, so it is null elsewhere.
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

void reset_inherited_death_handlers() noexcept {
  for (const int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGXCPU, SIGXFSZ, SIGALRM, SIGINT, SIGTERM,
                        SIGUSR1, SIGUSR2}) {
    struct sigaction action {};
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    ::sigaction(sig, &action, nullptr);
  }
  if (__sanitizer_set_death_callback != nullptr) __sanitizer_set_death_callback(nullptr);
}

namespace {

/// The child's bounds: no core file, `limits.cpu_seconds` of CPU (SIGXCPU, then SIGKILL a second
/// later), and at most `limits.memory_bytes` more memory than at the fork, counted twice over:
/// address space (RLIMIT_AS: what glibc's malloc grows) and private writable mappings
/// (RLIMIT_DATA: what a sanitizer's allocator grows inside the address space it reserved at
/// start, which RLIMIT_AS does not see). Relative, so a sanitizer's shadow memory still fits.
void limit_child(const H5ProbeLimits& limits) {
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  const auto cpu = static_cast<rlim_t>(std::max(1, limits.cpu_seconds));
  const rlimit cpu_limit{cpu, cpu + 1};
  ::setrlimit(RLIMIT_CPU, &cpu_limit);
  try {
    limit_growth(RLIMIT_AS, status_bytes("VmSize"), limits.memory_bytes);
    limit_growth(RLIMIT_DATA, status_bytes("VmData"), limits.memory_bytes);
  } catch (const std::exception&) {
    // an unreadable /proc: the CPU bound and the parent's wall-clock backstop remain
  }
}

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

/// Reads the child's two pipes (its message, its stderr) until both close (the child ended) or
/// `deadline` passes; false when the deadline passed first. Each text is kept up to 64 KiB.
bool read_until_closed(const int (&fds)[2], std::chrono::steady_clock::time_point deadline,
                       std::string (&texts)[2]) {
  bool open[2] = {true, true};
  while (open[0] || open[1]) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd ready[2] = {{open[0] ? fds[0] : -1, POLLIN, 0}, {open[1] ? fds[1] : -1, POLLIN, 0}};
    const int polled = ::poll(ready, 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (polled < 0 && errno == EINTR) continue;
    if (polled < 0) return true;  // cannot wait on them: let waitpid decide
    for (int i = 0; i < 2; ++i) {
      if (!open[i] || ready[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[i], buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        open[i] = false;
        continue;
      }
      if (texts[i].size() < (64u << 10)) texts[i].append(buffer, static_cast<std::size_t>(n));
    }
  }
  return true;
}

/// True when a sanitizer's report in `diagnostics` says only that an allocation failed (at the
/// child's memory bound, or one of the impossible sizes a damaged header asks libhdf5 for):
/// a sanitizer's allocator dies there where glibc's malloc returns NULL and libhdf5 reports an
/// error. A memory-safety report (overflow, use after free) never matches.
bool out_of_memory_report(const std::string& diagnostics) {
  for (const char* words : {"out of memory", "failed to allocate", "Failed to mmap", "allocation-size-too-big"}) {
    if (diagnostics.find(words) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

H5ProbeOutcome run_h5_probe(const std::filesystem::path& path, const H5ProbeLimits& limits) {
  constexpr int kNamedError = 65;  // the child's exit status when the reader threw
  const std::string label = path.string();
  const std::string damaged = label + ": a damaged HDF5 file: ";
  int channel[2];
  int errors[2];
  if (::pipe2(channel, O_CLOEXEC) != 0) {
    throw std::runtime_error(label + ": cannot check the file in a child process: " + std::strerror(errno));
  }
  if (::pipe2(errors, O_CLOEXEC) != 0) {
    const int error = errno;
    ::close(channel[0]);
    ::close(channel[1]);
    throw std::runtime_error(label + ": cannot check the file in a child process: " + std::strerror(error));
  }
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) {
    const int error = errno;
    for (const int fd : {channel[0], channel[1], errors[0], errors[1]}) ::close(fd);
    throw std::runtime_error(label + ": cannot check the file in a child process: " + std::strerror(error));
  }
  if (child == 0) {
    ::close(channel[0]);
    ::close(errors[0]);
    ::dup2(errors[1], STDERR_FILENO);  // a sanitizer's report comes back as diagnostics
    reset_inherited_death_handlers();
    limit_child(limits);
    std::string message;
    try {
      const H5Reader reader(path);
      read_all_tables(reader);
    } catch (const std::bad_alloc&) {
      message = damaged + "reading it needs more than " + std::to_string(limits.memory_bytes >> 20) + " MiB";
    } catch (const std::exception& e) {
      message = e.what();
      if (message.empty()) message = damaged + "unreadable";
    } catch (...) {
      message = damaged + "unreadable";
    }
    write_all(channel[1], message);
    ::_exit(message.empty() ? 0 : kNamedError);
  }
  ::close(channel[1]);
  ::close(errors[1]);
  const int fds[2] = {channel[0], errors[0]};
  std::string texts[2];
  const bool ended = read_until_closed(
      fds, std::chrono::steady_clock::now() + std::chrono::seconds(std::max(1, limits.wall_seconds)), texts);
  ::close(channel[0]);
  ::close(errors[0]);
  const std::string& message = texts[0];
  const std::string& diagnostics = texts[1];
  if (!ended) ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(label + ": cannot check the file in a child process: " + std::strerror(errno));
  }
  using Kind = H5ProbeOutcome::Kind;
  if (!ended) {
    return {Kind::limited,
            damaged + "reading it did not end within " + std::to_string(limits.wall_seconds) +
                " s (the HDF5 library loops on it, or the disk stalls)",
            diagnostics};
  }
  const std::string memory = damaged + "reading it needs more than " + std::to_string(limits.memory_bytes >> 20) + " MiB";
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGXCPU) {
      return {Kind::limited,
              damaged + "reading it took more than " + std::to_string(limits.cpu_seconds) +
                  " CPU seconds (the HDF5 library loops on it)",
              diagnostics};
    }
    if (out_of_memory_report(diagnostics)) return {Kind::limited, memory, diagnostics};
    const bool crash = sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
    return {crash ? Kind::crashed : Kind::failed,
            damaged + "the HDF5 library died reading it (" + ::strsignal(sig) + ")", diagnostics};
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 0) return {Kind::clean, {}, diagnostics};
  if (code == kNamedError && !message.empty()) return {Kind::error, message, diagnostics};
  if (out_of_memory_report(diagnostics)) return {Kind::limited, memory, diagnostics};
  return {Kind::failed, damaged + "reading it failed (exit status " + std::to_string(code) + ")", diagnostics};
}

void probe_h5_file(const std::filesystem::path& path, const H5ProbeLimits& limits) {
  const H5ProbeOutcome outcome = run_h5_probe(path, limits);
  if (outcome.kind != H5ProbeOutcome::Kind::clean) throw std::runtime_error(outcome.message);
}

}  // namespace ironlaw::output
