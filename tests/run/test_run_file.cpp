// Tests of lib/run/run_file: a run file's configuration, state, curves and labels round-trip
// through HDF5 without LibTorch, a damaged state is an InputError naming the file, and labels.
#include <catch2/catch.hpp>

#include <cmath>

#include "lib/base/error.h"
#include "lib/io/h5.h"
#include "lib/run/run_file.h"
#include "tests/support.h"

namespace {

sg::RunState small_state() {
  sg::RunState state;
  state.config = sg::make_run_config("tiny", "sinklogit", 5);
  sg::apply_overrides(state.config, {"n_layer=1", "iterations=8", "warmup=2", "lr_peak=3e-4"});
  state.step = 2;
  state.data_position = 2 * state.config.train.batch();
  state.tokens_seen = 123;
  state.token_file = "tokens.h5";
  state.token_file_hash = "ab12";
  state.curves.step = {1, 2};
  state.curves.train_loss = {4.5, 4.25};
  state.curves.lr = {1e-4, 2e-4};
  state.curves.tokens_per_second = {10, 11};
  state.curves.val_step = {2};
  state.curves.val_loss = {4.0};
  state.labels = {{"run", "first"}, {"sweep", "lr"}};
  return state;
}

/// A run file of `state` with an empty /model group in place of the weights.
std::string write(const sg_test::Scratch& scratch, const std::string& name, const sg::RunState& state) {
  const auto path = scratch / name;
  sg::h5::Writer writer(path, /*force=*/true);
  sg::Provenance provenance;
  provenance.tool = "test_run_file";
  sg::write_run_contents(writer.root(), state, provenance);
  writer.root().create_group("model");
  writer.commit();
  return path;
}

}  // namespace

TEST_CASE("a run file's configuration, state, curves and labels round-trip without LibTorch") {
  sg_test::Scratch scratch;
  const auto state = small_state();
  const auto path = write(scratch, "run.h5", state);
  const auto back = sg::read_run_state(path);
  CHECK(sg::to_fields(back.config) == sg::to_fields(state.config));
  CHECK(back.step == 2);
  CHECK(back.data_position == state.data_position);
  CHECK(back.tokens_seen == 123);
  CHECK_FALSE(back.finished);
  CHECK(std::isnan(back.final_val_loss));
  CHECK(back.token_file == "tokens.h5");
  CHECK(back.token_file_hash == "ab12");
  CHECK(back.curves.train_loss == state.curves.train_loss);
  CHECK(back.curves.val_step == state.curves.val_step);
  CHECK(back.labels == state.labels);
  CHECK(sg::run_keys(path, back) == std::vector<std::pair<std::string, std::string>>{{"run", "first"}, {"sweep", "lr"}});
  CHECK(sg::read_provenance(sg::h5::File::open(path)).tool == "test_run_file");
}

TEST_CASE("a run file whose state contradicts its configuration is an InputError naming the file") {
  sg_test::Scratch scratch;
  auto state = small_state();
  state.data_position = 5;
  const auto path = write(scratch, "damaged.h5", state);
  CHECK_THROWS_WITH(sg::read_run_state(path), Catch::Contains(path) && Catch::Contains("data_position 5 is not step x batch"));
}

TEST_CASE("labels are KEY=VALUE with a plain key, never the run's own tier, arm or seed") {
  CHECK(sg::parse_labels({"lr=3e-4", "note="}) == std::vector<std::pair<std::string, std::string>>{{"lr", "3e-4"}, {"note", ""}});
  CHECK_THROWS_AS(sg::parse_labels({"lr"}), sg::UsageError);
  CHECK_THROWS_AS(sg::parse_labels({"=1"}), sg::UsageError);
  CHECK_THROWS_AS(sg::parse_labels({"2x=1"}), sg::UsageError);
  CHECK_THROWS_AS(sg::parse_labels({"a-b=1"}), sg::UsageError);
  CHECK_THROWS_WITH(sg::parse_labels({"seed=1"}), Catch::Contains("shadow"));
  CHECK_THROWS_WITH(sg::parse_labels({"lr=1", "lr=2"}), Catch::Contains("twice"));
}

TEST_CASE("a run file carries its tokenizer record, and refuses one with more ids than the model") {
  sg_test::Scratch scratch;
  auto state = small_state();
  CHECK_FALSE(sg::read_run_state(write(scratch, "none.h5", state)).tokenizer.known());  // as runs of earlier versions
  state.tokenizer.identity.kind = "tokenizer.json";
  state.tokenizer.identity.vocab_size = 300;
  state.tokenizer.identity.eot_id = 0;
  state.tokenizer.source = "my/tokenizer.json";
  state.tokenizer.files = {{"tokenizer.json", std::string("{\"model\": {}}\0tail", 18)}};
  state.tokenizer.identity.sha256 = sg::sha256_bytes(state.tokenizer.files[0].bytes);
  state.config.model.vocab_size = 300;
  const auto back = sg::read_run_state(write(scratch, "run.h5", state));
  CHECK(back.tokenizer.identity.kind == "tokenizer.json");
  CHECK(back.tokenizer.identity.sha256 == state.tokenizer.identity.sha256);
  CHECK(back.tokenizer.identity.vocab_size == 300);
  CHECK(back.tokenizer.identity.eot_id == 0);
  CHECK(back.tokenizer.source == "my/tokenizer.json");
  REQUIRE(back.tokenizer.files.size() == 1);
  CHECK(back.tokenizer.files[0].bytes == state.tokenizer.files[0].bytes);  // byte for byte, NUL included
  state.config.model.vocab_size = 299;
  const auto path = write(scratch, "small.h5", state);
  CHECK_THROWS_WITH(sg::read_run_state(path), Catch::Contains(path) && Catch::Contains("300 ids"));
}
