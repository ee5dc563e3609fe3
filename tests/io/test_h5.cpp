// Tests of lib/io/h5: array round trips for every dtype, attributes, groups, strings, extendable
// datasets read by slices, atomic writes, and the errors a reader meets on bad files (with
// lib/io/h5_structure, the structure check File::open makes). (Tensors
// through this layer: tests/model/test_tensors.cpp.)
#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>

#include "lib/base/error.h"
#include "lib/io/checksum.h"
#include "lib/io/h5.h"
#include "tests/support.h"

using sg::h5::Dtype;

namespace {

using sg_test::Scratch;

using sg_test::exists;
size_t count_entries(const std::string& dir) {
  size_t n = 0;
  DIR* d = opendir(dir.c_str());
  if (!d) return 0;
  while (const dirent* entry = readdir(d))
    if (std::string(entry->d_name) != "." && std::string(entry->d_name) != "..") ++n;
  closedir(d);
  return n;
}

using sg_test::slurp;
template <typename Exception>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Exception& e) {
    return e.what();
  }
  FAIL("no exception of the expected type");
  return "";
}

}  // namespace

/// One array to store: its dtype, shape and bytes.
struct Array {
  std::string name;
  Dtype dtype;
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;
};

template <typename T>
Array array_of(const std::string& name, Dtype dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  Array a{name, dtype, std::move(shape), std::vector<unsigned char>(values.size() * sizeof(T))};
  if (!values.empty()) std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
  return a;
}

TEST_CASE("arrays of every dtype and rank survive a write and a read") {
  Scratch scratch;
  const auto path = scratch / "arrays.h5";
  std::vector<float> f32(60);
  for (size_t i = 0; i < f32.size(); ++i) f32[i] = 0.37f * static_cast<float>(i) - 11.0f;
  const std::vector<Array> arrays = {
      array_of("f32", Dtype::float32, {3, 4, 5}, f32),
      array_of("f64", Dtype::float64, {2, 3}, std::vector<double>{-1e300, 0.1, 2.5, 1e-300, -0.0, 7}),
      array_of("bf16", Dtype::bfloat16, {2, 2}, std::vector<uint16_t>{0x3F80, 0xBF80, 0x7F80, 0x0001}),
      array_of("i64", Dtype::int64, {3, 4}, std::vector<int64_t>{-5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, INT64_MAX}),
      array_of("i32", Dtype::int32, {3}, std::vector<int32_t>{-2147483647, 0, 2147483647}),
      array_of("u16", Dtype::uint16, {4}, std::vector<uint16_t>{0, 1, 50256, 65535}),
      array_of("bool", Dtype::boolean, {2, 2}, std::vector<uint8_t>{1, 0, 1, 1}),
      array_of("i8", Dtype::int8, {3}, std::vector<int8_t>{-128, 0, 127}),
      array_of("i16", Dtype::int16, {3}, std::vector<int16_t>{-32768, 5, 32767}),
      array_of("u8", Dtype::uint8, {3}, std::vector<uint8_t>{0, 200, 255}),
      array_of("scalar", Dtype::float64, {}, std::vector<double>{3.5}),
      array_of("empty", Dtype::float32, {0, 3}, std::vector<float>{}),
      array_of("nested/deeper/w", Dtype::float32, {2}, std::vector<float>{1, 1}),
  };
  {
    sg::h5::Writer writer(path, /*force=*/false);
    for (const auto& a : arrays) writer.root().write_array(a.name, a.dtype, a.shape, a.bytes.data());
    writer.commit();
  }
  const auto file = sg::h5::File::open(path);
  for (const auto& a : arrays) {
    INFO(a.name);
    const auto dataset = file.dataset(a.name);
    CHECK(dataset.dtype() == a.dtype);
    CHECK(dataset.shape() == a.shape);
    std::vector<unsigned char> back(a.bytes.size());
    dataset.read_array(a.dtype, back.data());
    CHECK(back == a.bytes);
  }
  CHECK(file.dataset("bf16").attribute_string("sg_dtype") == "bfloat16");
  CHECK(file.dataset("bool").attribute_string("sg_dtype") == "bool");
  // Conversions: integers to any integer type, floats to any float type; bool also as its bytes.
  std::vector<double> wide(3);
  CHECK_THROWS_AS(file.dataset("f32").read_slice(0, 1, Dtype::float64, wide.data()), sg::InputError);  // not 1-D
  std::vector<int64_t> ids(4);
  file.dataset("u16").read_array(Dtype::int64, ids.data());
  CHECK(ids == std::vector<int64_t>{0, 1, 50256, 65535});
  std::vector<uint8_t> flags(4);
  file.dataset("bool").read_array(Dtype::uint8, flags.data());
  CHECK(flags == std::vector<uint8_t>{1, 0, 1, 1});
  CHECK_THROWS_AS(file.dataset("bf16").read_array(Dtype::float32, wide.data()), sg::InputError);
  CHECK_THROWS_AS(file.dataset("i32").read_array(Dtype::float64, wide.data()), sg::InputError);
  CHECK_THROWS_AS(file.dataset("table"), sg::InputError);
  sg::h5::Writer other(scratch / "strings.h5", false);
  CHECK_THROWS_AS(other.root().write_array("s", Dtype::string, {1}, f32.data()), sg::OutputError);
}

TEST_CASE("attributes of every kind read back, and the wrong kind is an InputError naming the file") {
  Scratch scratch;
  const auto path = scratch / "attributes.h5";
  {
    sg::h5::Writer writer(path, false);
    auto& root = writer.root();
    root.set_attribute("name", "sinkgate λ");
    root.set_attribute("count", int64_t{-42});
    root.set_attribute("small", 7);
    root.set_attribute("rate", 6e-4);
    root.set_attribute("names", std::vector<std::string>{"a", "", "ç"});
    root.set_attribute("steps", std::vector<int64_t>{1, 2, 3});
    root.set_attribute("betas", std::vector<double>{0.9, 0.95});
    root.set_attribute("none", std::vector<std::string>{});
    root.set_attribute("rate", 1e-3);  // replaces
    auto group = root.create_group("model/layer0");
    group.set_attribute("heads", int64_t{12});
    writer.commit();
  }
  const auto file = sg::h5::File::open(path);
  CHECK(file.attribute_string("name") == "sinkgate λ");
  CHECK(file.attribute_int("count") == -42);
  CHECK(file.attribute_int("small") == 7);
  CHECK(file.attribute_double("rate") == 1e-3);
  CHECK(file.attribute_double("count") == -42.0);  // an integer is a fine double
  CHECK(file.attribute_strings("names") == std::vector<std::string>{"a", "", "ç"});
  CHECK(file.attribute_ints("steps") == std::vector<int64_t>{1, 2, 3});
  CHECK(file.attribute_doubles("betas") == std::vector<double>{0.9, 0.95});
  CHECK(file.attribute_strings("none").empty());
  CHECK(file.group("model/layer0").attribute_int("heads") == 12);
  CHECK(file.has_attribute("name"));
  CHECK_FALSE(file.has_attribute("absent"));
  const auto names = file.attribute_names();
  CHECK(std::find(names.begin(), names.end(), "betas") != names.end());

  auto missing = message_of<sg::InputError>([&] { file.attribute_string("absent"); });
  CHECK_THAT(missing, Catch::Contains(path) && Catch::Contains("absent"));
  auto wrong = message_of<sg::InputError>([&] { file.attribute_int("name"); });
  CHECK_THAT(wrong, Catch::Contains(path) && Catch::Contains("'name'") && Catch::Contains("string"));
  auto wrong_number = message_of<sg::InputError>([&] { file.attribute_string("rate"); });
  CHECK_THAT(wrong_number, Catch::Contains("float"));
  auto not_scalar = message_of<sg::InputError>([&] { file.attribute_int("steps"); });
  CHECK_THAT(not_scalar, Catch::Contains("3 values"));
  CHECK_THROWS_AS(file.attribute_int("rate"), sg::InputError);  // a float is not an integer
}

TEST_CASE("groups list their members in creation order, strings and vectors round trip") {
  Scratch scratch;
  const auto path = scratch / "groups.h5";
  {
    sg::h5::Writer writer(path, false);
    auto table = writer.root().create_group("table");
    table.write_strings("zeta", {"10M", "", "héllo, \"world\""});
    table.write_doubles("alpha", {1.5, std::nan(""), -0.0});
    table.write_ints("mid", {1, -2, 3});
    table.write_strings("none", {});
    CHECK_THROWS_AS(writer.root().create_group("table"), sg::OutputError);
    writer.commit();
  }
  const auto file = sg::h5::File::open(path);
  CHECK(file.members() == std::vector<std::string>{"table"});
  const auto table = file.group("table");
  CHECK(table.members() == std::vector<std::string>{"zeta", "alpha", "mid", "none"});
  CHECK(file.exists("table/mid"));
  CHECK_FALSE(file.exists("table/nope/deeper"));
  CHECK(file.is_group("table"));
  CHECK(file.is_dataset("table/mid"));
  CHECK_FALSE(file.is_dataset("table"));
  CHECK(table.dataset("zeta").read_strings() == std::vector<std::string>{"10M", "", "héllo, \"world\""});
  const auto reals = table.dataset("alpha").read_doubles();
  CHECK(reals[0] == 1.5);
  CHECK(std::isnan(reals[1]));
  CHECK(table.dataset("mid").read_ints() == std::vector<int64_t>{1, -2, 3});
  CHECK(table.dataset("mid").read_doubles() == std::vector<double>{1, -2, 3});
  CHECK(table.dataset("none").read_strings().empty());
  CHECK_THROWS_AS(table.dataset("alpha").read_ints(), sg::InputError);
  CHECK_THROWS_AS(table.dataset("zeta").read_doubles(), sg::InputError);
  CHECK_THAT(message_of<sg::InputError>([&] { file.group("nope"); }), Catch::Contains(path) && Catch::Contains("/nope"));
  CHECK_THROWS_AS(file.dataset("table"), sg::InputError);
}

TEST_CASE("an extendable token dataset grows by appends and reads back by slices") {
  Scratch scratch;
  const auto path = scratch / "tokens.h5";
  // Expected stream: 0, 1, …, 9999 as uint16 ids (wrapping at 50257 is not reached).
  std::vector<uint16_t> expected(10000);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<uint16_t>(i * 7 % 50257);
  {
    sg::h5::Writer writer(path, false);
    auto tokens = writer.root().create_extendable("tokens", Dtype::uint16, /*chunk=*/1024);
    tokens.append(std::vector<uint16_t>(expected.begin(), expected.begin() + 3));
    tokens.append(std::vector<uint16_t>{});  // an empty piece is fine
    tokens.append(std::vector<uint16_t>(expected.begin() + 3, expected.begin() + 5000));
    tokens.append(expected.data() + 5000, 5000, Dtype::uint16);
    CHECK(tokens.numel() == 10000);
    auto wide = writer.root().create_extendable("wide", Dtype::int32, 4);
    wide.append(std::vector<int32_t>{-1, 70000, 3});
    wide.append(std::vector<int64_t>{5, 6});
    CHECK_THROWS_AS(writer.root().write_ints("fixed", {1, 2}).append(std::vector<int64_t>{3}), sg::OutputError);
    writer.commit();
  }
  const auto file = sg::h5::File::open(path);
  const auto tokens = file.dataset("tokens");
  CHECK(tokens.shape() == std::vector<int64_t>{10000});
  CHECK(tokens.dtype() == Dtype::uint16);
  std::vector<uint16_t> slice(1000);
  tokens.read_slice(4321, 1000, Dtype::uint16, slice.data());
  for (int64_t i = 0; i < 1000; i += 97) CHECK(slice[i] == expected[4321 + i]);
  CHECK(slice[999] == expected[5320]);
  std::vector<int64_t> buffer(4);
  tokens.read_slice(9996, 4, Dtype::int64, buffer.data());
  CHECK(buffer == std::vector<int64_t>{expected[9996], expected[9997], expected[9998], expected[9999]});
  CHECK_NOTHROW(tokens.read_slice(10000, 0, Dtype::int64, buffer.data()));
  CHECK_THAT(message_of<sg::InputError>([&] { tokens.read_slice(9990, 11, Dtype::int64, buffer.data()); }),
             Catch::Contains(path) && Catch::Contains("[9990, 10001)") && Catch::Contains("10000"));
  CHECK_THROWS_AS(tokens.read_slice(0, 1, Dtype::float32, buffer.data()), sg::InputError);
  CHECK(file.dataset("wide").read_ints() == std::vector<int64_t>{-1, 70000, 3, 5, 6});
}

TEST_CASE("writes are atomic: nothing under the final name until commit, existing files kept") {
  Scratch scratch;
  const auto path = scratch / "out.h5";
  {
    sg::h5::Writer writer(path, false);
    writer.root().write_ints("x", {1});
    CHECK_FALSE(exists(path));
    // Dropped without commit (as when an exception unwinds): no final file, no temporary left.
  }
  CHECK_FALSE(exists(path));
  CHECK(count_entries(scratch.dir) == 0);

  {
    sg::h5::Writer writer(path, false);
    writer.root().write_ints("x", {1});
    writer.commit();
  }
  REQUIRE(exists(path));
  const auto before = slurp(path);
  CHECK_THAT(message_of<sg::OutputError>([&] { sg::h5::Writer again(path, false); }),
             Catch::Contains(path) && Catch::Contains("exists"));
  CHECK_THROWS_AS(sg::h5::check_writable(path, false), sg::OutputError);
  CHECK(slurp(path) == before);

  {
    sg::h5::Writer writer(path, /*force=*/true);
    writer.root().write_ints("x", {2});
    CHECK(sg::h5::File::open(path).dataset("x").read_ints() == std::vector<int64_t>{1});  // old one still in place
    writer.commit();
  }
  CHECK(sg::h5::File::open(path).dataset("x").read_ints() == std::vector<int64_t>{2});
  CHECK(count_entries(scratch.dir) == 1);

  CHECK_THAT(message_of<sg::OutputError>([&] { sg::h5::check_writable(scratch / "no/such/dir/out.h5", true); }),
             Catch::Contains("does not exist"));
  CHECK_THROWS_AS(sg::h5::check_writable(scratch.dir, true), sg::OutputError);
  CHECK_NOTHROW(sg::h5::check_writable(scratch / "new.h5", false));
}

TEST_CASE("check_writable: every file in an input folder is an input, read or not, --force or not") {
  Scratch scratch;
  const auto folder = scratch / "checkpoint";
  REQUIRE(mkdir(folder.c_str(), 0755) == 0);
  REQUIRE(mkdir((folder + "/sub").c_str(), 0755) == 0);
  sg_test::write_bytes(folder + "/tokenizer.json", "{}");
  sg_test::write_bytes(folder + "/vocab.json", "{}");
  sg_test::write_bytes(folder + "/sub/part.txt", "text");
  REQUIRE(symlink((folder + "/vocab.json").c_str(), (scratch / "link.json").c_str()) == 0);
  const std::vector<std::string> inputs{folder + "/tokenizer.json", folder};
  for (const auto& output : {folder + "/vocab.json", folder + "/sub/part.txt", scratch / "link.json"})
    CHECK_THAT(message_of<sg::OutputError>([&] { sg::h5::check_writable(output, /*force=*/true, inputs); }),
               Catch::Contains(output) && Catch::Contains("input folder " + folder));
  CHECK(slurp(folder + "/vocab.json") == "{}");
  // A new file in the folder replaces nothing; a file outside it is no input.
  CHECK_NOTHROW(sg::h5::check_writable(folder + "/new.h5", false, inputs));
  sg_test::write_bytes(scratch / "other.h5", "x");
  CHECK_NOTHROW(sg::h5::check_writable(scratch / "other.h5", true, inputs));
}

TEST_CASE("bad input files are InputErrors that name the file") {
  Scratch scratch;
  const auto text = scratch / "notes.txt";
  std::ofstream(text) << "tier,arm\n10M,baseline\n";
  CHECK_FALSE(sg::h5::is_hdf5(text));
  CHECK_THAT(message_of<sg::InputError>([&] { sg::h5::File::open(text); }),
             Catch::Contains(text) && Catch::Contains("not an HDF5 file"));
  const auto absent = scratch / "absent.h5";
  CHECK_THAT(message_of<sg::InputError>([&] { sg::h5::File::open(absent); }),
             Catch::Contains(absent) && Catch::Contains("no such file"));

  // A valid file cut in half keeps its signature but is damaged.
  const auto good = scratch / "good.h5";
  {
    sg::h5::Writer writer(good, false);
    sg::h5::set_format(writer.root(), "sinkgate-run", 1);
    const std::vector<float> w(64 * 64, 0.5f);
    writer.root().write_array("w", Dtype::float32, {64, 64}, w.data());
    writer.commit();
  }
  const auto bytes = slurp(good);
  const auto cut = scratch / "cut.h5";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  CHECK_THAT(message_of<sg::InputError>([&] {
               const auto file = sg::h5::File::open(cut);
               std::vector<float> w(64 * 64);
               file.dataset("w").read_array(Dtype::float32, w.data());
             }),
             Catch::Contains(cut));

  // Format and version checks.
  const auto file = sg::h5::File::open(good);
  CHECK(sg::h5::check_format(file, "sinkgate-run", 1) == 1);
  auto other = message_of<sg::InputError>([&] { sg::h5::check_format(file, "sinkgate-result", 1); });
  CHECK_THAT(other, Catch::Contains(good) && Catch::Contains("sinkgate-run") && Catch::Contains("sinkgate-result"));
  const auto newer = scratch / "newer.h5";
  {
    sg::h5::Writer writer(newer, false);
    sg::h5::set_format(writer.root(), "sinkgate-run", 7);
    writer.commit();
  }
  try {
    sg::h5::check_format(sg::h5::File::open(newer), "sinkgate-run", 1);
    FAIL("a newer schema_version was accepted");
  } catch (const sg::InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains(newer) && Catch::Contains("schema_version 7"));
    CHECK_FALSE(e.hint().empty());
  }
  const auto plain = scratch / "plain.h5";
  {
    sg::h5::Writer writer(plain, false);
    writer.commit();
  }
  CHECK_THAT(message_of<sg::InputError>([&] { sg::h5::check_format(sg::h5::File::open(plain), "sinkgate-run", 1); }),
             Catch::Contains("not a sinkgate file"));
}

TEST_CASE("a writer removes the temporaries its path was left by killed writers, and no others") {
  sg_test::Scratch scratch;
  const auto path = scratch / "out.h5";
  // A pid that surely is gone: a child that has exited and been reaped.
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  const auto stale = path + ".tmp." + std::to_string(child);
  const auto alive = path + ".tmp." + std::to_string(getppid());  // a live process's (the test's parent)
  const auto other = scratch / "other.h5.tmp." + std::to_string(child);  // another output's
  for (const auto& name : {stale, alive, other}) std::ofstream(name) << "partial";
  {
    sg::h5::Writer writer(path, /*force=*/false);
    writer.root().write_ints("x", {1});
    writer.commit();
  }
  CHECK(!std::ifstream(stale).good());
  CHECK(std::ifstream(alive).good());
  CHECK(std::ifstream(other).good());
  CHECK(std::ifstream(path).good());
}

namespace {
/// Everything read_everything() reads from a file made by write_sample().
struct Sample {
  std::string format, note;
  std::vector<std::string> names, column;
  std::vector<int64_t> counts, tokens;
  std::vector<double> values;
  std::vector<float> weights;
  bool operator==(const Sample& o) const {
    return format == o.format && note == o.note && names == o.names && column == o.column && counts == o.counts &&
           tokens == o.tokens && values == o.values && weights == o.weights;
  }
};

void write_sample(const std::string& path) {
  sg::h5::Writer writer(path, false);
  auto& root = writer.root();
  sg::h5::set_format(root, "sinkgate-result", 1);
  root.set_attribute("note", std::string(300, 'n'));
  root.set_attribute("names", std::vector<std::string>{"tier", "arm", "", "séed"});
  root.set_attribute("counts", std::vector<int64_t>{3, -1, 1 << 20});
  auto table = root.create_group("table");
  table.write_strings("arm", {"baseline", "combo2", "normgate"});
  table.write_doubles("val_loss", {3.25, 3.5, -0.125});
  std::vector<float> w(16 * 4);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.25f * static_cast<float>(i);
  root.write_array("model/w", Dtype::float32, {16, 4}, w.data());
  auto tokens = root.create_extendable("tokens", Dtype::uint16, 64);
  tokens.append(std::vector<uint16_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  writer.commit();
}

Sample read_everything(const std::string& path) {
  Sample s;
  const auto file = sg::h5::File::open(path);
  s.format = file.attribute_string("format");
  s.note = file.attribute_string("note");
  s.names = file.attribute_strings("names");
  s.counts = file.attribute_ints("counts");
  s.column = file.dataset("table/arm").read_strings();
  s.values = file.dataset("table/val_loss").read_doubles();
  const auto w = file.dataset("model/w");
  s.weights.resize(static_cast<size_t>(w.numel()));
  w.read_array(Dtype::float32, s.weights.data());
  s.tokens = file.dataset("tokens").read_ints();
  for (const auto& member : file.members()) (void)member;
  return s;
}
}  // namespace

// Every metadata structure carries a checksum (the 1.8 file format), every dataset a Fletcher32
// checksum, and strings are fixed-length (no global heap): so a damaged byte anywhere is an
// InputError, or lands where nothing is read (padding, free space) and changes nothing read. It is
// never a crash, and never a different value decoded.
TEST_CASE("every byte of a file damaged in turn: an InputError or the same values, never a crash or a wrong value") {
  Scratch scratch;
  const auto good = scratch / "good.h5";
  write_sample(good);
  const Sample original = read_everything(good);
  REQUIRE(original.note == std::string(300, 'n'));
  REQUIRE(original.names == std::vector<std::string>{"tier", "arm", "", "séed"});
  REQUIRE(original.tokens.size() == 10);
  const std::string bytes = slurp(good);
  const auto damaged = scratch / "damaged.h5";
  // One byte changed in place and restored after each read: rewriting the file by truncation made
  // ext4 flush it to the disk at every close, most of this test's time.
  std::ofstream(damaged, std::ios::binary) << bytes;
  std::fstream copy(damaged, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(copy.good());
  const auto put = [&copy](size_t at, char byte) {
    copy.seekp(static_cast<std::streamoff>(at));
    copy.put(byte);
    copy.flush();
  };
  size_t errors = 0, unchanged = 0;
  std::vector<size_t> wrong;
  for (size_t at = 0; at < bytes.size(); ++at) {
    put(at, static_cast<char>(bytes[at] ^ 0x5A));
    try {
      if (read_everything(damaged) == original) ++unchanged;
      else wrong.push_back(at);
    } catch (const sg::InputError& e) {
      ++errors;
      if (std::string(e.what()).find(damaged) == std::string::npos) wrong.push_back(at);
    }
    put(at, bytes[at]);
  }
  REQUIRE(slurp(damaged) == bytes);  // every byte restored: each read saw one change alone
  INFO(bytes.size() << " bytes: " << errors << " InputErrors, " << unchanged << " harmless; wrong at "
                     << (wrong.empty() ? std::string("none") : std::to_string(wrong.front())) << " and "
                     << (wrong.empty() ? 0 : wrong.size() - 1) << " more");
  CHECK(wrong.empty());
  CHECK(errors > 1000);  // the bytes that matter are checked (most of a small file is padding)
}

TEST_CASE("a dataset claiming more bytes than its file holds is refused before anything is allocated") {
  Scratch scratch;
  const auto path = scratch / "cut.h5";
  {
    sg::h5::Writer writer(path, false);
    std::vector<double> big(1 << 16, 1.5);
    writer.root().write_doubles("big", big);
    writer.commit();
  }
  // The metadata at the front survives, the data does not: the shape now claims 512 KiB of a smaller file.
  const auto bytes = slurp(path);
  const auto damaged = scratch / "damaged.h5";
  std::ofstream(damaged, std::ios::binary) << bytes.substr(0, bytes.size() / 4);
  CHECK_THROWS_AS(
      [&] {
        const auto file = sg::h5::File::open(damaged);
        (void)file.dataset("big").shape();
      }(),
      sg::InputError);
}

// --- files that use what sinkgate never writes (tests/h5_hostile.py rewrites them with h5py) ----

namespace {
/// Runs tests/h5_hostile.py EDIT on `source` into `out` (for `dataset`); false without SG_PYTHON.
bool hostile(const std::string& edit, const std::string& source, const std::string& out, const std::string& dataset) {
  const std::string python = SG_PYTHON;
  if (python.empty()) return false;
  const std::string line = sg_test::shell_quote(python) + " " +
                           sg_test::shell_quote(std::string(SG_TEST_SOURCE_DIR) + "/h5_hostile.py") + " " + edit + " " +
                           sg_test::shell_quote(source) + " " + sg_test::shell_quote(out) +
                           (dataset.empty() ? std::string() : " --dataset " + sg_test::shell_quote(dataset)) + " >/dev/null";
  INFO(line);
  REQUIRE(std::system(line.c_str()) == 0);
  return true;
}

/// A file like a run file and a result table at once: a 2-D float32 weight of several chunks'
/// worth, curves, a string column, a token stream.
void write_mixed(const std::string& path) {
  sg::h5::Writer writer(path, false);
  auto& root = writer.root();
  sg::h5::set_format(root, "sinkgate-run", 1);
  std::vector<float> w(64 * 32);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i) + 0.5f;
  root.write_array("model/w", Dtype::float32, {64, 32}, w.data());
  root.write_doubles("curves/val_loss", {5.255, 5.1, 4.9});
  root.write_ints("curves/step", {1, 2, 3});
  root.write_strings("table/arm", {"baseline", "combo2"});
  auto tokens = root.create_extendable("tokens/train", Dtype::uint16, 256);
  std::vector<int32_t> ids(1000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i % 300 + 1);
  tokens.append(ids);  // converted to the stored uint16
  tokens.append(std::vector<uint16_t>(200, 7));
  writer.commit();
}

/// Reads every dataset of a write_mixed() file whole.
void read_mixed(const std::string& path) {
  const auto file = sg::h5::File::open(path);
  std::vector<float> w(64 * 32);
  file.dataset("model/w").read_array(Dtype::float32, w.data());
  std::vector<double> w64(64 * 32);
  file.dataset("model/w").read_array(Dtype::float64, w64.data());
  (void)file.dataset("curves/val_loss").read_doubles();
  (void)file.dataset("curves/step").read_ints();
  (void)file.dataset("curves/step").read_doubles();
  (void)file.dataset("table/arm").read_strings();
  (void)file.dataset("tokens/train").read_ints();
  std::vector<int32_t> ids(1200);
  file.dataset("tokens/train").read_array(Dtype::int32, ids.data());
  std::vector<uint8_t> narrow(3);
  file.dataset("curves/step").read_array(Dtype::uint8, narrow.data());
}
}  // namespace

TEST_CASE("a file using an HDF5 feature sinkgate never writes is refused when opened, naming the file, the object and the feature") {
  Scratch scratch;
  const auto good = scratch / "good.h5";
  write_mixed(good);
  REQUIRE_NOTHROW(read_mixed(good));
  struct Case {
    const char* edit;
    const char* dataset;
    const char* object;
    const char* feature;
  };
  const Case cases[] = {
      {"external-link", "/curves/val_loss", "/curves/val_loss", "external link"},
      {"external-link-fifo", "/model/w", "/model/w", "external link"},
      {"soft-link", "/curves/step", "/curves/step", "soft link"},
      {"soft-link-dangling", "/table/arm", "/table/arm", "soft link"},
      {"external-storage", "/curves/val_loss", "/curves/val_loss", "external raw-data storage"},
      {"external-fifo", "/model/w", "/model/w", "external raw-data storage"},
      {"external-zero", "/tokens/train", "/tokens/train", "external raw-data storage"},
      {"virtual", "/curves/val_loss", "/curves/val_loss", "virtual dataset"},
      {"sparse-extend", "/curves/step", "/curves/step", "more than the file"},
      {"sparse-hole", "/model/w", "/model/w", "chunks never written"},
      {"gzip", "/curves/val_loss", "/curves/val_loss", "filter 1 (deflate)"},
      {"committed-type", "", "/sg_committed_type", "committed datatype"},
      {"compound-attribute", "/curves/step", "/curves/step's attribute 'sg_compound'", "compound type"},
      {"rank-9", "", "/sg_rank9", "9 dimensions"},
  };
  for (const auto& c : cases) {
    const auto path = scratch / (std::string(c.edit) + ".h5");
    if (!hostile(c.edit, good, path, c.dataset)) {
      WARN("SG_PYTHON is not set: the h5py-made files are not tested");
      return;
    }
    INFO(c.edit);
    const auto message = message_of<sg::InputError>([&] { sg::h5::File::open(path); });
    CHECK_THAT(message, Catch::Contains(path) && Catch::Contains(c.object) && Catch::Contains(c.feature));
  }
}

TEST_CASE("a whole chunk overwritten by zeros with its Fletcher32 (a lost write) fails the dataset's CRC32C") {
  Scratch scratch;
  const auto good = scratch / "good.h5";
  write_mixed(good);
  // The stored checksum is the CRC32C of the values' little-endian bytes.
  const auto file = sg::h5::File::open(good);
  const std::vector<double> loss{5.255, 5.1, 4.9};
  CHECK(file.dataset("curves/val_loss").attribute_int("sg_crc32c") ==
        static_cast<int64_t>(sg::crc32c(loss.data(), loss.size() * sizeof(double))));
  for (const char* dataset : {"/model/w", "/curves/val_loss", "/curves/step", "/table/arm", "/tokens/train"}) {
    const auto path = scratch / "zeroed.h5";
    if (!hostile("zero-chunk", good, path, dataset)) {
      WARN("SG_PYTHON is not set: the zeroed chunk is not tested");
      return;
    }
    INFO(dataset);
    const auto message = message_of<sg::InputError>([&] { read_mixed(path); });
    CHECK_THAT(message, Catch::Contains(path) && Catch::Contains(dataset) && Catch::Contains("fails its checksum"));
  }
  // A file written before datasets carried a CRC32C is read, unverified.
  const auto old = scratch / "old.h5";
  REQUIRE(hostile("no-checksum", good, old, ""));
  CHECK_NOTHROW(read_mixed(old));
  CHECK_FALSE(sg::h5::File::open(old).dataset("model/w").has_attribute("sg_crc32c"));
  CHECK_FALSE(sg::h5::File::open(old).exists("tokens/train_chunk_crc32c"));
}

TEST_CASE("an extendable dataset keeps a CRC32C per chunk, and slice reads refuse a chunk zeroed with its Fletcher32") {
  Scratch scratch;
  const auto good = scratch / "stream.h5";
  // 70 ids in chunks of 16 (the last holds 6), appended in pieces that straddle chunk boundaries.
  std::vector<uint16_t> ids(70);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint16_t>(1000 + 7 * i);
  {
    sg::h5::Writer writer(good, false);
    auto tokens = writer.root().create_extendable("tokens/train", Dtype::uint16, 16);
    size_t at = 0;
    for (size_t piece : {5, 30, 1, 20, 14}) {
      tokens.append(std::vector<uint16_t>(ids.begin() + at, ids.begin() + at + piece));
      at += piece;
    }
    REQUIRE(at == ids.size());
    writer.commit();
  }
  // The table: the CRC32C of each chunk's little-endian uint16 bytes.
  const auto file = sg::h5::File::open(good);
  std::vector<int64_t> expected;
  for (size_t begin = 0; begin < ids.size(); begin += 16)
    expected.push_back(sg::crc32c(ids.data() + begin, std::min<size_t>(16, ids.size() - begin) * sizeof(uint16_t)));
  CHECK(file.dataset("tokens/train_chunk_crc32c").read_ints() == expected);
  auto read = [](const sg::h5::Dataset& d, int64_t offset, int64_t count) {
    std::vector<int64_t> out(static_cast<size_t>(count));
    d.read_slice(offset, count, Dtype::int64, out.data());
    return out;
  };
  const auto stream = file.dataset("tokens/train");
  CHECK(read(stream, 14, 20) == std::vector<int64_t>(ids.begin() + 14, ids.begin() + 34));
  CHECK(read(stream, 64, 6) == std::vector<int64_t>(ids.begin() + 64, ids.end()));

  const auto zeroed = scratch / "zeroed.h5";
  if (!hostile("zero-chunk", good, zeroed, "/tokens/train")) {
    WARN("SG_PYTHON is not set: the zeroed chunk is not tested");
    return;
  }
  // Exactly one chunk was zeroed: a slice touching it is an InputError naming the file, the
  // dataset and the chunk; a slice of another chunk reads the ids written.
  const auto damaged = sg::h5::File::open(zeroed).dataset("tokens/train");
  int refused = 0;
  for (int64_t chunk = 0; chunk * 16 < 70; ++chunk) {
    const int64_t begin = chunk * 16 + 2, count = 3;
    INFO("chunk " << chunk);
    std::vector<int64_t> got;
    std::string message;
    try {
      got = read(damaged, begin, count);
    } catch (const sg::InputError& e) {
      message = e.what();
    }
    if (message.empty()) {
      CHECK(got == std::vector<int64_t>(ids.begin() + begin, ids.begin() + begin + count));
      continue;
    }
    ++refused;
    CHECK_THAT(message, Catch::Contains(zeroed) && Catch::Contains("/tokens/train") &&
                            Catch::Contains("chunk " + std::to_string(chunk)));
    // Refused again on a second read, and by a slice that only ends in it.
    CHECK_THROWS_AS(read(damaged, begin, 1), sg::InputError);
    if (chunk > 0) CHECK_THROWS_AS(read(damaged, chunk * 16 - 1, 2), sg::InputError);
  }
  CHECK(refused == 1);
  CHECK_THROWS_AS(damaged.read_ints(), sg::InputError);
  // A zeroed chunk of the table itself: every read that checks the table refuses the file.
  const auto table_zeroed = scratch / "table_zeroed.h5";
  REQUIRE(hostile("zero-chunk", good, table_zeroed, "/tokens/train_chunk_crc32c"));
  const auto bad_table = sg::h5::File::open(table_zeroed).dataset("tokens/train");
  CHECK_THROWS_WITH(read(bad_table, 0, 1), Catch::Contains(table_zeroed) && Catch::Contains("chunk 0"));
  CHECK_THROWS_AS(bad_table.read_ints(), sg::InputError);
}
