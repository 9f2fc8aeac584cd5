#pragma once
/// \file RAII ownership of HDF5 identifiers and the error policy of the output layer: HDF5 never
/// prints, every failure becomes a std::runtime_error naming the file and what failed. Used by
/// the writer and the reader; not part of the public API of the output layer.
#include <hdf5.h>

#include <string>
#include <string_view>
#include <utility>

namespace ironlaw::output {

/// Owns one hid_t and closes it with the matching H5?close function. Move-only.
class H5Handle {
 public:
  using Closer = herr_t (*)(hid_t);

  H5Handle() = default;
  H5Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  H5Handle(H5Handle&& other) noexcept
      : id_(std::exchange(other.id_, H5I_INVALID_HID)), closer_(other.closer_) {}
  H5Handle& operator=(H5Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
      closer_ = other.closer_;
    }
    return *this;
  }
  ~H5Handle() { reset(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

  /// Closes the identifier now; returns false if HDF5 reported an error while closing (a close
  /// can flush data, so the caller that needs the data on disk must check).
  bool close() {
    if (id_ < 0) return true;
    const herr_t status = closer_(id_);
    id_ = H5I_INVALID_HID;
    return status >= 0;
  }
  void reset() { close(); }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

/// Turns off HDF5's automatic error printing for the calling thread (the library keeps this
/// setting per thread in thread-safe builds). Cheap; called at every public entry point.
void silence_hdf5_errors();

/// Tells HDF5 not to close what is still open at exit (H5dont_atexit; call before any other
/// HDF5 call). A file whose write failed (a full disk, a file past ulimit -f: EFBIG) stays
/// half-open inside libhdf5, and its exit-time close crashed (SIGSEGV in H5F__close_cb after
/// the exit status 2 was chosen). Every output is closed and renamed, or discarded, before the
/// command returns, so nothing is left for that close to do.
void skip_hdf5_exit_cleanup();

/// The innermost message on the calling thread's HDF5 error stack (where the error was first
/// detected), e.g. "unable to open file: ... errno = 2, error message = 'No such file or
/// directory'"; empty if the stack is empty.
std::string hdf5_error_detail();

/// Throws std::runtime_error("<file>: <what>[: <HDF5 detail>]").
[[noreturn]] void throw_h5_error(std::string_view file, std::string_view what);

/// Wraps an identifier returned by HDF5, throwing (via throw_h5_error) if it is negative.
H5Handle checked_handle(hid_t id, H5Handle::Closer closer, std::string_view file,
                        std::string_view what);

/// Throws (via throw_h5_error) if an HDF5 call returned a negative status.
inline void check_h5(herr_t status, std::string_view file, std::string_view what) {
  if (status < 0) throw_h5_error(file, what);
}

/// Convenience constructors for the common identifier kinds.
inline H5Handle type_handle(hid_t id, std::string_view file, std::string_view what) {
  return checked_handle(id, H5Tclose, file, what);
}
inline H5Handle space_handle(hid_t id, std::string_view file, std::string_view what) {
  return checked_handle(id, H5Sclose, file, what);
}
inline H5Handle plist_handle(hid_t id, std::string_view file, std::string_view what) {
  return checked_handle(id, H5Pclose, file, what);
}
inline H5Handle dataset_handle(hid_t id, std::string_view file, std::string_view what) {
  return checked_handle(id, H5Dclose, file, what);
}
inline H5Handle group_handle(hid_t id, std::string_view file, std::string_view what) {
  return checked_handle(id, H5Gclose, file, what);
}
inline H5Handle attribute_handle(hid_t id, std::string_view file, std::string_view what) {
  return checked_handle(id, H5Aclose, file, what);
}

}  // namespace ironlaw::output
