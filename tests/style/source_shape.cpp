// The shape check of issue 32: no function over 80 lines anywhere in the
// product's sources, and no source over 300 lines under actors/ or app/,
// except the declared exceptions (source_shape_exceptions.txt).
//
//   source_shape <root> [exceptions file]
//
// It prints one line per offence and exits 1 if there is any:
//   actors/x.cpp:12: function ef::start is 133 lines (limit 80)
//   app/main.cpp: 644 lines (limit 300)
//   source_shape_exceptions.txt:7: actors/x.cpp table is within its limit
//     now: the exception no longer applies, remove it
//
// The rules it measures:
// - A file's length is its number of lines (what `wc -l` counts, plus an
//   unterminated last line), comments and blank lines included: a reader
//   scrolls through those too.
// - A function is a body at namespace or class scope: a `{` whose
//   declaration ends in `)` (with any of const, noexcept, override, final,
//   mutable, &, &&, a trailing return type or a constructor's initializer
//   list after it), or a lambda that initializes a variable or sits in an
//   initializer (a table of handlers). Its length runs from the line its
//   declaration starts on (template header and attributes included; a
//   lambda in a table starts at its `[`) to the line of its closing brace,
//   both included. Everything inside a body (blocks, local classes, lambdas)
//   counts toward that body.
// - Comments, string and character literals (raw strings too) and
//   preprocessor lines are blanked before braces are read, so a `{` in any
//   of them is not code.
//
// It is plain C++17 with no dependency: CI machines have no Python, and it
// needs nothing of EventForge built.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

constexpr int function_limit = 80;
constexpr int file_limit = 300;

// The folders scanned, and those whose files have the file limit.
const std::vector<std::string> scanned = {
  "messages", "config", "persistence", "kafka",   "consumers", "applier",
  "actors",   "app",    "bench",       "include", "examples"};
const std::vector<std::string> file_limited = {"actors", "app"};

bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// --- blanking -------------------------------------------------------------

// Replaces comments, the insides of string and character literals and
// preprocessor lines with spaces, keeping every newline, so that offsets
// and line numbers of the result are those of the source.
std::string blank(const std::string& s) {
  std::string out = s;
  auto erase = [&](size_t from, size_t to) {
    for (size_t i = from; i < to && i < out.size(); ++i)
      if (out[i] != '\n')
        out[i] = ' ';
  };
  bool line_start = true; // only whitespace so far on this line
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (line_start && c == '#') { // a directive, with its continuations
      size_t end = i;
      while (end < s.size() && s[end] != '\n')
        end += (s[end] == '\\' && end + 1 < s.size()) ? 2 : 1;
      erase(i, end);
      i = end;
      continue;
    }
    if (!std::isspace(static_cast<unsigned char>(c)))
      line_start = false;
    if (s.compare(i, 2, "//") == 0) {
      size_t end = s.find('\n', i);
      end = end == std::string::npos ? s.size() : end;
      erase(i, end);
      i = end;
    } else if (s.compare(i, 2, "/*") == 0) {
      size_t end = s.find("*/", i + 2);
      end = end == std::string::npos ? s.size() : end + 2;
      erase(i, end);
      i = end;
    } else if (c == 'R' && i + 1 < s.size() && s[i + 1] == '"' &&
               (i == 0 || !ident_char(s[i - 1]) || s[i - 1] == '8' ||
                s[i - 1] == 'u' || s[i - 1] == 'U' || s[i - 1] == 'L')) {
      // R"delim( ... )delim": blank everything between the quotes.
      size_t open = s.find('(', i + 2);
      if (open == std::string::npos)
        return out;
      std::string close = ")" + s.substr(i + 2, open - i - 2) + "\"";
      size_t end = s.find(close, open);
      end = end == std::string::npos ? s.size() : end + close.size();
      erase(i + 2, end - 1);
      i = end;
    } else if (c == '"' || c == '\'') {
      // A ' after a digit run is a digit separator (1'000), not a literal.
      if (c == '\'' && i > 0 && ident_char(s[i - 1])) {
        size_t b = i;
        while (b > 0 && ident_char(s[b - 1]))
          --b;
        if (std::isdigit(static_cast<unsigned char>(s[b]))) {
          ++i;
          continue;
        }
      }
      size_t end = i + 1;
      while (end < s.size() && s[end] != c && s[end] != '\n')
        end += s[end] == '\\' ? 2 : 1;
      erase(i + 1, end);
      i = end + 1;
    } else {
      ++i;
    }
  }
  return out;
}

// --- reading declarations -------------------------------------------------

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos)
    return {};
  size_t e = s.find_last_not_of(" \t\n");
  return s.substr(b, e - b + 1);
}

// The head with whitespace runs folded to one space, which is all the
// classification below needs.
std::string fold(const std::string& s) {
  std::string out;
  for (char c : s) {
    bool space = std::isspace(static_cast<unsigned char>(c));
    if (space && (out.empty() || out.back() == ' '))
      continue;
    out += space ? ' ' : c;
  }
  return trim(out);
}

bool starts_with_word(const std::string& s, const std::string& word) {
  return s.compare(0, word.size(), word) == 0 &&
         (s.size() == word.size() || !ident_char(s[word.size()]));
}

bool ends_with_word(const std::string& s, const std::string& word) {
  return s.size() >= word.size() &&
         s.compare(s.size() - word.size(), word.size(), word) == 0 &&
         (s.size() == word.size() ||
          !ident_char(s[s.size() - word.size() - 1]));
}

// Drops what may precede a declaration without being its kind: access
// specifiers, attributes, `template <...>` headers and `extern` storage.
std::string strip_prefixes(std::string h) {
  for (bool again = true; again;) {
    again = false;
    for (const char* access : {"public:", "private:", "protected:"})
      if (h.rfind(access, 0) == 0) {
        h = trim(h.substr(std::string(access).size()));
        again = true;
      }
    if (h.rfind("[[", 0) == 0) {
      size_t end = h.find("]]");
      h = end == std::string::npos ? "" : trim(h.substr(end + 2));
      again = true;
    }
    if (starts_with_word(h, "template")) {
      size_t i = h.find('<');
      int depth = 0;
      for (; i != std::string::npos && i < h.size(); ++i) {
        depth += h[i] == '<' ? 1 : h[i] == '>' ? -1 : 0;
        if (depth == 0)
          break;
      }
      h = i == std::string::npos || i >= h.size() ? "" : trim(h.substr(i + 1));
      again = true;
    }
  }
  return h;
}

// The last `=` outside parentheses and brackets that is an assignment (not
// ==, <=, >=, != or operator=), or npos.
size_t initializer_equals(const std::string& h) {
  int depth = 0;
  size_t found = std::string::npos;
  for (size_t i = 0; i < h.size(); ++i) {
    char c = h[i];
    if (c == '(' || c == '[')
      ++depth;
    else if (c == ')' || c == ']')
      --depth;
    else if (c == '=' && depth == 0) {
      char prev = i > 0 ? h[i - 1] : ' ';
      char next = i + 1 < h.size() ? h[i + 1] : ' ';
      if (next == '=' || prev == '=' || prev == '<' || prev == '>' ||
          prev == '!')
        continue;
      if (ends_with_word(trim(h.substr(0, i)), "operator"))
        continue;
      found = i;
    }
  }
  return found;
}

// Whether a head (folded) ends as a function declarator does: `)` followed
// only by qualifiers, or by a trailing return type.
bool ends_as_function(std::string h) {
  for (bool again = true; again && !h.empty();) {
    again = false;
    for (const char* q : {"const", "noexcept", "override", "final", "mutable",
                          "try", "volatile", "&&", "&"}) {
      std::string w = q;
      bool word = ident_char(w[0]);
      if (word ? ends_with_word(h, w)
               : h.size() >= w.size() &&
                   h.compare(h.size() - w.size(), w.size(), w) == 0) {
        h = trim(h.substr(0, h.size() - w.size()));
        again = true;
      }
    }
  }
  if (!h.empty() && h.back() == ')')
    return true;
  // A trailing return type: `) -> type` at parenthesis depth 0.
  int depth = 0;
  for (size_t i = 0; i + 1 < h.size(); ++i) {
    depth += h[i] == '(' ? 1 : h[i] == ')' ? -1 : 0;
    if (depth == 0 && h[i] == '-' && h[i + 1] == '>' &&
        ends_as_function(trim(h.substr(0, i))))
      return true;
  }
  return false;
}

// Whether the head is a constructor's declaration with an unfinished
// initializer list: `...) : member`, a single colon at depth 0 after `)`.
bool in_initializer_list(const std::string& h) {
  int depth = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    char c = h[i];
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (c == ':' && depth == 0) {
      bool single =
        (i + 1 >= h.size() || h[i + 1] != ':') && (i == 0 || h[i - 1] != ':');
      if (single && ends_as_function(trim(h.substr(0, i))))
        return true;
    }
  }
  return false;
}

// The name a function declaration declares: the qualified identifier (or
// operator) before its first parameter list outside template brackets.
std::string function_name(const std::string& head) {
  std::string h = strip_prefixes(fold(head));
  size_t eq = initializer_equals(h);
  if (eq != std::string::npos) { // `auto name = [..](..) {`
    std::string lhs = trim(h.substr(0, eq));
    size_t b = lhs.size();
    while (b > 0 && ident_char(lhs[b - 1]))
      --b;
    return lhs.substr(b) + " (lambda)";
  }
  int angle = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    if (starts_with_word(h.substr(i), "operator") &&
        (i == 0 || !ident_char(h[i - 1]))) {
      size_t paren = h.find('(', i + 8);
      if (h.compare(i + 8, 3, "()(") == 0 || h.compare(i + 8, 4, " ()(") == 0)
        paren = h.find('(', h.find(')', i) + 1);
      size_t b = i;
      while (b > 0 && (ident_char(h[b - 1]) || h[b - 1] == ':'))
        --b;
      return trim(h.substr(b, paren - b));
    }
    char c = h[i];
    if (c == '<')
      ++angle;
    else if (c == '>' && angle > 0 && (i == 0 || h[i - 1] != '-'))
      --angle;
    else if (c == '(' && angle == 0) {
      size_t e = i;
      while (e > 0 && h[e - 1] == ' ')
        --e;
      size_t b = e;
      while (b > 0 &&
             (ident_char(h[b - 1]) || h[b - 1] == ':' || h[b - 1] == '~'))
        --b;
      return b == e ? "(unnamed)" : h.substr(b, e - b);
    }
  }
  return "(unnamed)";
}

// --- scanning -------------------------------------------------------------

enum class scope { space, type, function, initializer, member_init };

struct offence {
  std::string path; // relative to the root
  int line;         // 0: the whole file
  std::string name; // the function's name, or "file"
  int length;
  int limit;
};

struct frame {
  scope kind;
  int start_line;   // where a function's declaration starts
  std::string name; // a function's name
  std::string head; // a member initializer's enclosing head, to resume
  size_t head_start;
};

class scanner {
public:
  scanner(std::string path, std::string text)
      : path_(std::move(path)), text_(blank(text)) {
    line_of_.reserve(text_.size() + 1);
    int line = 1;
    for (char c : text_) {
      line_of_.push_back(line);
      line += c == '\n';
    }
    line_of_.push_back(line);
  }

  std::vector<offence> functions() {
    std::vector<offence> found;
    std::vector<frame> stack;
    std::string head;      // the code since the last `;`, `{` or `}`
    size_t head_start = 0; // the offset of its first character
    auto reset = [&](size_t at) {
      head.clear();
      head_start = at;
    };
    auto inside_function = [&] {
      return std::any_of(stack.begin(), stack.end(), [](const frame& f) {
        return f.kind == scope::function;
      });
    };
    for (size_t i = 0; i < text_.size(); ++i) {
      char c = text_[i];
      bool in_function = inside_function();
      if (c == '{') {
        frame f{in_function ? scope::initializer : classify(stack, head),
                0,
                {},
                {},
                0};
        if (f.kind == scope::function) {
          f.start_line = line_of_[first_code(head_start, i)];
          f.name = function_name(head);
          if (!stack.empty() && stack.back().kind != scope::space &&
              stack.back().kind != scope::type) { // a lambda in data
            f.name = "lambda";
            f.start_line = line_of_[lambda_start(head_start, i)];
          }
        }
        if (f.kind == scope::member_init) {
          f.head = head;
          f.head_start = head_start;
        }
        stack.push_back(f);
        reset(i + 1);
      } else if (c == '}') {
        if (stack.empty())
          continue; // unbalanced (a brace in #if branches): ignore
        frame f = stack.back();
        stack.pop_back();
        if (f.kind == scope::function) {
          int length = line_of_[i] - f.start_line + 1;
          if (length > function_limit)
            found.push_back(
              {path_, f.start_line, f.name, length, function_limit});
        }
        if (f.kind == scope::member_init) { // the declaration goes on
          head = f.head + "{}";
          head_start = f.head_start;
        } else {
          reset(i + 1);
        }
      } else if (c == ';' || (c == ',' && !stack.empty() &&
                              stack.back().kind == scope::initializer)) {
        // In an initializer, each element is its own head (a lambda in a
        // table is found by what precedes it in its own element).
        if (c == ';' || paren_depth(head) == 0)
          reset(i + 1);
        else
          head += c;
      } else {
        if (head.empty() && std::isspace(static_cast<unsigned char>(c)))
          head_start = i + 1;
        else
          head += c;
      }
    }
    return found;
  }

private:
  static int paren_depth(const std::string& h) {
    int depth = 0;
    for (char c : h)
      depth += c == '(' || c == '[' ? 1 : c == ')' || c == ']' ? -1 : 0;
    return depth;
  }

  // Where the last operand of a head starts: after its last unclosed `(`
  // or `[`, or its last `,` or `=` outside brackets.
  static size_t operand_start(const std::string& h) {
    int depth = 0;
    for (size_t i = h.size(); i-- > 0;) {
      char c = h[i];
      if (c == ')' || c == ']') {
        ++depth;
      } else if (c == '(' || c == '[') {
        if (depth == 0)
          return i + 1;
        --depth;
      } else if (depth == 0 && (c == ',' || c == '=')) {
        return i + 1;
      }
    }
    return 0;
  }

  // What a `{` at namespace, class or initializer scope opens.
  static scope classify(const std::vector<frame>& stack,
                        const std::string& raw) {
    std::string h = strip_prefixes(fold(raw));
    scope outer = stack.empty() ? scope::space : stack.back().kind;
    if (outer == scope::initializer || outer == scope::member_init) {
      // Only a lambda is a function here; anything else is data.
      return is_lambda(h) ? scope::function : scope::initializer;
    }
    if (ends_with_word(h, "namespace") || h.rfind("namespace ", 0) == 0 ||
        h.rfind("inline namespace", 0) == 0 || h == "extern \"\"")
      return scope::space;
    if (in_initializer_list(h))
      return ends_as_function(h) || h.back() == '}' ? scope::function
                                                    : scope::member_init;
    if (initializer_equals(h) != std::string::npos)
      return is_lambda(h) ? scope::function : scope::initializer;
    for (const char* k : {"class", "struct", "union", "enum"})
      if (starts_with_word(h, k))
        return scope::type;
    return ends_as_function(h) ? scope::function : scope::initializer;
  }

  // `[captures] (params) qualifiers`, or `[captures]` alone, at the end of
  // the head: after its last unclosed `(`, its last `,` or `=`.
  static bool is_lambda(const std::string& raw) {
    std::string h = trim(raw.substr(operand_start(raw)));
    if (h.empty() || h[0] != '[' || h.rfind("[[", 0) == 0)
      return false;
    return h.back() == ']' || ends_as_function(h);
  }

  size_t first_code(size_t from, size_t brace) const {
    for (size_t i = from; i < brace; ++i)
      if (!std::isspace(static_cast<unsigned char>(text_[i])))
        return i;
    return brace;
  }

  size_t lambda_start(size_t from, size_t brace) const {
    return first_code(from + operand_start(text_.substr(from, brace - from)),
                      brace);
  }

  std::string path_;
  std::string text_;
  std::vector<int> line_of_;
};

// --- the tree and the exceptions ------------------------------------------

struct exception_entry {
  int line; // in the exceptions file
  std::string path;
  std::string name; // a function's name, or "file"
  std::string reason;
  bool used = false;
};

std::vector<exception_entry> read_exceptions(const fs::path& file,
                                             std::vector<std::string>& errors) {
  std::vector<exception_entry> out;
  if (file.empty())
    return out;
  std::ifstream in(file);
  if (!in) {
    errors.push_back(file.string() + ": cannot read the exceptions");
    return out;
  }
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::string t = trim(line);
    if (t.empty() || t[0] == '#')
      continue;
    std::istringstream fields(t);
    exception_entry e{n, {}, {}, {}};
    fields >> e.path >> e.name;
    std::getline(fields, e.reason);
    e.reason = trim(e.reason);
    if (e.reason.empty())
      errors.push_back(file.filename().string() + ":" + std::to_string(n) +
                       ": an exception needs a path, a name and a reason");
    else
      out.push_back(e);
  }
  return out;
}

bool skipped_dir(const fs::path& p) {
  std::string name = p.filename().string();
  return name.empty() || name[0] == '.' || name.rfind("build", 0) == 0;
}

std::vector<fs::path> sources(const fs::path& root) {
  std::vector<fs::path> out;
  for (const auto& dir : scanned) {
    if (!fs::is_directory(root / dir))
      continue;
    auto it = fs::recursive_directory_iterator(root / dir);
    for (; it != fs::recursive_directory_iterator(); ++it) {
      if (it->is_directory() && skipped_dir(it->path())) {
        it.disable_recursion_pending();
        continue;
      }
      auto ext = it->path().extension();
      if (it->is_regular_file() && (ext == ".cpp" || ext == ".hpp"))
        out.push_back(fs::relative(it->path(), root));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

int count_lines(const std::string& text) {
  int n = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  return n + (!text.empty() && text.back() != '\n');
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: source_shape <root> [exceptions file]\n";
    return 2;
  }
  fs::path root = argv[1];
  fs::path exceptions_file = argc == 3 ? argv[2] : "";
  std::vector<std::string> errors;
  auto exceptions = read_exceptions(exceptions_file, errors);

  std::vector<offence> offences;
  for (const auto& rel : sources(root)) {
    std::ifstream in(root / rel, std::ios::binary);
    std::string text{std::istreambuf_iterator<char>(in), {}};
    std::string path = rel.generic_string();
    std::string top = path.substr(0, path.find('/'));
    if (std::find(file_limited.begin(), file_limited.end(), top) !=
          file_limited.end() &&
        count_lines(text) > file_limit)
      offences.push_back({path, 0, "file", count_lines(text), file_limit});
    for (auto& o : scanner(path, text).functions())
      offences.push_back(std::move(o));
  }

  int functions = 0, files = 0, excused = 0;
  for (const auto& o : offences) {
    auto e = std::find_if(exceptions.begin(), exceptions.end(), [&](auto& x) {
      return x.path == o.path && x.name == o.name;
    });
    if (e != exceptions.end()) {
      e->used = true;
      ++excused;
      continue;
    }
    if (o.line == 0) {
      ++files;
      std::cout << o.path << ": " << o.length << " lines (limit " << o.limit
                << ")\n";
    } else {
      ++functions;
      std::cout << o.path << ":" << o.line << ": function " << o.name << " is "
                << o.length << " lines (limit " << o.limit << ")\n";
    }
  }
  for (const auto& e : exceptions)
    if (!e.used)
      errors.push_back(exceptions_file.filename().string() + ":" +
                       std::to_string(e.line) + ": " + e.path + " " + e.name +
                       " is within its limit now: the exception no longer "
                       "applies, remove it");
  for (const auto& e : errors)
    std::cout << e << "\n";
  std::cout << functions << " functions over " << function_limit << " lines, "
            << files << " files over " << file_limit << " lines, " << excused
            << " declared exceptions\n";
  return functions + files + errors.size() == 0 ? 0 : 1;
}
