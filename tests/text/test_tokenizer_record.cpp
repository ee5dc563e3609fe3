// Tests of lib/text/tokenizer_record and the identity of lib/text/tokenizer: kinds and hashes (the
// hashes against sha256sum), the /tokenizer group written and read back, the choice and check of a
// file's vocabulary, and the vocabulary files a tool refuses to read (devices, FIFOs, oversized).
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "lib/base/error.h"
#include "lib/io/h5.h"
#include "lib/text/tokenizer_record.h"
#include "tests/support.h"

namespace {

using Catch::Matchers::Contains;

// sha256sum's answer for a file: an implementation other than the one under test.
std::string sha256sum(const std::string& path) {
  const std::string command = "sha256sum " + sg_test::shell_quote(path);
  std::FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char hex[65] = {};
  REQUIRE(std::fread(hex, 1, 64, pipe) == 64);
  ::pclose(pipe);
  return hex;
}

// The first `lines` ranks of GPT-2's rank file: a smaller vocabulary that is not GPT-2's.
std::string truncated_gpt2(const std::string& path, int lines) {
  std::ifstream in(SG_GPT2_VOCAB);
  std::ofstream out(path);
  std::string line;
  for (int i = 0; i < lines && std::getline(in, line); ++i) out << line << '\n';
  REQUIRE(out.good());
  return path;
}

std::vector<int32_t> all_ids(int64_t n) {
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < n; ++id) ids.push_back(id);
  return ids;
}

}  // namespace

TEST_CASE("tokenizer identity: GPT-2's rank file is kind gpt2, another vocabulary its format, each with its file's sha256") {
  sg_test::Scratch scratch;
  const auto gpt2 = sg::Tokenizer::load(SG_GPT2_VOCAB);
  CHECK(gpt2.identity().kind == "gpt2");
  CHECK(gpt2.identity().sha256 == sha256sum(SG_GPT2_VOCAB));
  CHECK(gpt2.identity().vocab_size == 50257);
  CHECK(gpt2.identity().eot_id == 50256);
  const auto small = sg::Tokenizer::load(truncated_gpt2(scratch / "small.tiktoken", 400));
  CHECK(small.identity().kind == "tiktoken");
  CHECK(small.identity().sha256 == sha256sum(scratch / "small.tiktoken"));
  CHECK(small.identity().vocab_size == 401);
  CHECK(small.identity().eot_id == 400);
  CHECK_FALSE(small.identity().same_vocabulary(gpt2.identity()));
  CHECK(gpt2.identity().same_vocabulary(gpt2.identity()));
}

TEST_CASE("tokenizer record: an embedded vocabulary read back decodes every id as the file it came from") {
  sg_test::Scratch scratch;
  const auto original = sg::Tokenizer::load(truncated_gpt2(scratch / "small.tiktoken", 400));
  const auto record = sg::TokenizerRecord::of(original);
  REQUIRE(record.files.size() == 1);
  {
    sg::h5::Writer writer(scratch / "file.h5", /*force=*/false);
    sg::write_tokenizer_record(writer.root(), record);
    writer.commit();
  }
  std::remove((scratch / "small.tiktoken").c_str());  // only the embedded copy is left
  const auto file = sg::h5::File::open(scratch / "file.h5");
  const auto read = sg::read_tokenizer_record(file, scratch / "file.h5");
  CHECK(read.identity.kind == "tiktoken");
  CHECK(read.identity.sha256 == original.identity().sha256);
  CHECK(read.source == scratch / "small.tiktoken");
  const auto decoded = sg::tokenizer_for(read, scratch / "file.h5", "");
  CHECK(decoded.decode(all_ids(401)) == original.decode(all_ids(401)));
  CHECK(decoded.encode("the cat sat") == original.encode("the cat sat"));
}

TEST_CASE("tokenizer record: GPT-2's vocabulary is recorded without its files and read from the default one") {
  sg_test::Scratch scratch;
  const auto record = sg::TokenizerRecord::of(sg::Tokenizer::load(SG_GPT2_VOCAB));
  CHECK(record.files.empty());
  {
    sg::h5::Writer writer(scratch / "file.h5", /*force=*/false);
    sg::write_tokenizer_record(writer.root(), record);
    writer.commit();
  }
  const auto read = sg::read_tokenizer_record(sg::h5::File::open(scratch / "file.h5"), scratch / "file.h5");
  CHECK(read.identity.kind == "gpt2");
  ::setenv("SINKGATE_VOCAB", SG_GPT2_VOCAB, 1);
  CHECK(sg::tokenizer_for(read, scratch / "file.h5", "").identity().kind == "gpt2");
  ::setenv("SINKGATE_VOCAB", truncated_gpt2(scratch / "small.tiktoken", 300).c_str(), 1);
  CHECK_THROWS_WITH(sg::tokenizer_for(read, scratch / "file.h5", ""), Contains("is not GPT-2's"));
  ::unsetenv("SINKGATE_VOCAB");
}

TEST_CASE("tokenizer record: a vocabulary other than the recorded one is refused, naming both files and hashes") {
  sg_test::Scratch scratch;
  const auto recorded = sg::Tokenizer::load(truncated_gpt2(scratch / "a.tiktoken", 400));
  const auto record = sg::TokenizerRecord::of(recorded);
  truncated_gpt2(scratch / "b.tiktoken", 401);
  try {
    sg::tokenizer_for(record, "run.h5", scratch / "b.tiktoken");
    FAIL("another vocabulary was accepted");
  } catch (const sg::InputError& error) {
    const std::string message = error.what();
    CHECK_THAT(message, Contains(scratch / "b.tiktoken") && Contains(sha256sum(scratch / "b.tiktoken")) &&
                            Contains(scratch / "a.tiktoken") && Contains(sha256sum(scratch / "a.tiktoken")) &&
                            Contains("run.h5"));
  }
  // The same bytes under another name are the same vocabulary.
  std::ofstream(scratch / "copy.tiktoken") << sg_test::slurp(scratch / "a.tiktoken");
  CHECK(sg::tokenizer_for(record, "run.h5", scratch / "copy.tiktoken").identity().sha256 == record.identity.sha256);
  // A record of nothing (files of older versions): the given vocabulary, unchecked.
  CHECK(sg::tokenizer_for(sg::TokenizerRecord{}, "old.h5", scratch / "b.tiktoken").vocab_size() == 402);
}

TEST_CASE("tokenizer record: a damaged record is refused naming the file") {
  sg_test::Scratch scratch;
  auto record = sg::TokenizerRecord::of(sg::Tokenizer::load(truncated_gpt2(scratch / "a.tiktoken", 300)));
  auto write = [&](const sg::TokenizerRecord& r) {
    sg::h5::Writer writer(scratch / "file.h5", /*force=*/true);
    sg::write_tokenizer_record(writer.root(), r);
    writer.commit();
    return sg::h5::File::open(scratch / "file.h5");
  };
  auto damaged = record;
  damaged.files[0].bytes[0] ^= 1;
  CHECK_THROWS_WITH(sg::read_tokenizer_record(write(damaged), "f.h5"), Contains("f.h5") && Contains("does not hash"));
  damaged = record;
  damaged.identity.kind = "sentencepiece";
  CHECK_THROWS_WITH(sg::read_tokenizer_record(write(damaged), "f.h5"), Contains("'sentencepiece'"));
  damaged = record;
  damaged.files[0].name = "other.bin";
  CHECK_THROWS_WITH(sg::read_tokenizer_record(write(damaged), "f.h5"), Contains("embeds"));
  damaged = record;
  damaged.identity.eot_id = damaged.identity.vocab_size;
  CHECK_THROWS_WITH(sg::read_tokenizer_record(write(damaged), "f.h5"), Contains("inconsistent"));
}

TEST_CASE("vocabulary files: a device, a FIFO, a folder's stand-in or an oversized file is refused, naming it") {
  sg_test::Scratch scratch;
  for (const std::string path : {"/dev/zero", "/dev/urandom"})
    CHECK_THROWS_WITH(sg::Tokenizer::load(path), Contains(path) && Contains("not a regular file"));
  REQUIRE(::mkfifo((scratch / "fifo").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(sg::Tokenizer::load(scratch / "fifo"), Contains("fifo") && Contains("not a regular file"));
  // merges.txt beside a vocab.json is read under the same rule.
  std::ofstream(scratch / "vocab.json") << "{\"a\": 0}";
  REQUIRE(::mkfifo((scratch / "merges.txt").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(sg::Tokenizer::load(scratch / "vocab.json"), Contains("merges.txt") && Contains("not a regular file"));
  {
    std::ofstream big(scratch / "big.tiktoken");
  }
  REQUIRE(::truncate((scratch / "big.tiktoken").c_str(), sg::kMaxVocabularyFileBytes + 1) == 0);
  CHECK_THROWS_WITH(sg::Tokenizer::load(scratch / "big.tiktoken"), Contains("big.tiktoken") && Contains("64 MiB"));
}
