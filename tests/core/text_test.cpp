// UTF-8 checks (core/text.hpp): the byte patterns are those of RFC 3629 §4 and the Unicode
// standard's table 3-7 of well-formed sequences, so every expected offset is read off the bytes.
#include <catch2/catch.hpp>

#include <string>

#include "core/text.hpp"

using ironlaw::first_invalid_utf8;
using ironlaw::valid_utf8;

TEST_CASE("Well-formed UTF-8 of one to four bytes is valid") {
  CHECK(first_invalid_utf8("") == std::string::npos);
  CHECK(first_invalid_utf8("plain ASCII, <&\"'>") == std::string::npos);
  CHECK(first_invalid_utf8("caf\xC3\xA9") == std::string::npos);             // U+00E9
  CHECK(first_invalid_utf8("\xE2\x80\x94") == std::string::npos);            // U+2014 em dash
  CHECK(first_invalid_utf8("\xF0\x9F\x98\x80") == std::string::npos);        // U+1F600
  CHECK(first_invalid_utf8("\xF4\x8F\xBF\xBF") == std::string::npos);        // U+10FFFF, the last
}

TEST_CASE("Ill-formed UTF-8 is found at its first byte") {
  CHECK(first_invalid_utf8("ab\xFF") == 2);                    // never a UTF-8 byte
  CHECK(first_invalid_utf8("a\x80z") == 1);                    // a continuation byte alone
  CHECK(first_invalid_utf8("\xC0\xAF") == 0);                  // overlong '/'
  CHECK(first_invalid_utf8("\xE0\x80\xAF") == 0);              // overlong, three bytes
  CHECK(first_invalid_utf8("\xED\xA0\x80") == 0);              // a UTF-16 surrogate, U+D800
  CHECK(first_invalid_utf8("\xF4\x90\x80\x80") == 0);          // U+110000, past the last
  CHECK(first_invalid_utf8("ok\xE2\x82") == 2);                // cut short at the end
  CHECK(first_invalid_utf8("\xC3\xA9\xC3(") == 2);             // second character cut short
}

TEST_CASE("valid_utf8 replaces each ill-formed byte with U+FFFD and keeps valid text as it is") {
  CHECK(valid_utf8("caf\xC3\xA9") == "caf\xC3\xA9");
  CHECK(valid_utf8("a\xFF\xFE" "b") == "a\xEF\xBF\xBD\xEF\xBF\xBD" "b");
  CHECK(valid_utf8("\xE2\x82") == "\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(first_invalid_utf8(valid_utf8("\xC0\xAF\xED\xA0\x80 \xF8")) == std::string::npos);
}
