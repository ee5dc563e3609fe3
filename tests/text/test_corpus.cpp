// Tests of lib/text/corpus: which inputs are text (binary signatures, NUL bytes, the invalid-UTF-8
// threshold), how a directory's files that are not text are skipped and named, and how links to
// folders in it are followed (a cycle refused naming the link).
#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "lib/base/error.h"
#include "lib/text/corpus.h"
#include "tests/support.h"

using namespace std::string_literals;

namespace {

void write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

}  // namespace

TEST_CASE("corpus: text, UTF-8 text and JSON Lines read as text") {
  CHECK(sg::not_text_reason("", true).empty());
  CHECK(sg::not_text_reason("Hello, world.\n", true).empty());
  CHECK(sg::not_text_reason("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80\n", true).empty());
  CHECK(sg::not_text_reason("{\"text\": \"a\"}\n{\"text\": \"b\"}\n", true).empty());
}

TEST_CASE("corpus: binary signatures name the format") {
  CHECK(sg::not_text_reason("\x89HDF\r\n\x1a\n\x00\x00"s, true) == "an HDF5 file");
  CHECK(sg::not_text_reason(std::string(512, ' ') + "\x89HDF\r\n\x1a\n", true) == "an HDF5 file");  // a user block
  CHECK(sg::not_text_reason("PAR1\x15\x04"s, true) == "a Parquet file");
  CHECK(sg::not_text_reason("\x1f\x8b\x08\x00"s, true) == "a gzip file");
  CHECK(sg::not_text_reason("PK\x03\x04rest"s, true) == "a zip file");
  CHECK(sg::not_text_reason("\x28\xb5\x2f\xfd"s, true) == "a zstd file");
  CHECK(sg::not_text_reason("%PDF-1.7\n", true) == "a PDF document");
  CHECK(sg::not_text_reason("\x7f" "ELF\x02\x01"s, true) == "an ELF executable");
}

TEST_CASE("corpus: a NUL byte anywhere in the head is binary") {
  CHECK(sg::not_text_reason("plain text\0more"s, true) == "a NUL byte");
  CHECK(sg::not_text_reason("h\0e\0l\0l\0o\0"s, true) == "a NUL byte");  // UTF-16
}

TEST_CASE("corpus: invalid UTF-8 is refused above 1 percent of the bytes") {
  // The rule: more than 1 in 100 bytes start no valid sequence (counted here by hand: each 0xff is one).
  const std::string ascii(200, 'a');
  CHECK(sg::not_text_reason(ascii + "\xff\xff", true).empty());          // 2 of 202: 0.99 %
  CHECK(sg::not_text_reason(ascii + "\xff\xff\xff", true) == "invalid UTF-8");  // 3 of 203: 1.48 %
  CHECK(sg::not_text_reason("\xff", true) == "invalid UTF-8");
  // Latin-1 text: every accented letter is an invalid byte.
  CHECK(sg::not_text_reason("Caf\xe9 cr\xe8me br\xfbl\xe9" "e", true) == "invalid UTF-8");
  // Sequences UTF-8 forbids: overlong forms, surrogates, code points above U+10FFFF, lone continuations.
  CHECK(sg::not_text_reason("\xc0\xaf", true) == "invalid UTF-8");
  CHECK(sg::not_text_reason("\xed\xa0\x80", true) == "invalid UTF-8");
  CHECK(sg::not_text_reason("\xf4\x90\x80\x80", true) == "invalid UTF-8");
  CHECK(sg::not_text_reason("\x80\x80", true) == "invalid UTF-8");
  // A sequence cut by the end of a prefix is not counted; at the end of the whole file it is.
  CHECK(sg::not_text_reason("ab\xe6\x97", false).empty());
  CHECK(sg::not_text_reason("ab\xe6\x97", true) == "invalid UTF-8");
}

TEST_CASE("corpus: a named file that is not text is refused, naming it and why") {
  sg_test::Scratch scratch;
  write(scratch / "run.h5", "\x89HDF\r\n\x1a\n"s + std::string(100, '\0'));
  write(scratch / "data.parquet", "PAR1"s + std::string(100, '\x01'));
  write(scratch / "text.txt", "some text\n");
  CHECK(sg::file_not_text_reason(scratch / "run.h5") == "an HDF5 file");
  CHECK(sg::file_not_text_reason(scratch / "text.txt").empty());
  CHECK_THROWS_AS(sg::list_corpus_files({scratch / "run.h5"}), sg::InputError);
  CHECK_THROWS_WITH(sg::list_corpus_files({scratch / "run.h5"}),
                    Catch::Contains(scratch / "run.h5") && Catch::Contains("not text (an HDF5 file)"));
  CHECK_THROWS_WITH(sg::list_corpus_files({scratch / "text.txt", scratch / "data.parquet"}),
                    Catch::Contains("data.parquet: not text (a Parquet file)"));
}

TEST_CASE("corpus: only the first 8 KiB are read") {
  sg_test::Scratch scratch;
  // A NUL byte after the head is not seen (the check is a sniff, not a scan).
  write(scratch / "late.txt", std::string(sg::kTextCheckBytes, 'x') + "\0"s);
  CHECK(sg::file_not_text_reason(scratch / "late.txt").empty());
  write(scratch / "early.txt", std::string(sg::kTextCheckBytes - 1, 'x') + "\0"s);
  CHECK(sg::file_not_text_reason(scratch / "early.txt") == "a NUL byte");
}

TEST_CASE("corpus: a directory's files that are not text are skipped and named, grouped by reason") {
  sg_test::Scratch scratch;
  write(scratch / "a.txt", "first document\n");
  write(scratch / "b.jsonl", "{\"text\": \"second\"}\n");
  write(scratch / "c.h5", "\x89HDF\r\n\x1a\n"s);
  write(scratch / "d.h5", "\x89HDF\r\n\x1a\n"s);
  write(scratch / "e.parquet", "PAR1"s);
  write(scratch / "f.bin", "x\0y"s);
  write(scratch / "g.txt", "caf\xe9");
  const auto corpus = sg::list_corpus_files({scratch.dir});
  CHECK(corpus.files == std::vector<std::string>{scratch / "a.txt", scratch / "b.jsonl"});
  REQUIRE(corpus.skipped.size() == 5);
  CHECK(corpus.skipped[0].path == scratch / "c.h5");
  CHECK(corpus.skipped[0].reason == "an HDF5 file");
  const auto text = sg::describe_skipped(corpus.skipped, 7);
  CHECK(text == "skipped 5 of 7 files, not text: an HDF5 file (2): " + scratch / "c.h5" + ", " + scratch / "d.h5" +
                    "; a Parquet file (1): " + scratch / "e.parquet" + "; a NUL byte (1): " + scratch / "f.bin" +
                    "; invalid UTF-8 (1): " + scratch / "g.txt");
  CHECK(sg::describe_skipped({}, 3).empty());
}

TEST_CASE("corpus: the skipped summary names three files a reason, then a count") {
  std::vector<sg::SkippedFile> skipped;
  for (int i = 0; i < 5; ++i) skipped.push_back({"r" + std::to_string(i) + ".h5", "an HDF5 file"});
  CHECK(sg::describe_skipped(skipped, 9) == "skipped 5 of 9 files, not text: an HDF5 file (5): r0.h5, r1.h5, r2.h5 and 2 more");
}

TEST_CASE("corpus: a directory holding no text file is an input error") {
  sg_test::Scratch scratch;
  write(scratch / "only.h5", "\x89HDF\r\n\x1a\n"s);
  CHECK_THROWS_WITH(sg::list_corpus_files({scratch.dir}),
                    Catch::Contains("directory holds no text file") && Catch::Contains("only.h5"));
}

TEST_CASE("corpus: a link to a folder inside a corpus folder is followed, a folder reached twice read once") {
  sg_test::Scratch scratch;
  REQUIRE(mkdir((scratch / "corpus").c_str(), 0777) == 0);
  REQUIRE(mkdir((scratch / "other").c_str(), 0777) == 0);
  write(scratch / "corpus/a.txt", "first document\n");
  write(scratch / "other/b.txt", "second document\n");
  write(scratch / "other/c.h5", "\x89HDF\r\n\x1a\n"s);
  REQUIRE(symlink("../other", (scratch / "corpus/linked").c_str()) == 0);
  const auto corpus = sg::list_corpus_files({scratch / "corpus"});
  CHECK(corpus.files == std::vector<std::string>{scratch / "corpus/a.txt", scratch / "corpus/linked/b.txt"});
  REQUIRE(corpus.skipped.size() == 1);
  CHECK(corpus.skipped[0].path == scratch / "corpus/linked/c.h5");
  // Every file an output must not replace: the folder as named, and each file by its path.
  CHECK(sg::protected_paths({scratch / "corpus"}, corpus) ==
        std::vector<std::string>{scratch / "corpus", scratch / "corpus/a.txt", scratch / "corpus/linked/b.txt",
                                 scratch / "corpus/linked/c.h5"});
  // A second link to the same folder: read once, by the first path in name order.
  REQUIRE(symlink("../other", (scratch / "corpus/linked2").c_str()) == 0);
  CHECK(sg::list_corpus_files({scratch / "corpus"}).files ==
        std::vector<std::string>{scratch / "corpus/a.txt", scratch / "corpus/linked/b.txt"});
}

TEST_CASE("corpus: a cycle through a folder link is an input error naming the link") {
  sg_test::Scratch scratch;
  REQUIRE(mkdir((scratch / "corpus").c_str(), 0777) == 0);
  REQUIRE(mkdir((scratch / "corpus/sub").c_str(), 0777) == 0);
  write(scratch / "corpus/sub/a.txt", "a document\n");
  REQUIRE(symlink("..", (scratch / "corpus/sub/up").c_str()) == 0);
  CHECK_THROWS_AS(sg::list_corpus_files({scratch / "corpus"}), sg::InputError);
  CHECK_THROWS_WITH(sg::list_corpus_files({scratch / "corpus"}),
                    Catch::Contains(scratch / "corpus/sub/up") && Catch::Contains("cycle of folder links"));
  // A link to the folder itself, given through a link: the same cycle.
  REQUIRE(unlink((scratch / "corpus/sub/up").c_str()) == 0);
  REQUIRE(symlink(".", (scratch / "corpus/self").c_str()) == 0);
  REQUIRE(symlink("corpus", (scratch / "alias").c_str()) == 0);
  CHECK_THROWS_WITH(sg::list_corpus_files({scratch / "alias"}),
                    Catch::Contains(scratch / "alias/self") && Catch::Contains("cycle of folder links"));
}
