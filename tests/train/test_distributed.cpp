// test_distributed.cpp — lib/train/distributed and data-parallel sg-train over Gloo on the CPU:
// the launch environment (torchrun, Slurm), the split of a step's batch (the windows of all
// ranks, hashed per step, are the single process's), and real runs of sg-train as two ranks on
// localhost: the weights equal those of one process on the same batch, the ranks agree bitwise,
// a resumed two-rank run ends bitwise where an uninterrupted one does, and a lost or missing
// rank stops the others with exit code 7 and a message naming it.
#include "lib/train/distributed.h"

#include <unistd.h>

#include <map>

#include "lib/base/error.h"
#include "lib/io/provenance.h"
#include "lib/model/checkpoint.h"
#include "lib/model/tensors.h"
#include "lib/train/train.h"
#include "tests/support.h"

using Catch::Matchers::Contains;

namespace {

std::function<const char*(const char*)> environment(const std::map<std::string, std::string>& values) {
  return [values](const char* name) -> const char* {
    const auto it = values.find(name);
    return it == values.end() ? nullptr : it->second.c_str();
  };
}

/// A port for this test process's ranks (tests run in parallel, each in its own process).
int free_port(int offset) { return 20000 + static_cast<int>(getpid() % 15000) * 2 + offset; }

/// A token file of random GPT-2 ids, made once per test process.
const std::string& token_file() {
  static sg_test::Scratch scratch("sg-distributed-tokens");
  static const std::string path = [] {
    sg_test::write_random_tokens(scratch / "tokens.h5", 50257, 120000, 8000);
    return scratch / "tokens.h5";
  }();
  return path;
}

/// The shell command of one sg-train rank, its output in LOG and its exit code in LOG.rc.
std::string rank_command(int rank, int world, int port, const std::string& arguments, const std::string& log) {
  return "RANK=" + std::to_string(rank) + " WORLD_SIZE=" + std::to_string(world) + " LOCAL_RANK=" + std::to_string(rank) +
         " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " " + sg_test::shell_quote(std::string(SG_BIN_DIR) + "/sg-train") +
         " " + arguments + " > " + sg_test::shell_quote(log) + " 2>&1; echo $? > " + sg_test::shell_quote(log + ".rc");
}

/// Runs `world` ranks of sg-train with `arguments` and waits for them; returns their exit codes.
std::vector<int> run_ranks(int world, int port, const std::string& arguments, const std::string& log_prefix) {
  std::string script;
  for (int r = 0; r < world; ++r) script += "( " + rank_command(r, world, port, arguments, log_prefix + std::to_string(r)) + " ) & ";
  script += "wait";
  REQUIRE(std::system(("sh -c " + sg_test::shell_quote(script)).c_str()) == 0);
  std::vector<int> codes;
  for (int r = 0; r < world; ++r) codes.push_back(std::stoi(sg_test::slurp(log_prefix + std::to_string(r) + ".rc")));
  return codes;
}

/// Runs two ranks of sg-train with `arguments` (whose -o is `output`), sends `signal` to rank 1
/// alone (found by its environment) six seconds in, once both train, and waits for both.
void run_two_and_signal_rank1(const std::string& arguments, const std::string& output, const std::string& signal,
                              int port, const std::string& log_prefix) {
  const std::string script = "( " + rank_command(0, 2, port, arguments, log_prefix + "0") + " ) & ( " +
                             rank_command(1, 2, port, arguments, log_prefix + "1") + " ) & sleep 6; for p in $(pgrep -f -- " +
                             sg_test::shell_quote(output) + "); do if tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null | " +
                             "grep -qx RANK=1; then kill -" + signal + " $p; fi; done; wait";
  REQUIRE(std::system(("sh -c " + sg_test::shell_quote(script)).c_str()) == 0);
}

std::string train_arguments(const std::string& output, const std::string& extra = "") {
  return "--tokens " + sg_test::shell_quote(token_file()) + " --tier tiny --arm combo2 --threads 1 --precision float32 --set iterations=6 " +
         "--set warmup=2 --set eval_interval=3 --set micro_batch=2 --set accumulation=4 --set eval_batches=2 " +
         "--set final_eval_batches=2 --log-interval 0 -o " + sg_test::shell_quote(output) + " " + extra;
}

double max_weight_difference(const std::string& a, const std::string& b) {
  auto first = sg::load_model(a, torch::kCPU), second = sg::load_model(b, torch::kCPU);
  auto other = second->named_parameters();
  double worst = 0;
  for (const auto& item : first->named_parameters())
    worst = std::max(worst, (item.value() - other[item.key()]).abs().max().item<double>());
  return worst;
}

}  // namespace

TEST_CASE("the launch environment: torchrun, Slurm, one process") {
  auto env = sg::distributed_env(environment({}));
  CHECK_FALSE(env.distributed());
  env = sg::distributed_env(environment(
      {{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "10.0.0.2"}, {"MASTER_PORT", "29400"}}));
  CHECK(env.launcher == "torchrun");
  CHECK(env.rank == 3);
  CHECK(env.world_size == 8);
  CHECK(env.local_rank == 1);
  CHECK(env.master_addr == "10.0.0.2");
  CHECK(env.master_port == 29400);
  env = sg::distributed_env(environment({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "1"},
                                         {"SLURM_JOB_NODELIST", "gpu[07-08,11],cpu1"}}));
  CHECK(env.launcher == "slurm");
  CHECK(env.rank == 5);
  CHECK(env.world_size == 16);
  CHECK(env.local_rank == 1);
  CHECK(env.master_addr == "gpu07");
  CHECK(env.master_port == 29500);
  // One Slurm task is one process, as before.
  CHECK_FALSE(sg::distributed_env(environment({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}})).distributed());
  CHECK_THROWS_WITH(sg::distributed_env(environment({{"RANK", "0"}})), Contains("RANK and WORLD_SIZE go together"));
  CHECK_THROWS_WITH(sg::distributed_env(environment({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}})),
                    Contains("rank 2 is outside a world of 2"));
  CHECK_THROWS_WITH(sg::distributed_env(environment({{"RANK", "0"}, {"WORLD_SIZE", "2"}})), Contains("MASTER_ADDR is not set"));
  CHECK_THROWS_WITH(sg::distributed_env(environment({{"RANK", "x"}, {"WORLD_SIZE", "2"}})), Contains("RANK='x'"));
  CHECK(sg::first_slurm_host("node17") == "node17");
  CHECK(sg::first_slurm_host("a[3-5]") == "a3");
  CHECK(sg::first_slurm_host("rack1-n[009,012]-ib,other") == "rack1-n009-ib");
}

TEST_CASE("the ranks' windows of a step, hashed, are the single process's") {
  sg_test::Scratch scratch;
  sg_test::write_random_tokens(scratch / "tokens.h5", 500, 40000, 4000);
  const auto tokens = sg::TokenFile::open(scratch / "tokens.h5");
  auto config = sg::make_run_config("tiny", "baseline", 3);
  sg::apply_overrides(config, {"vocab_size=500", "micro_batch=3", "accumulation=4", "block_size=16"});
  const auto hash = [](const std::vector<torch::Tensor>& batches) {
    std::string bytes;
    for (const auto& b : batches) {
      const auto c = b.contiguous();
      bytes.append(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.numel() * c.element_size()));
    }
    return sg::sha256_bytes(bytes);
  };
  for (int64_t step : {0, 1, 7}) {
    std::vector<torch::Tensor> one;
    for (int64_t micro = 0; micro < config.train.accumulation; ++micro)
      one.push_back(sg::training_batch(tokens, config, step, micro).inputs);
    for (int64_t world : {1, 2, 3, 4, 6, 12}) {
      INFO("step " << step << ", world " << world);
      std::vector<torch::Tensor> all;
      for (int64_t rank = 0; rank < world; ++rank)
        for (const auto& [first, count] : sg::rank_chunks(config.train, step, rank, world))
          all.push_back(sg::sample_batch(tokens, sg::Split::train, config.seed, first, count, config.model.block_size).inputs);
      CHECK(hash(all) == hash(one));
    }
  }
  CHECK_THROWS_WITH(sg::rank_chunks(config.train, 0, 0, 5), Contains("does not divide among 5 ranks"));
  const auto share = sg::rank_share(10, 2, 3);
  CHECK(share.first == 6);
  CHECK(share.second == 4);
}

TEST_CASE("two ranks over Gloo train as one process does, and agree bitwise") {
  sg_test::Scratch scratch;
  const auto codes = run_ranks(2, free_port(0), train_arguments(scratch / "two.h5"), scratch / "rank");
  INFO(sg_test::slurp(scratch / "rank0") << sg_test::slurp(scratch / "rank1"));
  REQUIRE(codes == std::vector<int>{0, 0});
  CHECK_THAT(sg_test::slurp(scratch / "rank0"), Contains("2 ranks (torchrun), 4 sequences each a step") &&
                                                    Contains("the 2 ranks hold the same weights after step 6"));
  REQUIRE(std::system((sg_test::shell_quote(std::string(SG_BIN_DIR) + "/sg-train") + " " +
                       train_arguments(scratch / "one.h5", "--log-level quiet"))
                          .c_str()) == 0);
  const double difference = max_weight_difference(scratch / "one.h5", scratch / "two.h5");
  std::printf("two ranks vs one process, 6 steps: max |weight difference| %.2e\n", difference);
  CHECK(difference < 1e-5);
  CHECK(sg::read_run_state(scratch / "two.h5").final_val_loss ==
        Approx(sg::read_run_state(scratch / "one.h5").final_val_loss).epsilon(1e-5));
}

TEST_CASE("a two-rank run stopped and resumed ends bitwise where an uninterrupted one does") {
  sg_test::Scratch scratch;
  REQUIRE(run_ranks(2, free_port(1), train_arguments(scratch / "straight.h5"), scratch / "straight") == std::vector<int>{0, 0});
  REQUIRE(run_ranks(2, free_port(1), train_arguments(scratch / "resumed.h5", "--stop-after 4"), scratch / "first") ==
          std::vector<int>{0, 0});
  CHECK(sg::read_run_state(scratch / "resumed.h5").step == 4);
  REQUIRE(run_ranks(2, free_port(1),
                    "--tokens " + sg_test::shell_quote(token_file()) + " --threads 1 --resume -o " +
                        sg_test::shell_quote(scratch / "resumed.h5"),
                    scratch / "second") == std::vector<int>{0, 0});
  CHECK(max_weight_difference(scratch / "straight.h5", scratch / "resumed.h5") == 0.0);
  CHECK(sg::read_run_state(scratch / "resumed.h5").final_val_loss == sg::read_run_state(scratch / "straight.h5").final_val_loss);
}

TEST_CASE("a lost rank stops the others with exit code 7, naming it, and a missing one times out") {
  sg_test::Scratch scratch;
  const int port = free_port(0) + 1;
  const std::string common = "--tokens " + sg_test::shell_quote(token_file()) + " --tier tiny --threads 1 --precision float32 --set iterations=5000 ";
  const std::string arguments = common + "--dist-timeout 30 -o " + sg_test::shell_quote(scratch / "lost.h5");
  // Rank 1 is killed with SIGKILL, no goodbye, once both train.
  const auto start = std::chrono::steady_clock::now();
  run_two_and_signal_rank1(arguments, scratch / "lost.h5", "9", port, scratch / "rank");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string log = sg_test::slurp(scratch / "rank0");
  INFO(log);
  CHECK(std::stoi(sg_test::slurp(scratch / "rank0.rc")) == 7);
  CHECK_THAT(log, Contains("rank 1 is gone"));
  CHECK(seconds < 40);
  // The run file keeps its last checkpoint.
  CHECK(sg::read_run_state(scratch / "lost.h5").step >= 0);

  // A rank 1 that never comes: rank 0 waits --dist-timeout, then says so.
  const std::string alone =
      rank_command(0, 2, free_port(0) + 3, common + "--dist-timeout 3 -o " + sg_test::shell_quote(scratch / "alone.h5"), scratch / "alone");
  REQUIRE(std::system(("sh -c " + sg_test::shell_quote(alone)).c_str()) == 0);
  CHECK(std::stoi(sg_test::slurp(scratch / "alone.rc")) == 7);
  CHECK_THAT(sg_test::slurp(scratch / "alone"), Contains("not every one of the 2 ranks joined within 3 s"));
}

TEST_CASE("SIGTERM to one rank stops every rank after the same step, with a checkpoint (exit 6)") {
  sg_test::Scratch scratch;
  const int port = free_port(0) + 5;
  const std::string arguments = "--tokens " + sg_test::shell_quote(token_file()) +
                                " --tier tiny --threads 1 --precision float32 --set iterations=5000 --dist-timeout 30 -o " +
                                sg_test::shell_quote(scratch / "stopped.h5");
  run_two_and_signal_rank1(arguments, scratch / "stopped.h5", "TERM", port, scratch / "rank");
  INFO(sg_test::slurp(scratch / "rank0") << sg_test::slurp(scratch / "rank1"));
  CHECK(std::stoi(sg_test::slurp(scratch / "rank0.rc")) == 6);
  CHECK(std::stoi(sg_test::slurp(scratch / "rank1.rc")) == 6);
  const auto state = sg::read_run_state(scratch / "stopped.h5");
  CHECK(state.step > 0);
  CHECK_THAT(sg_test::slurp(scratch / "rank0"), Contains("stopped by SIGTERM at step " + std::to_string(state.step)));
}
