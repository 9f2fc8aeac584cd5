#pragma once
/// \file UTF-8 checks for text that crosses the program's edges: every input file and `--set`
/// value is UTF-8 (YAML 1.2 §5.2), and every text output (SVG, JSON) must stay valid UTF-8 even
/// when it quotes bytes from a file or path it did not write itself (a crafted HDF5 file).
#include <cstddef>
#include <string>
#include <string_view>

namespace ironlaw {

/// Offset of the first byte of `text` that does not start or continue a well-formed UTF-8
/// sequence (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), or npos when
/// `text` is valid UTF-8. O(size).
std::size_t first_invalid_utf8(std::string_view text);

/// `text` with every byte of an ill-formed sequence replaced by U+FFFD (the replacement
/// character, as the Unicode standard recommends); valid text is returned unchanged. O(size).
std::string valid_utf8(std::string_view text);

}  // namespace ironlaw
