// The docs are checked against the tree, so a claim about where something
// lives cannot go stale unnoticed:
// - every repository path a doc names (`app/embedded/verifier.cpp`,
//   `tests/actors/`) exists;
// - every folder README lists every source file of its folder, and every
//   file its tables name exists there.
// Docs are docs/ (its dated closing notes excepted: they record what was
// true then), the top README and every folder README.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::vector<std::string> lines_of(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

std::string text_of(const fs::path& path) {
  std::string all;
  for (auto& line : lines_of(path))
    all += line + "\n";
  return all;
}

/// "file:line: what" for each finding.
using findings = std::vector<std::string>;

/// The docs whose claims are checked.
std::vector<fs::path> docs_of(const fs::path& root) {
  std::vector<fs::path> out{root / "README.md"};
  for (auto& entry : fs::recursive_directory_iterator(root / "docs")) {
    auto rel = fs::relative(entry.path(), root).string();
    if (entry.path().extension() == ".md" && rel.rfind("docs/notes/", 0) != 0)
      out.push_back(entry.path());
  }
  for (auto& entry : fs::recursive_directory_iterator(root)) {
    auto rel = fs::relative(entry.path(), root).string();
    if (rel.rfind("build", 0) == 0 || rel.find("node_modules") != rel.npos ||
        rel.rfind(".git", 0) == 0 || rel.rfind("docs/", 0) == 0)
      continue;
    if (entry.path().filename() == "README.md" && rel != "README.md")
      out.push_back(entry.path());
  }
  return out;
}

/// Paths into the repository that `docs` name and `root` does not hold. A
/// path starts at a top-level folder; one followed by a placeholder (`<`,
/// `*`, `{`, `…`) is a pattern, not a path, and installed or generated
/// places (node_modules) are not the repository's.
findings stale_paths(const fs::path& root, const std::vector<fs::path>& docs) {
  static const std::regex path(
    R"((^|[^\w/.~-])((messages|config|persistence|kafka|consumers|applier|)"
    R"(actors|app|include|bench|examples|tests|docs|cmake|scripts|deploy|)"
    R"(\.ci)/[\w./-]*[\w/]))");
  findings out;
  for (auto& doc : docs) {
    auto lines = lines_of(doc);
    for (size_t i = 0; i < lines.size(); ++i) {
      auto& line = lines[i];
      for (auto it = std::sregex_iterator(line.begin(), line.end(), path);
           it != std::sregex_iterator(); ++it) {
        auto name = (*it)[2].str();
        auto after = static_cast<size_t>(it->position(2) + name.size());
        auto next = after < line.size() ? line.substr(after, 3) : "";
        if (next.rfind("<", 0) == 0 || next.rfind("*", 0) == 0 ||
            next.rfind("{", 0) == 0 || next.rfind("…", 0) == 0 ||
            name.find("node_modules") != name.npos)
          continue;
        // A module may be named without its extension.
        if (!fs::exists(root / name) && !fs::exists(root / (name + ".hpp")) &&
            !fs::exists(root / (name + ".cpp")))
          out.push_back(fs::relative(doc, root).string() + ":" +
                        std::to_string(i + 1) + ": names " + name +
                        ", which does not exist");
      }
    }
  }
  return out;
}

/// A public header of some layer (include/eventforge/<layer>/): a layer's
/// README lists its public headers beside its own files.
bool is_public_header(const fs::path& root, const std::string& file) {
  if (!fs::exists(root / "include/eventforge"))
    return false;
  for (auto& entry : fs::directory_iterator(root / "include/eventforge"))
    if (entry.is_directory() && fs::exists(entry.path() / file))
      return true;
  return false;
}

/// A folder README against its folder: each .cpp/.hpp file there is
/// mentioned (its name, or its stem as a word inside backquotes:
/// `verifier`, `order_store.hpp/.cpp`), and each file the README's tables
/// name exists there. A folder without a README of its own is described by
/// its parent's (app/'s layers).
findings unlisted_files(const fs::path& root, const fs::path& folder) {
  findings out;
  auto readme = folder / "README.md";
  bool own = fs::exists(readme);
  if (!own)
    readme = folder.parent_path() / "README.md";
  auto rel_readme = fs::relative(readme, root).string();
  auto text = text_of(readme);
  for (auto& entry : fs::directory_iterator(folder)) {
    auto ext = entry.path().extension();
    if (ext != ".cpp" && ext != ".hpp")
      continue;
    auto stem = entry.path().stem().string();
    std::regex mention("`[^`\\n]*\\b" + stem + "\\b[^`\\n]*`");
    if (!std::regex_search(text, mention))
      out.push_back(rel_readme + ": does not list " +
                    fs::relative(entry.path(), root).string());
  }
  static const std::regex listed(R"(^\| `(\w+)\.(hpp|cpp)(/\.(cpp|hpp))?`)");
  auto lines = own ? lines_of(readme) : std::vector<std::string>{};
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_search(lines[i], m, listed))
      continue;
    auto file = m[1].str() + "." + m[2].str();
    if (!fs::exists(folder / file) && !is_public_header(root, file))
      out.push_back(rel_readme + ":" + std::to_string(i + 1) + ": lists " +
                    file + ", which is not in " +
                    fs::relative(folder, root).string() + "/");
  }
  return out;
}

/// The folders whose README lists their files: the layers.
const std::vector<std::string> layer_folders = {
  "messages", "config",    "persistence", "kafka",        "consumers",
  "applier",  "actors",    "app",         "app/embedded", "app/page",
  "app/http", "app/tools", "bench"};

std::string joined(const findings& xs) {
  std::string out;
  for (auto& x : xs)
    out += "  " + x + "\n";
  return out;
}

} // namespace

TEST_CASE("every_repository_path_the_docs_name_exists") {
  const fs::path root = EF_SOURCE_DIR;
  auto docs = docs_of(root);
  REQUIRE(docs.size() > 20); // the READMEs and docs/ were found
  auto stale = stale_paths(root, docs);
  INFO("stale paths:\n" << joined(stale));
  CHECK(stale.empty());
}

TEST_CASE("every_layer_readme_lists_the_files_of_its_folder_and_no_other") {
  const fs::path root = EF_SOURCE_DIR;
  findings all;
  for (auto& folder : layer_folders) {
    INFO(folder);
    auto found = unlisted_files(root, root / folder);
    all.insert(all.end(), found.begin(), found.end());
  }
  INFO("READMEs out of step with their folders:\n" << joined(all));
  CHECK(all.empty());
}

TEST_CASE("the_tests_readme_names_every_folder_of_the_suite") {
  const fs::path root = EF_SOURCE_DIR;
  auto text = text_of(root / "tests/README.md");
  for (auto& entry : fs::directory_iterator(root / "tests")) {
    auto name = entry.path().filename().string();
    if (!entry.is_directory() || name == "node_modules")
      continue;
    INFO("tests/README.md does not name tests/" << name << "/");
    CHECK(text.find("`" + name + "/`") != std::string::npos);
  }
}

TEST_CASE("the_actor_table_names_a_deterministic_test_for_every_actor") {
  const fs::path root = EF_SOURCE_DIR;
  auto lines = lines_of(root / "docs/architecture.md");
  auto header = std::find_if(lines.begin(), lines.end(), [](auto& l) {
    return l.rfind("| actor | job |", 0) == 0;
  });
  REQUIRE(header != lines.end());
  REQUIRE(header->find("deterministic tests") != std::string::npos);
  static const std::regex test_file(R"(`(\w+_test\.cpp)`)");
  std::set<std::string> named;
  int actors = 0;
  for (auto it = header + 2; it != lines.end() && it->rfind("| ", 0) == 0;
       ++it) {
    ++actors;
    auto last = it->substr(it->rfind("| ", it->size() - 3));
    std::smatch m;
    INFO("docs/architecture.md: " << it->substr(0, 40)
                                  << "... names no test file");
    REQUIRE(std::regex_search(last, m, test_file));
    INFO(m[1].str() << " is not in tests/actors/");
    CHECK(fs::exists(root / "tests/actors" / m[1].str()));
    named.insert(m[1].str());
  }
  CHECK(actors >= 10);
  // And no actor test file the table does not name.
  for (auto& entry : fs::directory_iterator(root / "tests/actors")) {
    INFO(entry.path().filename().string() << " is not in the actor table");
    CHECK(named.count(entry.path().filename().string()) == 1);
  }
}

TEST_CASE("the_doc_checks_fail_on_a_planted_stale_path_and_an_unlisted_file") {
  const fs::path root = EF_SOURCE_DIR;
  auto scratch =
    fs::temp_directory_path() / ("ef-docs-test-" + std::to_string(::getpid()));
  fs::remove_all(scratch);
  fs::create_directories(scratch / "consumers");
  // The architecture doc with the path the verifier had before it moved.
  auto doc = scratch / "architecture.md";
  fs::copy_file(root / "docs/architecture.md", doc);
  auto lines = lines_of(doc).size();
  std::ofstream(doc, std::ios::app)
    << "The verifier lives in `app/tools/verifier.cpp`.\n";
  auto stale = stale_paths(root, {doc});
  INFO(joined(stale));
  REQUIRE(stale.size() == 1);
  CHECK(stale[0].find(":" + std::to_string(lines + 1) +
                      ": names app/tools/verifier.cpp") != std::string::npos);
  // A folder with a file its README does not list, and a README that lists
  // a file the folder does not have.
  std::ofstream(scratch / "consumers/README.md")
    << "| file | holds |\n|---|---|\n| `billing.hpp/.cpp` | billing |\n";
  std::ofstream(scratch / "consumers/loyalty.cpp") << "\n";
  auto unlisted = unlisted_files(scratch, scratch / "consumers");
  INFO(joined(unlisted));
  REQUIRE(unlisted.size() == 2);
  CHECK(unlisted[0] ==
        "consumers/README.md: does not list consumers/loyalty.cpp");
  CHECK(unlisted[1] == "consumers/README.md:3: lists billing.hpp, which is "
                       "not in consumers/");
  fs::remove_all(scratch);
}
