// Positions of input errors (core/error.hpp): a key's own position, else its nearest recorded
// ancestor's, else the fallback, and the "file:line:column" text the CLI prints.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "core/error.hpp"

using ironlaw::nearest_location;
using ironlaw::SourceLoc;

TEST_CASE("An error's position is its key's, else its nearest recorded ancestor's, else the file's") {
  const std::map<std::string, SourceLoc> locations = {
      {"training", {"s.yaml", 10, 1}},
      {"training.precision", {"s.yaml", 12, 14}},
      {"parallel.tp", {"s.yaml", 4, 7}},
  };
  const SourceLoc file{"s.yaml", 0, 0};
  CHECK(nearest_location(locations, "training.precision", file).str() == "s.yaml:12:14");
  // Unrecorded keys: the nearest ancestor that is recorded ("training", not "training.x").
  CHECK(nearest_location(locations, "training.optimizer", file).str() == "s.yaml:10:1");
  CHECK(nearest_location(locations, "training.x.y.z", file).str() == "s.yaml:10:1");
  // "parallel" itself is not recorded: the file, with no line.
  CHECK(nearest_location(locations, "parallel.pp", file).str() == "s.yaml");
  CHECK(nearest_location(locations, "", file).str() == "s.yaml");
  // A prefix of a key's text that is not a dotted ancestor does not count.
  CHECK(nearest_location(locations, "trainingX", file).str() == "s.yaml");
}
