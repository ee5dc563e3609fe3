// test_input_file.cpp — open_input, the one way lib/ opens an input: a regular file at the size of
// the opened file; folders, devices, sockets, dangling links and cycles of links refused by name;
// a FIFO refused, or read once, and never waited on.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <functional>
#include <string>

#include "lib/base/error.h"
#include "lib/base/input_file.h"
#include "lib/io/safetensors.h"
#include "tests/support.h"

using Catch::Contains;

namespace {

/// The InputError `body` throws, run in a child process that SIGALRM ends after 20 s: "(hung)" when
/// it blocked, "(no error)" when it returned, "(other)" for any other exception.
std::string error_in_child(const std::function<void()>& body) {
  int channel[2];
  REQUIRE(pipe(channel) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(channel[0]);
    alarm(20);
    std::string message = "(no error)";
    try {
      body();
    } catch (const sg::InputError& error) {
      message = error.what();
    } catch (...) {
      message = "(other)";
    }
    if (write(channel[1], message.data(), message.size()) < 0) _exit(2);
    _exit(0);
  }
  close(channel[1]);
  std::string message;
  char buffer[4096];
  ssize_t got;
  while ((got = read(channel[0], buffer, sizeof buffer)) > 0) message.append(buffer, static_cast<size_t>(got));
  close(channel[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (WIFSIGNALED(status)) return "(hung)";
  return message;
}

}  // namespace

TEST_CASE("open_input reads a regular file, or a link to one, at the size of the opened file") {
  sg_test::Scratch scratch;
  const auto file = scratch / "data.txt";
  sg_test::write_bytes(file, "hello, world");
  REQUIRE(symlink(file.c_str(), (scratch / "link").c_str()) == 0);
  for (const auto& path : {file, scratch / "link"}) {
    auto input = sg::open_input(path);
    CHECK(input.size() == 12);
    CHECK(input.read_all(100, "") == "hello, world");
  }
  auto input = sg::open_input(file);
  char middle[5];
  input.read_at(7, middle, 5, "the word");
  CHECK(std::string(middle, 5) == "world");
  CHECK_THROWS_WITH(input.read_at(10, middle, 5, "the word"), Contains(file) && Contains("inside the word"));
  CHECK_THROWS_WITH(sg::open_input(file).read_all(5, "the greeting"),
                    Contains("the greeting " + file) && Contains("more than the 5 bytes"));
}

TEST_CASE("open_input refuses, by name, what is no regular file") {
  sg_test::Scratch scratch;
  CHECK_THROWS_WITH(sg::open_input(scratch / "absent"), Contains(scratch / "absent") && Contains("no such file"));
  CHECK_THROWS_WITH(sg::open_input(scratch.dir), Contains(scratch.dir + ": is a directory, expected a file"));
  CHECK_THROWS_WITH(sg::open_input("/dev/null"), Contains("/dev/null: a character device, not a regular file"));
  CHECK_THROWS_WITH(sg::open_input("/dev/zero"), Contains("/dev/zero: a character device"));
  REQUIRE(symlink((scratch / "nowhere").c_str(), (scratch / "dangling").c_str()) == 0);
  CHECK_THROWS_WITH(sg::open_input(scratch / "dangling"), Contains(scratch / "dangling") && Contains("dangling"));
  REQUIRE(symlink((scratch / "l2").c_str(), (scratch / "l1").c_str()) == 0);
  REQUIRE(symlink((scratch / "l1").c_str(), (scratch / "l2").c_str()) == 0);
  CHECK_THROWS_WITH(sg::open_input(scratch / "l1"), Contains(scratch / "l1") && Contains("symbolic links"));
  // A UNIX socket bound to a path.
  const auto socket_path = scratch / "socket";
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket_path.c_str());
  REQUIRE(bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  CHECK_THROWS_WITH(sg::open_input(socket_path), Contains(socket_path) && Contains("socket"));
  close(fd);
}

TEST_CASE("open_input never waits on a FIFO: refused, or read once when a writer is there") {
  sg_test::Scratch scratch;
  const auto fifo = scratch / "pipe";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  // No writer: a reader that needs the size answers at once, a stream reader after waiting
  // kFifoWriterWaitMs for one; both name the FIFO.
  CHECK_THAT(error_in_child([&] { sg::open_input(fifo); }), Contains(fifo) && Contains("FIFO"));
  CHECK_THAT(error_in_child([&] { sg::open_input(fifo, sg::Fifo::read_once); }),
             Contains(fifo) && Contains("no writer"));
  // A writer: a stream reader reads it once; a reader that needs the size refuses it.
  const pid_t writer = fork();
  REQUIRE(writer >= 0);
  if (writer == 0) {
    alarm(10);
    const int out = open(fifo.c_str(), O_WRONLY);
    const std::string text = "through the pipe";
    if (out < 0 || write(out, text.data(), text.size()) != static_cast<ssize_t>(text.size())) _exit(1);
    usleep(200000);
    _exit(0);
  }
  // The writer may not have opened its end yet: retried while the FIFO says it has none.
  std::string read_back;
  for (int attempt = 0; attempt < 100 && read_back.empty(); ++attempt) {
    try {
      auto input = sg::open_input(fifo, sg::Fifo::read_once);
      CHECK(input.is_fifo());
      read_back = input.read_all(1000, "");
    } catch (const sg::InputError& error) {
      REQUIRE_THAT(error.what(), Contains("no writer"));
      usleep(20000);
    }
  }
  int status = 0;
  waitpid(writer, &status, 0);
  CHECK(read_back == "through the pipe");
}

TEST_CASE("a checkpoint's weights that are a FIFO or a device are refused by name, at once") {
  sg_test::Scratch scratch;
  const auto fifo = scratch / "model.safetensors";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THAT(error_in_child([&] { sg::SafetensorsFile::open(fifo); }), Contains(fifo) && Contains("FIFO"));
  CHECK_THAT(error_in_child([&] { sg::SafetensorsFolder::open(scratch.dir); }), Contains(fifo) && Contains("FIFO"));
  sg_test::Scratch other;
  REQUIRE(symlink("/dev/zero", (other / "model.safetensors").c_str()) == 0);
  CHECK_THAT(error_in_child([&] { sg::SafetensorsFolder::open(other.dir); }),
             Contains(other / "model.safetensors") && Contains("a character device"));
}
