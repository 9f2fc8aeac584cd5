#include "output/h5_handle.hpp"

#include <stdexcept>

#include "core/error.hpp"

namespace ironlaw::output {

void silence_hdf5_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

void skip_hdf5_exit_cleanup() { H5dont_atexit(); }

namespace {
herr_t take_innermost(unsigned depth, const H5E_error2_t* error, void* client) {
  auto* out = static_cast<std::string*>(client);
  if (depth == 0 && error != nullptr && error->desc != nullptr) *out = error->desc;
  return 0;
}
}  // namespace

std::string hdf5_error_detail() {
  std::string detail;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, take_innermost, &detail);
  H5Eclear2(H5E_DEFAULT);
  return detail;
}

void throw_h5_error(std::string_view file, std::string_view what) {
  std::string message = std::string(file) + ": " + std::string(what);
  const std::string detail = hdf5_error_detail();
  if (!detail.empty()) message += ": " + detail;
  throw IoError(message);
}

H5Handle checked_handle(hid_t id, H5Handle::Closer closer, std::string_view file,
                        std::string_view what) {
  if (id < 0) throw_h5_error(file, what);
  return H5Handle(id, closer);
}

}  // namespace ironlaw::output
