#include "output/h5_schema.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

namespace ironlaw::output::schema {

// Rows are packed with memcpy of native values; the file types are little-endian.
static_assert(std::endian::native == std::endian::little,
              "the HDF5 row packing assumes a little-endian host");

namespace {
template <typename T>
void put(unsigned char* out, std::size_t offset, T value) {
  std::memcpy(out + offset, &value, sizeof(T));
}
template <typename T>
T get(const unsigned char* in, std::size_t offset) {
  T value;
  std::memcpy(&value, in + offset, sizeof(T));
  return value;
}

void insert(hid_t compound, const Field& field, hid_t type, std::string_view file) {
  check_h5(H5Tinsert(compound, field.name, field.offset, type), file,
           std::string("cannot build the HDF5 type of field ") + field.name);
}
}  // namespace

void pack_event(const EventRecord& r, unsigned char* out) {
  put(out, 0, r.rank);
  put(out, 4, r.resource);
  put(out, 8, static_cast<std::uint8_t>(r.kind));
  put(out, 9, r.name);
  put(out, 13, r.start_ns);
  put(out, 21, r.end_ns);
  put(out, 29, r.flops);
  put(out, 37, r.bytes);
}

EventRecord unpack_event(const unsigned char* in) {
  EventRecord r;
  r.rank = get<std::int32_t>(in, 0);
  r.resource = get<std::uint32_t>(in, 4);
  r.kind = static_cast<EventKind>(get<std::uint8_t>(in, 8));
  r.name = get<std::uint32_t>(in, 9);
  r.start_ns = get<std::int64_t>(in, 13);
  r.end_ns = get<std::int64_t>(in, 21);
  r.flops = get<double>(in, 29);
  r.bytes = get<double>(in, 37);
  return r;
}

H5Handle make_kind_type(std::string_view file) {
  H5Handle kind = type_handle(H5Tenum_create(H5T_STD_U8LE), file, "cannot create the kind enum");
  for (int k = 0; k < kEventKindCount; ++k) {
    const auto value = static_cast<std::uint8_t>(k);
    check_h5(H5Tenum_insert(kind.get(), event_kind_name(static_cast<EventKind>(k)), &value),
             file, "cannot build the kind enum");
  }
  return kind;
}

H5Handle make_event_type(std::string_view file) {
  H5Handle row = type_handle(H5Tcreate(H5T_COMPOUND, kEventRowBytes), file,
                             "cannot create the /events row type");
  const H5Handle kind = make_kind_type(file);
  const hid_t types[] = {H5T_STD_I32LE, H5T_STD_U32LE, kind.get(),      H5T_STD_U32LE,
                         H5T_STD_I64LE, H5T_STD_I64LE, H5T_IEEE_F64LE, H5T_IEEE_F64LE};
  for (std::size_t i = 0; i < kEventFields.size(); ++i) {
    insert(row.get(), kEventFields[i], types[i], file);
  }
  return row;
}

void pack_step(const StepRecord& r, unsigned char* out) {
  put(out, 0, r.step);
  put(out, 8, r.start_ns);
  put(out, 16, r.end_ns);
  put(out, 24, r.compute_s);
  put(out, 32, r.exposed_comm_s);
  put(out, 40, r.bubble_s);
  put(out, 48, r.data_stall_s);
  put(out, 56, r.other_s);
  put(out, 64, r.model_flops);
  put(out, 72, r.hardware_flops);
  put(out, 80, r.tokens);
}

StepRecord unpack_step(const unsigned char* in) {
  StepRecord r;
  r.step = get<std::int64_t>(in, 0);
  r.start_ns = get<std::int64_t>(in, 8);
  r.end_ns = get<std::int64_t>(in, 16);
  r.compute_s = get<double>(in, 24);
  r.exposed_comm_s = get<double>(in, 32);
  r.bubble_s = get<double>(in, 40);
  r.data_stall_s = get<double>(in, 48);
  r.other_s = get<double>(in, 56);
  r.model_flops = get<double>(in, 64);
  r.hardware_flops = get<double>(in, 72);
  r.tokens = get<double>(in, 80);
  return r;
}

H5Handle make_step_type(std::string_view file) {
  H5Handle row = type_handle(H5Tcreate(H5T_COMPOUND, kStepRowBytes), file,
                             "cannot create the /steps row type");
  for (std::size_t i = 0; i < kStepFields.size(); ++i) {
    insert(row.get(), kStepFields[i], i < 3 ? H5T_STD_I64LE : H5T_IEEE_F64LE, file);
  }
  return row;
}

H5Handle make_string_type(std::size_t width, std::string_view file) {
  H5Handle type = type_handle(H5Tcopy(H5T_C_S1), file, "cannot create a string type");
  check_h5(H5Tset_size(type.get(), std::max<std::size_t>(width, 1)), file,
           "cannot size a string type");
  check_h5(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), file, "cannot pad a string type");
  check_h5(H5Tset_cset(type.get(), H5T_CSET_UTF8), file, "cannot set a string encoding");
  return type;
}

}  // namespace ironlaw::output::schema
