// test_python_string.cpp — lib/text/python_string against Python itself (SG_PYTHON): strip,
// rstrip, capitalize, len, len(re.split(r"\s+", ·)), replace and isspace on strings chosen to
// catch the differences between Python's Unicode rules and ASCII ones.
#include "lib/text/python_string.h"

#include <nlohmann/json.hpp>

#include "tests/support.h"

namespace {

const std::vector<std::string> kSamples = {
    "",
    "  hello world  ",
    "\t\n\x0b\x0c\r x \x1c\x1d\x1e\x1f",       // Python's isspace takes U+001C–001F; Unicode White_Space does not
    "\xc2\xa0nbsp\xc2\xa0",                    // U+00A0
    "\xe2\x80\x83" "em space\xe3\x80\x80",     // U+2003, U+3000
    "\xc2\x85next line",                       // U+0085
    "\xe2\x80\x8bzero width",                  // U+200B: not white space
    "hELLO wORLD",
    "\xc3\x9f" "eta",                          // ß: title case "Ss"
    "\xc7\x86" "DZ",                           // ǆ: title case ǅ
    "\xc4\xb0stanbul",                         // İ stays, the rest lowered
    "\xce\xa3\xce\x9f\xce\xa3",                // ΣΟΣ: final sigma when lowered
    "a\xce\xa3",                              // aΣ: the final sigma's context is the first letter
    "\xce\xa3",                               // Σ alone
    "123 abc",
    "a  b   c",
    " [title] a [step] b  c ",
};

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (const unsigned char c : bytes) out += {digits[c >> 4], digits[c & 15]};
  return out;
}

std::string unhex(const std::string& text) {
  std::string out;
  for (size_t i = 0; i + 1 < text.size(); i += 2) out += static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16));
  return out;
}

}  // namespace

TEST_CASE("Python's str operations, as Python computes them") {
  sg_test::Scratch scratch;
  {
    std::ofstream out(scratch / "in.txt");
    for (const auto& sample : kSamples) out << hex(sample) << "\n";
  }
  const std::string script =
      "import re,sys,json\n"
      "h=lambda s: s.encode('utf-8').hex()\n"
      "out=[]\n"
      "for line in open(sys.argv[1]):\n"
      "  s=bytes.fromhex(line.strip()).decode('utf-8')\n"
      "  out.append(dict(strip=h(s.strip()),rstrip=h(s.rstrip()),cap=h(s.capitalize()),len=len(s),"
      "split=len(re.split(r'\\s+',s)),rep=h(s.replace('  ',' ')),space=[c.isspace() for c in s]))\n"
      "json.dump(out,open(sys.argv[2],'w'))\n";
  std::ofstream(scratch / "reference.py") << script;
  const std::string command = sg_test::shell_quote(SG_PYTHON) + " " + sg_test::shell_quote(scratch / "reference.py") + " " +
                              sg_test::shell_quote(scratch / "in.txt") + " " + sg_test::shell_quote(scratch / "out.json");
  REQUIRE(std::system(command.c_str()) == 0);
  const auto reference = nlohmann::json::parse(sg_test::slurp(scratch / "out.json"));
  REQUIRE(reference.size() == kSamples.size());
  for (size_t i = 0; i < kSamples.size(); ++i) {
    const auto& s = kSamples[i];
    const auto& r = reference[i];
    INFO("sample " << i << ": " << s);
    CHECK(std::string(sg::python_strip(s)) == unhex(r["strip"]));
    CHECK(std::string(sg::python_rstrip(s)) == unhex(r["rstrip"]));
    CHECK(sg::python_capitalize(s) == unhex(r["cap"]));
    CHECK(sg::python_length(s) == r["len"].get<int64_t>());
    CHECK(sg::whitespace_split_count(s) == r["split"].get<int64_t>());
    CHECK(sg::python_replace(s, "  ", " ") == unhex(r["rep"]));
    std::vector<bool> spaces;
    for (size_t position = 0; position < s.size();) spaces.push_back(sg::python_isspace(sg::next_code_point(s, position)));
    CHECK(spaces == r["space"].get<std::vector<bool>>());
  }
}

TEST_CASE("replace is non-overlapping, left to right") {
  CHECK(sg::python_replace("= = = =", "= = =", "===") == "=== =");
  CHECK(sg::python_replace("aaaa", "aa", "b") == "bb");
  CHECK(sg::python_replace("abc", "x", "y") == "abc");
}
