#include <catch2/catch.hpp>

#include "config/units.hpp"

using namespace ironlaw::config;

namespace {

double parsed(const std::string& text, Dimension d) {
  std::string error;
  const auto value = parse_quantity(text, d, &error);
  INFO(text << ": " << error);
  REQUIRE(value.has_value());
  return *value;
}

std::string error_of(const std::string& text, Dimension d) {
  std::string error;
  const auto value = parse_quantity(text, d, &error);
  REQUIRE_FALSE(value.has_value());
  return error;
}

}  // namespace

TEST_CASE("sizes know GB from GiB and bytes from bits", "[units]") {
  CHECK(parsed("80 GB", Dimension::bytes) == 80e9);
  CHECK(parsed("80 GiB", Dimension::bytes) == 80.0 * 1024 * 1024 * 1024);
  CHECK(parsed("32 KiB", Dimension::bytes) == 32768);
  CHECK(parsed("4 MiB", Dimension::bytes) == 4194304);
  CHECK(parsed("25 MB", Dimension::bytes) == 25e6);
  CHECK(parsed("8 bit", Dimension::bytes) == 1);
  CHECK(parsed("16 b", Dimension::bytes) == 2);
  CHECK(parsed("1 Gbit", Dimension::bytes) == 125e6);
  CHECK(parsed("1 TB", Dimension::bytes) == 1e12);
}

TEST_CASE("bandwidths are bytes per second, written in bytes or bits", "[units]") {
  CHECK(parsed("400 Gbit/s", Dimension::bandwidth) == 50e9);
  CHECK(parsed("400 Gb/s", Dimension::bandwidth) == 50e9);
  CHECK(parsed("400 Gbps", Dimension::bandwidth) == 50e9);
  CHECK(parsed("50 GB/s", Dimension::bandwidth) == 50e9);
  CHECK(parsed("2 GiB/s", Dimension::bandwidth) == 2.0 * 1024 * 1024 * 1024);
  CHECK(parsed("3.35 TB/s", Dimension::bandwidth) == Approx(3.35e12));
}

TEST_CASE("counts take SI and binary suffixes", "[units]") {
  CHECK(parsed("15 T", Dimension::count) == 1.5e13);
  CHECK(parsed("4 Mi", Dimension::count) == 4.0 * 1048576);
  CHECK(parsed("2 k", Dimension::count) == 2000);
  CHECK(parsed("1.5 M", Dimension::count) == 1.5e6);
  CHECK(parsed("64 Ki", Dimension::count) == 65536);
}

TEST_CASE("times run from nanoseconds to days", "[units]") {
  CHECK(parsed("5 us", Dimension::time) == Approx(5e-6));
  CHECK(parsed("5 \xC2\xB5s", Dimension::time) == Approx(5e-6));
  CHECK(parsed("300 ns", Dimension::time) == Approx(3e-7));
  CHECK(parsed("2 ms", Dimension::time) == Approx(2e-3));
  CHECK(parsed("30 min", Dimension::time) == 1800);
  CHECK(parsed("2 h", Dimension::time) == 7200);
  CHECK(parsed("1 d", Dimension::time) == 86400);
}

TEST_CASE("FLOP counts and FLOP rates are different dimensions", "[units]") {
  CHECK(parsed("989.4 TFLOPS", Dimension::flop_rate) == Approx(989.4e12));
  CHECK(parsed("989.4 TFLOP/s", Dimension::flop_rate) == Approx(989.4e12));
  CHECK(parsed("3.8e25 FLOP", Dimension::flops) == Approx(3.8e25));
  CHECK(parsed("6 EFLOPs", Dimension::flops) == Approx(6e18));
  CHECK(error_of("989.4 TFLOPS", Dimension::flops) ==
        "expected a FLOP count like \"3.8e25 FLOP\", got \"989.4 TFLOPS\", which is a FLOP rate");
}

TEST_CASE("plain numbers and scientific notation are SI base units", "[units]") {
  CHECK(parsed("8.03e9", Dimension::count) == 8.03e9);
  CHECK(parsed("1e-3", Dimension::time) == 1e-3);
  CHECK(parsed("  42  ", Dimension::bytes) == 42);
  CHECK(parsed("-5", Dimension::count) == -5);
  CHECK(parsed("+.5", Dimension::count) == 0.5);
  CHECK(parsed("2.5", Dimension::price) == 2.5);
}

TEST_CASE("a unit of the wrong dimension names the expected dimension with an example", "[units]") {
  CHECK(error_of("400 GB", Dimension::bandwidth) ==
        "expected a bandwidth like \"400 Gbit/s\", got \"400 GB\", which is a size");
  CHECK(error_of("5 GB/s", Dimension::time) == "expected a time like \"5 us\", got \"5 GB/s\", which is a bandwidth");
  CHECK(error_of("80 GiB", Dimension::count) == "expected a number like \"15 T\", got \"80 GiB\", which is a size");
  CHECK(error_of("15 T", Dimension::bytes) == "expected a size like \"80 GiB\", got \"15 T\", which is a number");
}

TEST_CASE("text that is not a quantity is rejected", "[units]") {
  CHECK(error_of("fast", Dimension::bandwidth) == "expected a bandwidth like \"400 Gbit/s\", got \"fast\"");
  CHECK(error_of("", Dimension::time) == "expected a time like \"5 us\", got \"\"");
  CHECK(error_of("5 parsecs", Dimension::time) ==
        "expected a time like \"5 us\", got \"5 parsecs\" (unknown unit \"parsecs\")");
  CHECK(error_of("4 gib", Dimension::bytes) == "expected a size like \"80 GiB\", got \"4 gib\" (unknown unit \"gib\")");
  CHECK(error_of("inf", Dimension::count) == "expected a number like \"15 T\", got \"inf\"");
  CHECK(error_of("nan", Dimension::count) == "expected a number like \"15 T\", got \"nan\"");
  CHECK(error_of("1e999", Dimension::count) == "number out of range: \"1e999\"");
  CHECK(error_of("1e300 EB", Dimension::bytes) == "number out of range: \"1e300 EB\"");
  CHECK(error_of("0x10", Dimension::count) == "expected a number like \"15 T\", got \"0x10\" (unknown unit \"x10\")");
}

TEST_CASE("which dimensions need a unit, and the forms a bare number is suggested in", "[units]") {
  for (Dimension d : {Dimension::bytes, Dimension::bandwidth, Dimension::time, Dimension::flops, Dimension::flop_rate})
    CHECK(needs_unit(d));
  CHECK_FALSE(needs_unit(Dimension::count));
  CHECK_FALSE(needs_unit(Dimension::price));
  CHECK(is_bare_number(" 0.5 "));
  CHECK(is_bare_number("1e18"));
  CHECK_FALSE(is_bare_number("0.5 s"));
  CHECK_FALSE(is_bare_number("15 T"));
  CHECK_FALSE(is_bare_number("abc"));
  // The base unit as written, then the prefixed unit putting the value in [1, 1000): 0.5 s =
  // 500 ms; 1e18 B/s = 1 EB/s; 2^25 B = 32 MiB (33.554432 MB is not whole); 989.4e12 FLOP/s.
  CHECK(unit_suggestions("0.5", 0.5, Dimension::time) == std::vector<std::string>{"0.5 s", "500 ms"});
  CHECK(unit_suggestions("2", 2, Dimension::time) == std::vector<std::string>{"2 s"});
  CHECK(unit_suggestions("7200", 7200, Dimension::time) == std::vector<std::string>{"7200 s", "2 h"});
  CHECK(unit_suggestions("1e18", 1e18, Dimension::bandwidth) == std::vector<std::string>{"1e18 B/s", "1 EB/s"});
  CHECK(unit_suggestions("33554432", 33554432, Dimension::bytes) == std::vector<std::string>{"33554432 B", "32 MiB"});
  CHECK(unit_suggestions("2e9", 2e9, Dimension::bytes) == std::vector<std::string>{"2e9 B", "2 GB"});
  CHECK(unit_suggestions("989.4e12", 989.4e12, Dimension::flop_rate) ==
        std::vector<std::string>{"989.4e12 FLOPS", "989.4 TFLOPS"});
  CHECK(unit_suggestions("3.14e23", 3.14e23, Dimension::flops) == std::vector<std::string>{"3.14e23 FLOP", "314 ZFLOP"});
  // Every suggested form reads back as the same value.
  for (const auto& form : unit_suggestions("0.5", 0.5, Dimension::time)) CHECK(parsed(form, Dimension::time) == Approx(0.5));
}
