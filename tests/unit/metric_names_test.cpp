// Every series the code names is in the catalog. telemetry looks series up
// by name and drops a name it does not know (a gauge set under a misspelled
// name is simply absent from /metrics), so a typo would pass every other
// test: this reads the sources and checks each literal name handed to the
// telemetry (set, add, observe, unset, declare) against metric_catalog().

#include "actors/metric_catalog.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>

namespace fs = std::filesystem;

TEST_CASE("every_series_name_the_code_hands_the_telemetry_is_in_the_catalog") {
  const fs::path root = EF_SOURCE_DIR;
  // `metrics->set(` , `metrics_->add(`, `ctx->metrics->observe(` and the
  // like, the name possibly on the next line.
  static const std::regex call(
    R"(metrics_?(?:\(\))?(?:->|\.)(?:set|add|observe|unset|declare)\(\s*"([a-z_0-9]+)\")");
  std::set<std::string> named;
  for (auto dir : {"actors", "app", "applier", "consumers", "kafka",
                   "persistence", "bench", "include"})
    for (auto& f : fs::recursive_directory_iterator(root / dir)) {
      auto ext = f.path().extension();
      if (ext != ".cpp" && ext != ".hpp")
        continue;
      std::ifstream in(f.path());
      std::string text((std::istreambuf_iterator<char>(in)), {});
      for (std::sregex_iterator m(text.begin(), text.end(), call), end;
           m != end; ++m) {
        auto name = (*m)[1].str();
        named.insert(name);
        INFO(f.path().lexically_relative(root).string() << " names " << name);
        CHECK(ef::metric_catalog().count(name) == 1);
      }
    }
  // The scan finds the calls at all (a changed call style would make this
  // test pass vacuously).
  CHECK(named.size() >= 30);
  CHECK(named.count("relay_published_total") == 1);
  CHECK(named.count("consumer_paused") == 1);
}
