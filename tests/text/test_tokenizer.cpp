// Tests of lib/text/tokenizer, with lib/text/unicode (character classes, UTF-8 repair) and
// lib/text/vocabulary (the readers, through Tokenizer::load). Every expected id comes from tiktoken's
// gpt2 encoding (or HF tokenizers), run by tests/tokenizer_reference.py on the same bytes; nothing is
// compared with our own output.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "lib/base/error.h"
#include "lib/text/tokenizer.h"
#include "lib/text/unicode.h"
#include "tests/support.h"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using namespace std::string_literals;

// A fresh folder under the system's temporary folder, removed with everything in it at the end
// (by sg_test::remove_tree: see tests/support.h).
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    path = fs::temp_directory_path() / ("sg-test-tokenizer-" + std::to_string(stamp) + "-" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() { sg_test::remove_tree(path.string()); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  REQUIRE(out.good());
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<int32_t> read_ids(const std::string& path) {
  std::istringstream in(read_file(path));
  std::vector<int32_t> ids;
  for (int32_t id; in >> id;) ids.push_back(id);
  return ids;
}

std::string quote(const std::string& arg) { return sg_test::shell_quote(arg); }

// Runs tests/tokenizer_reference.py with these arguments; the test fails if it fails.
void run_reference(const std::vector<std::string>& args) {
  std::string command = quote(SG_PYTHON) + " " + quote(std::string(SG_TEST_SOURCE_DIR) + "/tokenizer_reference.py");
  for (const auto& arg : args) command += " " + quote(arg);
  INFO("reference command: " << command);
  REQUIRE(std::system(command.c_str()) == 0);
}

// "" when equal, else where the two id lists first differ.
std::string first_difference(const std::vector<int32_t>& ours, const std::vector<int32_t>& reference) {
  if (ours == reference) return "";
  size_t i = 0;
  while (i < ours.size() && i < reference.size() && ours[i] == reference[i]) ++i;
  auto window = [&](const std::vector<int32_t>& ids) {
    std::string out;
    for (size_t k = i >= 3 ? i - 3 : 0; k < std::min(ids.size(), i + 5); ++k) out += std::to_string(ids[k]) + " ";
    return out;
  };
  return "first difference at token " + std::to_string(i) + " (" + std::to_string(ours.size()) + " vs " +
         std::to_string(reference.size()) + " tokens): ours [" + window(ours) + "] reference [" + window(reference) +
         "]";
}

std::string utf8(char32_t c) {
  std::string out;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | c >> 6);
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | c >> 12);
    out += static_cast<char>(0x80 | (c >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | c >> 18);
    out += static_cast<char>(0x80 | (c >> 12 & 0x3F));
    out += static_cast<char>(0x80 | (c >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
  return out;
}

// Random valid UTF-8: ASCII, the pattern's special characters, and code points from every plane.
std::string unicode_fuzz(uint32_t seed, size_t count) {
  std::mt19937 random(seed);
  const std::vector<char32_t> special = {' ', ' ', ' ', '\t', '\n', '\r', '\'', 's', 't', 'r', 'e', 'l', 'd',
                                         'S', 0xA0, 0x85, 0x2028, 0x3000, 0x200B, 0x301, 0x1F600, 0xFFFD, 0xFEFF};
  std::string text;
  while (count-- > 0) {
    const auto kind = random() % 10;
    char32_t c;
    if (kind < 3) c = 0x20 + random() % 0x5F;
    else if (kind < 5) c = special[random() % special.size()];
    else if (kind < 7) c = 0x80 + random() % (0x800 - 0x80);
    else if (kind < 9) c = 0x800 + random() % (0x10000 - 0x800);
    else c = 0x10000 + random() % (0x110000 - 0x10000);
    if (c >= 0xD800 && c < 0xE000) c = 'x';
    text += utf8(c);
  }
  return text;
}

// Random bytes, mostly pieces of UTF-8 sequences, so that every kind of ill-formed sequence occurs.
std::string byte_fuzz(uint32_t seed, size_t count) {
  std::mt19937 random(seed);
  const std::vector<unsigned char> bytes = {'a', ' ', '\n', '\'', 's', '1', 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0,
                                            0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xED, 0xEF, 0xF0, 0xF3, 0xF4, 0xF5, 0xFF};
  std::string text;
  while (count-- > 0) text += static_cast<char>(random() % 4 ? bytes[random() % bytes.size()] : random() % 256);
  return text;
}

// Random text over the characters the pattern treats specially (spaces, apostrophes, classes).
std::string pattern_fuzz(uint32_t seed, size_t count) {
  std::mt19937 random(seed);
  const std::vector<std::string> alphabet = {" ", " ", " ", "\t", "\n", "\r", "'", "s", "t", "re", "ll", "a", "B",
                                             "1", "!", "é", "\xC2\xA0", "\xE3\x80\x80", "\xCC\x81", "\xE4\xB8\xAD"};
  std::string text;
  while (count-- > 0) text += alphabet[random() % alphabet.size()];
  return text;
}

struct Case {
  std::string name, text;
  bool valid_utf8 = true;
};

std::vector<Case> cases() {
  std::string long_runs = std::string(5000, ' ') + "x" + std::string(3000, '=') + " " + std::string(2000, 'a') + " " +
                          std::string(300, '7') + "\n" + std::string(1000, '\n') + "end" + std::string(700, '\t') +
                          " word";
  std::mt19937 random(7);
  for (int i = 0; i < 1500; ++i) long_runs += static_cast<char>('a' + random() % 26);
  for (int i = 0; i < 400; ++i) long_runs += i % 2 ? "\xE6\x97\xA5" : "\xF0\x9F\x98\x80";
  return {
      {"ASCII prose",
       "The quick brown fox jumps over the lazy dog. It was the best of times, it was the worst of times; "
       "\"Quoted,\" she said -- and then (parenthetically) left.\nA new paragraph!\n"},
      {"source code",
       "#include <stdio.h>\n\nint main(int argc, char** argv) {\n\tfor (int i = 0; i < argc; ++i) {\n"
       "\t\tprintf(\"%s\\n\", argv[i]);  // print\n\t}\n    return 0;\n}\n"
       "def f(x):\n    return {'a': [1, 2, 3], \"b\": x ** 2} if x else None\n\n\nclass A(B):\n  pass\r\n"},
      {"numbers",
       "0 1 12 123 1234 12345 123456789012345678901234567890 3.14159 -2.5e-10 1,000,000 0x1F 0b1010 2024-01-31 "
       "10:30pm $19.99 50% \xD9\xA1\xD9\xA2\xD9\xA3 \xE0\xA5\xA7\xE0\xA5\xA8 \xC2\xBD \xE2\x85\xAB \xE2\x91\xA0 "
       "\xEF\xBC\x91\xEF\xBC\x92 x2 2x a1b2c3"},
      {"contractions",
       "I'm you're he's she'd we'll they've it't don't CAN'T IT'S I'M They'Re 'S 's ''s '''re ' s 'sss 'lll 'ree "
       "rock'n'roll O'Neil 'twas y'all it\xE2\x80\x99s it\xCA\xBCs \xE2\x80\x98quoted\xE2\x80\x99 "
       "`tick' \"'d\" 'm'm'm 've've 'D 'LL 'Ve"},
      {"whitespace runs",
       "a  b   c\t\td\n\ne \n f\r\n\r\ng    \n\n  h \t \t i\n \n \n j\xC2\xA0\xC2\xA0k \xE3\x80\x80 l"
       "\xE2\x80\xA8\xE2\x80\xA8m\xC2\x85n \x0B\x0C o   1   !   \xE4\xB8\xAD  'll  's \t'd\n\n\n   "},
      {"leading and trailing spaces", "   leading spaces and trailing spaces   "},
      {"only whitespace", " \t\n\r  \n\n   \t"},
      {"emoji",
       "\xF0\x9F\x98\x80 \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D"
       "\xF0\x9F\x91\xA7 \xF0\x9F\x87\xAB\xF0\x9F\x87\xB7 \xE2\x9D\xA4\xEF\xB8\x8F \xE2\x9C\xA8\xE2\x9C\xA8"
       "\xF0\x9F\x8E\x89!! ok\xF0\x9F\x91\x8C"},
      {"CJK",
       "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88\xE3\x80"
       "\x82\xE4\xB8\xAD\xE6\x96\x87\xE6\x96\x87\xE6\x9C\xAC\xEF\xBC\x8C\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 "
       "\xED\x85\x8D\xEC\x8A\xA4\xED\x8A\xB8 \xF0\xA0\x80\x80\xF0\xAA\x9A\xB2 \xE3\x80\x8C\xE5\xBC\x95\xE7\x94"
       "\xA8\xE3\x80\x8D"},
      {"combining marks",
       "e\xCC\x81 a\xCC\x88 \xC3\xB1 n\xCC\x83 Z\xCC\xA4\xCD\x94\xCD\xA7\xCC\x91\xCC\x93" "a\xCC\x88\xCD\x96\xCC\xAD"
       "l\xCD\xAE\xCC\x92\xCD\xAB g\xCC\x8C\xCC\x97\xCC\x9A o\xCC\x99\xCC\x94 \xE0\xA4\x95\xE0\xA4\xBF "
       "\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\x82\xE0\xA4\xA6\xE0\xA5\x80 \xCC\x81start"},
      {"other scripts",
       "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82, \xD0\xBC\xD0\xB8\xD1\x80! \xCE\x93\xCE\xB5\xCE\xB9\xCE"
       "\xB1 \xCF\x83\xCE\xBF\xCF\x85 \xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D \xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 "
       "\xE0\xB8\xAA\xE0\xB8\xA7\xE0\xB8\xB1\xE0\xB8\xAA\xE0\xB8\x94\xE0\xB8\xB5 \xE1\x83\x92\xE1\x83\x90\xE1\x83"
       "\x9B\xE1\x83\x90\xE1\x83\xA0\xE1\x83\xAF\xE1\x83\x9D\xE1\x83\x91\xE1\x83\x90 \xE1\x88\xB0\xE1\x88\x8B"
       "\xE1\x88\x9D \xE0\xAE\xB5\xE0\xAE\xA3\xE0\xAE\x95\xE0\xAF\x8D\xE0\xAE\x95\xE0\xAE\xAE\xE0\xAF\x8D "
       "\xC3\x85ngstr\xC3\xB6m \xC3\x9F\xE1\xBA\x9E \xEF\xAC\x81"},
      {"end-of-text as ordinary text", "<|endoftext|> in the middle<|endoftext|>"},
      {"control characters", "nul\0byte \x01\x1F\x7F \x1C\x1D\x1E end"s},
      {"invalid UTF-8",
       "\xFF\xFE abc \xC3\x28 \xE2\x82 \xE2\x28\xA1 \xF0\x90\x80 \xF0\x90\x80x \xED\xA0\x80 \xC0\xAF "
       "\xF8\x88\x80\x80\x80 \x80\x80 \xE0\x80\x80 \xF4\x90\x80\x80 \xF5 \xC2 lone\xBF trailing \xE2",
       false},
      {"empty", ""},
      {"long runs", long_runs},
      {"pattern fuzz", pattern_fuzz(11, 60000)},
      {"Unicode fuzz", unicode_fuzz(13, 300000)},
      {"byte fuzz", byte_fuzz(17, 100000), false},
  };
}

// The cases written into dir, with tiktoken's ids and Python's decoding of each.
struct Reference {
  std::vector<Case> cases;
  std::vector<std::string> files;
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::string> decoded;
};

Reference tiktoken_reference(const TempDir& dir) {
  Reference reference;
  reference.cases = cases();
  std::vector<std::string> args = {"encode", SG_GPT2_VOCAB};
  for (size_t i = 0; i < reference.cases.size(); ++i) {
    reference.files.push_back(dir / ("case" + std::to_string(i) + ".txt"));
    write_file(reference.files.back(), reference.cases[i].text);
    args.push_back(reference.files.back());
  }
  run_reference(args);
  for (const auto& file : reference.files) {
    reference.ids.push_back(read_ids(file + ".ids"));
    reference.decoded.push_back(read_file(file + ".utf8"));
  }
  return reference;
}

const sg::Tokenizer& gpt2() {
  static const sg::Tokenizer tokenizer = sg::Tokenizer::load(SG_GPT2_VOCAB);
  return tokenizer;
}

}  // namespace

TEST_CASE("encode gives tiktoken's gpt2 ids on every kind of text") {
  TempDir dir;
  const auto reference = tiktoken_reference(dir);
  for (size_t i = 0; i < reference.cases.size(); ++i) {
    INFO("case: " << reference.cases[i].name);
    CHECK(first_difference(gpt2().encode(reference.cases[i].text), reference.ids[i]) == "");
  }
  CHECK(reference.ids[0].size() > 20);  // the reference produced something
}

TEST_CASE("encode_parallel and concurrent encode calls give the same ids") {
  TempDir dir;
  const auto reference = tiktoken_reference(dir);
  std::string big;  // long enough to be cut into many chunks
  for (int k = 0; k < 4; ++k)
    for (const auto& c : reference.cases)
      if (c.valid_utf8) big += c.text + "\n";
  // Mostly runs of white space, so that a wrong cut would land inside one (runs of newlines, as
  // GPT-2 has "\n\n" tokens; cutting a run of spaces rarely changes GPT-2's ids).
  std::string spacious;
  for (int i = 0; i < 40000; ++i)
    spacious += "word" + std::string(1 + i % 13, '\n') + std::string(i % 3, '\t') + std::string(i % 2, ' ');
  const std::string big_file = dir / "big.txt", spacious_file = dir / "spacious.txt";
  write_file(big_file, big);
  write_file(spacious_file, spacious);
  run_reference({"encode", SG_GPT2_VOCAB, big_file, spacious_file});
  const auto big_ids = read_ids(big_file + ".ids"), spacious_ids = read_ids(spacious_file + ".ids");
  for (const int64_t threads : {1, 2, 3, 8}) {
    INFO("threads: " << threads);
    CHECK(first_difference(gpt2().encode_parallel(big, threads), big_ids) == "");
    CHECK(first_difference(gpt2().encode_parallel(spacious, threads), spacious_ids) == "");
    for (size_t i = 0; i < reference.cases.size(); ++i) {
      INFO("case: " << reference.cases[i].name);
      CHECK(first_difference(gpt2().encode_parallel(reference.cases[i].text, threads), reference.ids[i]) == "");
    }
  }
  std::vector<std::vector<int32_t>> results(4);
  std::vector<std::thread> threads;
  for (auto& result : results) threads.emplace_back([&] { result = gpt2().encode(big); });
  for (auto& thread : threads) thread.join();
  for (const auto& result : results) CHECK(first_difference(result, big_ids) == "");
}

TEST_CASE("invalid UTF-8 becomes U+FFFD exactly as Python's decode(errors='replace') does") {
  TempDir dir;
  const auto reference = tiktoken_reference(dir);
  for (size_t i = 0; i < reference.cases.size(); ++i) {
    INFO("case: " << reference.cases[i].name);
    CHECK(sg::is_valid_utf8(reference.cases[i].text) == reference.cases[i].valid_utf8);
    CHECK(sg::replace_invalid_utf8(reference.cases[i].text) == reference.decoded[i]);
  }
}

TEST_CASE("decode inverts encode on valid UTF-8, and the reference ids decode to the text") {
  TempDir dir;
  const auto reference = tiktoken_reference(dir);
  for (size_t i = 0; i < reference.cases.size(); ++i) {
    INFO("case: " << reference.cases[i].name);
    CHECK(gpt2().decode(reference.ids[i]) == reference.decoded[i]);
    if (reference.cases[i].valid_utf8)
      CHECK(gpt2().decode(gpt2().encode(reference.cases[i].text)) == reference.cases[i].text);
  }
}

TEST_CASE("the GPT-2 end-of-text token and vocabulary size") {
  CHECK(gpt2().eot_id() == 50256);
  CHECK(gpt2().vocab_size() == 50257);
  CHECK(gpt2().decode({50256}) == "<|endoftext|>");
  CHECK(gpt2().decode({15496, 995, 50256}) == "Hello world<|endoftext|>");  // tiktoken's ids of "Hello world"
  CHECK_THROWS_AS(gpt2().decode({50257}), sg::InputError);
  CHECK_THROWS_AS(gpt2().decode({-1}), sg::InputError);
}

TEST_CASE("character classes equal those of tiktoken's regex engine for every code point") {
  TempDir dir;
  run_reference({"classes", dir / "classes.bin"});
  const std::string classes = read_file(dir / "classes.bin");
  REQUIRE(classes.size() == 0x110000);
  size_t mismatches = 0;
  for (char32_t c = 0; c < 0x110000; ++c) {
    if (static_cast<uint8_t>(sg::char_class(c)) == static_cast<uint8_t>(classes[c])) continue;
    if (++mismatches <= 10)
      UNSCOPED_INFO("U+" << std::hex << static_cast<uint32_t>(c) << ": ours " << int(sg::char_class(c)) << ", tiktoken "
                         << int(classes[c]));
  }
  INFO("regenerate the tables of lib/text/unicode.cpp with: python tests/tokenizer_reference.py tables");
  CHECK(mismatches == 0);
  CHECK(sg::char_class(0x110000) == sg::CharClass::other);
}

TEST_CASE("pretokenize splits as the GPT-2 pattern does (Python's regex module)") {
  TempDir dir;
  std::vector<std::string> files, texts;
  for (const auto& c : cases())
    if (c.valid_utf8 && c.name != "Unicode fuzz") {  // the fuzz holds code points newer than regex's tables may know
      texts.push_back(c.text);
      files.push_back(dir / ("case" + std::to_string(files.size()) + ".txt"));
      write_file(files.back(), c.text);
    }
  std::vector<std::string> args = {"split"};
  args.insert(args.end(), files.begin(), files.end());
  run_reference(args);
  for (size_t i = 0; i < files.size(); ++i) {
    INFO("text: " << texts[i].substr(0, 80));
    std::vector<int32_t> lengths;
    for (const auto piece : sg::pretokenize(texts[i])) lengths.push_back(static_cast<int32_t>(piece.size()));
    CHECK(first_difference(lengths, read_ids(files[i] + ".split")) == "");
  }
}

// vocab.json + merges.txt have no added tokens, so "<|endoftext|>" in the text is ordinary text, as
// for tiktoken; tokenizer.json adds it as a special token, which HF tokenizers splits out of the text.
TEST_CASE("Hugging Face vocab.json + merges.txt and tokenizer.json give tiktoken's and HF tokenizers' ids") {
  TempDir dir;
  const auto reference = tiktoken_reference(dir);
  run_reference({"convert", SG_GPT2_VOCAB, dir / "hf"});
  std::vector<std::string> hf_args = {"encode-hf", dir / "hf/tokenizer.json"};
  hf_args.insert(hf_args.end(), reference.files.begin(), reference.files.end());
  run_reference(hf_args);
  for (const std::string name : {"hf/vocab.json", "hf/merges.txt", "hf", "hf/tokenizer.json",
                                 "hf/tokenizer-string-merges.json"}) {
    INFO("vocabulary: " << name);
    const bool tokenizer_json = name == "hf" || name.find("tokenizer") != std::string::npos;
    const auto tokenizer = sg::Tokenizer::load(dir / name);
    CHECK(tokenizer.eot_id() == 50256);
    CHECK(tokenizer.vocab_size() == 50257);
    CHECK(tokenizer.decode({50256}) == "<|endoftext|>");
    for (size_t i = 0; i < reference.cases.size(); ++i) {
      INFO("case: " << reference.cases[i].name);
      const auto ids = tokenizer.encode(reference.cases[i].text);
      const auto hf_ids = read_ids(reference.files[i] + ".hf.ids");
      if (!tokenizer_json || reference.cases[i].text.find("<|endoftext|>") == std::string::npos)
        CHECK(first_difference(ids, reference.ids[i]) == "");
      if (tokenizer_json) CHECK(first_difference(ids, hf_ids) == "");
      CHECK(tokenizer.decode(reference.ids[i]) == reference.decoded[i]);
    }
  }
  const auto eot_case = std::find_if(reference.cases.begin(), reference.cases.end(),
                                     [](const Case& c) { return c.name == "end-of-text as ordinary text"; });
  REQUIRE(eot_case != reference.cases.end());
  const auto hf_ids = read_ids(reference.files[eot_case - reference.cases.begin()] + ".hf.ids");
  CHECK(std::count(hf_ids.begin(), hf_ids.end(), 50256) == 2);  // the reference did split it out
}

// --- tokenizer.json shaped like Pythia's: NFC normaliser and added tokens ---------------------

namespace {

// Texts where Pythia's tokenizer.json differs from plain byte-level BPE: runs of spaces, NFC,
// added tokens in the text.
std::vector<Case> pythia_cases() {
  std::string space_runs, space_edges;
  for (int n = 1; n <= 60; ++n) {
    space_runs += "w" + std::string(n, ' ') + "x" + std::string(n, ' ') + ".\n";
    space_edges += std::string(n, ' ') + "start " + std::to_string(n) + std::string(n, ' ') + "\n" +
                   std::string(n, ' ') + "\n" + std::string(n % 7, '\t') + std::string(n, ' ') + "'s" +
                   std::string(n, ' ');
  }
  std::mt19937 random(23);
  const std::vector<std::string> alphabet = {
      " ", " ", " ", "  ", "    ", "\t", "\n", "\r\n", "\xC2\xA0", "\xE3\x80\x80", "word", "Word", "e\xCC\x81",
      "\xC3\xA9", "\xCC\x81", "\xCC\xA3", "\xE1\x84\x80", "\xE1\x85\xA1", "\xE1\x86\xA8", "\xEA\xB0\x80", "<|endoftext|>",
      "<|endoftext", "|>", "<|padding|>", "x", ".", "1", "'s", "\xF0\x9F\x98\x80", "\xE2\x84\xAB", "A\xCC\x8A"};
  std::string fuzz;
  for (int i = 0; i < 30000; ++i) fuzz += alphabet[random() % alphabet.size()];
  return {
      {"runs of spaces of every length", space_runs},
      {"runs of spaces at the edges of lines and text", space_edges},
      {"spaces, tabs and newlines",
       "a \t b\t \tc  \n  d\n\n   \n\t\t  e \r\n  \r\n f   \t\t   g\n    \n        h\xC2\xA0 \xC2\xA0  i "
       "\xE3\x80\x80  j\x0B  \x0C k  \n"},
      {"decomposed accents (NFD)",
       "Cafe\xCC\x81 de\xCC\x81ja\xCC\x80 vu, Zu\xCC\x88rich, A\xCC\x8Angstro\xCC\x88m, man\xCC\x83" "ana, "
       "fac\xCC\xA7" "ade, nai\xCC\x88ve, Dvor\xCC\x8C" "a\xCC\x81k, l\xCC\x81 \xCC\x81start e\xCC\x81\xCC\x81 o\xCC\x88\xCC\x84"},
      {"the same accents composed (NFC)",
       "Caf\xC3\xA9 d\xC3\xA9j\xC3\xA0 vu, Z\xC3\xBCrich, \xC3\x85ngstr\xC3\xB6m, ma\xC3\xB1" "ana, fa\xC3\xA7" "ade, "
       "na\xC3\xAFve, Dvo\xC5\x99\xC3\xA1k, \xC4\xBA \xCC\x81start \xC3\xA9\xCC\x81 \xC8\xAB"},
      {"marks to reorder, singletons and exclusions",
       "a\xCC\x81\xCC\x96 q\xCC\x87\xCC\xA3 \xE1\xBA\x9B\xCC\xA3 \xE2\x84\xAB \xE2\x84\xA6 \xE0\xA5\x98 "
       "\xCD\x84 \xE0\xBD\xB3 \xE2\xAB\x9C \xEF\xAC\x81 \xE2\x91\xA0 x\xCD\x81"},
      {"Hangul",
       "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 \xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB\xE1\x84\x80\xE1\x85\xAE"
       "\xE1\x86\xA8 \xE1\x84\x8B\xE1\x85\xA5 \xE3\x84\xB1\xE3\x85\x8F \xEA\xB0\x80\xE1\x86\xA8 "
       "\xE1\x84\x80  \xE1\x85\xA1"},
      {"emoji",
       "\xF0\x9F\x98\x80  \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD   \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9"
       "\xE2\x80\x8D\xF0\x9F\x91\xA7 \xF0\x9F\x87\xAB\xF0\x9F\x87\xB7 \xE2\x9D\xA4\xEF\xB8\x8F"},
      {"end-of-text and padding in the text",
       "<|endoftext|>first<|endoftext|><|endoftext|> second  <|endoftext|>  third<|padding|><|endoftext "
       "<|endoftext|>e\xCC\x81<|endoftext|>\xCC\x81 <|padding|>"},
      {"indented code",
       "class Tree:\n    def __init__(self, left=None, right=None):\n        self.left = left\n"
       "        self.right = right\n\n    def depth(self):\n        if not self.left:\n"
       "            return 1  # leaf\n        return 1 + max(self.left.depth(),\n"
       "                       self.right.depth())\n\nint main() {\n\tif (x) {\n\t\treturn 0;\n\t}\n  \t  y = 2;\n}\n"},
      {"space fuzz", fuzz},
  };
}

// HF tokenizers' ids for each text with tokenizer.json `json`.
std::vector<std::vector<int32_t>> hugging_face_ids(const TempDir& dir, const std::string& json,
                                                   const std::vector<std::string>& texts) {
  std::vector<std::string> args = {"encode-hf", json};
  for (size_t i = 0; i < texts.size(); ++i) {
    args.push_back(dir / ("hf-case" + std::to_string(i) + ".txt"));
    write_file(args.back(), texts[i]);
  }
  run_reference(args);
  std::vector<std::vector<int32_t>> ids;
  for (size_t i = 2; i < args.size(); ++i) ids.push_back(read_ids(args[i] + ".hf.ids"));
  return ids;
}

}  // namespace

TEST_CASE("a tokenizer.json shaped like Pythia's gives HF tokenizers' ids (NFC, added tokens)") {
  if (sg_test::skip_without_corpus()) return;
  TempDir dir;
  run_reference({"pythia", dir / "pythia"});
  std::vector<Case> all = pythia_cases();
  for (const auto& c : cases())
    if (c.name != "Unicode fuzz") all.push_back(c);  // the fuzz holds marks newer than HF's NFC tables
  all.push_back({"sample", read_file(dir / "pythia/sample.txt")});
  all.push_back({"sample in NFD", read_file(dir / "pythia/sample-nfd.txt")});
  std::vector<std::string> texts;
  for (const auto& c : all) texts.push_back(c.text);
  std::string big;  // for encode_parallel: long enough to be cut into many chunks
  for (int k = 0; k < 3; ++k)
    for (const auto& text : texts) big += text + "\n";
  texts.push_back(big);
  const auto reference = hugging_face_ids(dir, dir / "pythia/tokenizer.json", texts);

  const auto tokenizer = sg::Tokenizer::load(dir / "pythia/tokenizer.json");
  CHECK(tokenizer.eot_id() == 0);
  CHECK(tokenizer.vocab_size() == 4023);  // 4000 model tokens, 23 runs of spaces
  CHECK(tokenizer.decode({4000, 1}) == std::string(24, ' ') + "<|padding|>");
  for (size_t i = 0; i < all.size(); ++i) {
    INFO("case: " << all[i].name);
    CHECK(first_difference(tokenizer.encode(all[i].text), reference[i]) == "");
  }
  for (const int64_t threads : {1, 2, 3, 8}) {
    INFO("encode_parallel, threads: " << threads);
    CHECK(first_difference(tokenizer.encode_parallel(big, threads), reference.back()) == "");
  }
  // The reference did apply Pythia's features: space runs and <|endoftext|> are single ids.
  CHECK(std::count(reference[0].begin(), reference[0].end(), 4000 + 24 - 5) == 6);  // 5 spaces: runs of 5, 29, 53
  CHECK(std::count(reference[8].begin(), reference[8].end(), 0) == 6);               // <|endoftext|>
  CHECK(reference[3] == reference[4]);  // NFD and NFC input: the same ids
}

// options.json adds tokens with single_word, lstrip, rstrip, normalized true and false (see
// tokenizer_reference.py pythia); one ("end of") can reach across a cut, so encode_parallel
// must not cut.
TEST_CASE("added tokens' single_word, lstrip, rstrip and normalized behave as in HF tokenizers") {
  if (sg_test::skip_without_corpus()) return;
  TempDir dir;
  run_reference({"pythia", dir / "pythia"});
  std::mt19937 random(29);
  const std::vector<std::string> alphabet = {
      " ", " ", "  ", "   ", "\t", "\n", "\xE3\x80\x80", "<mask>", "[W]", "[S]", "caf\xC3\xA9", "cafe\xCC\x81",
      "cafe\xCC\x81!", "!", "\xE2\x84\xAB", "\xC3\x85", "A\xCC\x8A", "<r>", "end of", "end", " of", "\xC3\xA9t\xC3\xA9 ",
      "e\xCC\x81te\xCC\x81 ", "x", "_", "1", "\xCC\x81", "<|endoftext|>", "word"};
  std::string fuzz;
  for (int i = 0; i < 20000; ++i) fuzz += alphabet[random() % alphabet.size()];
  const std::vector<std::string> texts = {
      "a <mask>  b <mask>\t\n<mask>",
      "x[W] [W] a[W] [W]b ([W]) _[W] 1[W] \xCC\x81[W] \xC3\xA9[W] a\xC2\xA0[W]\xE3\x80\x80 [W]",
      "cafe\xCC\x81! cafe\xCC\x81 caf\xC3\xA9! caf\xC3\xA9",
      "\xE2\x84\xAB A\xCC\x8A \xC3\x85 \xE2\x84\xAB\xE2\x84\xAB",
      "<r>   x <r>     x <r>\n\n  y <r>",
      "the end of it, the end  of it",
      "a [S] b  [S]c x[S]",
      "\xC3\xA9t\xC3\xA9 e\xCC\x81te\xCC\x81 x\xC3\xA9t\xC3\xA9 ",
      fuzz,
  };
  std::string big;
  for (int k = 0; k < 8; ++k)
    for (const auto& text : texts) big += text + " ";
  auto all = texts;
  all.push_back(big);
  const auto reference = hugging_face_ids(dir, dir / "pythia/options.json", all);
  const auto tokenizer = sg::Tokenizer::load(dir / "pythia/options.json");
  for (size_t i = 0; i < texts.size(); ++i) {
    INFO("text: " << texts[i].substr(0, 80));
    CHECK(first_difference(tokenizer.encode(texts[i]), reference[i]) == "");
  }
  CHECK(first_difference(tokenizer.encode_parallel(big, 4), reference.back()) == "");
  // The reference did apply the options: "<r>   x" gives <r>, then "   " again (HF's quirk).
  CHECK(std::find(reference[4].begin(), reference[4].end(), 4000 + 24 - 3) != reference[4].end());
}

TEST_CASE("a tokenizer.json normalizer other than NFC, or an added token's wrong id, is refused") {
  TempDir dir;
  auto load = [](const std::string& path) { return sg::Tokenizer::load(path); };
  const std::string model = R"("model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []})";
  const std::string lowercase = dir / "lowercase.json";
  write_file(lowercase, R"({"normalizer": {"type": "Lowercase"}, )" + model + "}");
  CHECK_THROWS_AS(load(lowercase), sg::InputError);
  CHECK_THROWS_WITH(load(lowercase), Contains(lowercase) && Contains("Lowercase"));
  const std::string sequence = dir / "sequence.json";
  write_file(sequence, R"({"normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "NFKC"}]}, )" +
                           model + "}");
  CHECK_THROWS_WITH(load(sequence), Contains(sequence) && Contains("NFKC"));
  const std::string wrong_id = dir / "wrong-id.json";
  write_file(wrong_id, R"({"added_tokens": [{"id": 7, "content": "<x>", "special": true}], )" + model + "}");
  CHECK_THROWS_WITH(load(wrong_id), Contains(wrong_id) && Contains("<x>") && Contains("would give it id 2"));
  const std::string twice = dir / "twice.json";
  write_file(twice, R"({"added_tokens": [{"id": 2, "content": "<x>"}, {"id": 3, "content": "<x>"}], )" + model + "}");
  CHECK_THROWS_WITH(load(twice), Contains(twice) && Contains("twice"));
}

TEST_CASE("a missing or malformed vocabulary is an InputError naming the file and the problem") {
  TempDir dir;
  auto load = [](const std::string& path) { return sg::Tokenizer::load(path); };
  const std::string missing = dir / "no-such-vocabulary.tiktoken";
  CHECK_THROWS_AS(load(missing), sg::InputError);
  CHECK_THROWS_WITH(load(missing), Contains(missing) && Contains("cannot open"));

  const std::string bad_line = dir / "bad-line.tiktoken";
  write_file(bad_line, "IQ== 0\nnot*base64 1\n");
  CHECK_THROWS_AS(load(bad_line), sg::InputError);
  CHECK_THROWS_WITH(load(bad_line), Contains(bad_line + ":2") && Contains("base64token rank"));
  write_file(bad_line, "IQ== zero\n");
  CHECK_THROWS_WITH(load(bad_line), Contains(bad_line + ":1"));
  write_file(bad_line, "IQ== 0\nIQ== 1\n");
  CHECK_THROWS_WITH(load(bad_line), Contains(bad_line + ":2") && Contains("twice"));

  const std::string few_bytes = dir / "few-bytes.tiktoken";
  write_file(few_bytes, "IQ== 0\nIg== 1\n");
  CHECK_THROWS_WITH(load(few_bytes), Contains(few_bytes) && Contains("single byte"));

  const std::string empty = dir / "empty.tiktoken";
  write_file(empty, "");
  CHECK_THROWS_WITH(load(empty), Contains(empty) && Contains("empty"));

  fs::create_directories(dir / "alone");
  const std::string alone = dir / "alone/vocab.json";
  write_file(alone, R"({"a": 0, "b": 1})");
  CHECK_THROWS_AS(load(alone), sg::InputError);
  CHECK_THROWS_WITH(load(alone), Contains(alone) && Contains("merges.txt"));

  fs::create_directories(dir / "broken");
  const std::string broken = dir / "broken/vocab.json";
  write_file(broken, "{ \"a\": 0, nope");
  CHECK_THROWS_WITH(load(broken), Contains(broken) && Contains("not valid JSON"));
  write_file(broken, R"({"a": "zero"})");
  CHECK_THROWS_WITH(load(broken), Contains(broken) && Contains("not an integer"));

  run_reference({"convert", SG_GPT2_VOCAB, dir / "hf"});
  std::string merges = read_file(dir / "hf/merges.txt");
  write_file(dir / "hf/merges.txt", merges.insert(merges.find('\n') + 1, "Ġ nosuchtoken\n"));
  CHECK_THROWS_WITH(load(dir / "hf/vocab.json"), Contains(dir / "hf/merges.txt:2") && Contains("not in the vocabulary"));
  write_file(dir / "hf/merges.txt", "#version: 0.2\nthree parts here\n");
  CHECK_THROWS_WITH(load(dir / "hf/vocab.json"), Contains(dir / "hf/merges.txt:2") && Contains("left right"));

  const std::string wordpiece = dir / "wordpiece.json";
  write_file(wordpiece, R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})");
  CHECK_THROWS_WITH(load(wordpiece), Contains(wordpiece) && Contains("not supported"));
  const std::string prefix_space = dir / "prefix-space.json";
  write_file(prefix_space, R"({"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": true},
                               "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})");
  CHECK_THROWS_WITH(load(prefix_space), Contains(prefix_space) && Contains("add_prefix_space"));
  const std::string bad_merge = dir / "bad-merge.json";
  write_file(bad_merge, R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [42]}})");
  CHECK_THROWS_WITH(load(bad_merge), Contains(bad_merge) && Contains("merges[0]"));

  CHECK_THROWS_WITH(load(dir.path.string()), Contains("neither tokenizer.json nor vocab.json"));
}

TEST_CASE("default_vocabulary_path follows SINKGATE_VOCAB, then the setup cache") {
  const char* saved = std::getenv("SINKGATE_VOCAB");
  const std::string restore = saved ? saved : "";
  setenv("SINKGATE_VOCAB", "/some/where/vocab.json", 1);
  CHECK(sg::default_vocabulary_path() == "/some/where/vocab.json");
  unsetenv("SINKGATE_VOCAB");
  CHECK_THAT(sg::default_vocabulary_path(), Catch::Matchers::EndsWith("sinkgate/gpt2.tiktoken"));
  if (saved) setenv("SINKGATE_VOCAB", restore.c_str(), 1);
}
