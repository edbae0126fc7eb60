// The code in the docs is the code CI builds: every ```cpp block in docs/
// comes right after "<!-- from FILE#NAME -->" and must be, line for line,
// the region of FILE between "// [doc:NAME]" and "// [/doc:NAME]" (the
// markers left out). A C++ block written into a doc by hand fails.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

/// The lines between the markers, or nothing (a missing region fails).
std::vector<std::string> region(const std::string& file,
                                const std::string& name, bool& found) {
  std::vector<std::string> out;
  bool inside = false;
  found = false;
  for (auto& line : lines_of(file)) {
    auto trimmed =
      line.substr(std::min(line.find_first_not_of(' '), line.size()));
    if (trimmed == "// [doc:" + name + "]") {
      inside = true;
      found = true;
    } else if (trimmed == "// [/doc:" + name + "]") {
      inside = false;
    } else if (inside) {
      out.push_back(line);
    }
  }
  return out;
}

} // namespace

TEST_CASE("every_code_block_the_docs_take_from_an_example_is_that_"
          "example_as_ci_builds_it") {
  const std::string root = EF_SOURCE_DIR;
  const std::regex from(R"(<!-- from ([^#\s]+)#([\w-]+) -->)");
  int blocks = 0;
  for (auto& entry :
       std::filesystem::recursive_directory_iterator(root + "/docs")) {
    if (entry.path().extension() != ".md")
      continue;
    auto doc = lines_of(entry.path().string());
    for (size_t i = 0; i < doc.size(); ++i) {
      if (doc[i].rfind("```cpp", 0) == 0) {
        INFO(entry.path().filename().string() + ":" + std::to_string(i + 1) +
             ": a C++ block that no example compiles");
        CHECK((i > 0 && std::regex_search(doc[i - 1], from)));
      }
      std::smatch m;
      if (!std::regex_search(doc[i], m, from))
        continue;
      ++blocks;
      auto where = entry.path().filename().string() + ":" +
                   std::to_string(i + 1) + " (" + m[1].str() + "#" +
                   m[2].str() + ")";
      INFO(where);
      REQUIRE(i + 1 < doc.size());
      REQUIRE(doc[i + 1].rfind("```", 0) == 0);
      std::vector<std::string> shown;
      size_t j = i + 2;
      for (; j < doc.size() && doc[j].rfind("```", 0) != 0; ++j)
        shown.push_back(doc[j]);
      REQUIRE(j < doc.size()); // the block is closed
      bool found = false;
      auto code = region(root + "/" + m[1].str(), m[2].str(), found);
      REQUIRE(found);
      CHECK(shown == code);
    }
  }
  // The docs do show examples (a renamed marker must not pass silently).
  CHECK(blocks >= 4);
}
