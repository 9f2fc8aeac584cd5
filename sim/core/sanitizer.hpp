#pragma once
/// \file Whether this binary was built with a sanitizer, for the few bounds that must scale with
/// it. AddressSanitizer, ThreadSanitizer and UndefinedBehaviorSanitizer builds run 5-20x slower
/// than Release (`make test-sanitize` on a 2-core machine); the CPU and wall-clock bounds that
/// protect a command from hostile input (run/cpu_budget.hpp, cli/common.hpp, the HDF5 probe of
/// output/h5_reader.hpp) are kSanitizerSlowdown times larger there, so that a legitimate input
/// is never stopped only because the build is instrumented. Release builds are unaffected.
///
/// gcc defines __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__; clang answers __has_feature.

namespace ironlaw {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define IRONLAW_SANITIZED_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define IRONLAW_SANITIZED_BUILD 1
#endif
#endif

#ifdef IRONLAW_SANITIZED_BUILD
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif

/// Factor by which the bounds above are larger in a sanitizer build (1 in Release).
inline constexpr int kSanitizerSlowdown = kSanitizedBuild ? 10 : 1;

}  // namespace ironlaw
