// Tests of lib/model/checkpoint: a run file's configuration and state are validated on reading
// (a damaged file fails naming itself and the field, never reaching the training loop), and no
// checkpoint holds non-finite weights.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "lib/base/error.h"
#include "lib/model/checkpoint.h"
#include "lib/model/model.h"
#include "lib/train/optimizer.h"
#include "tests/support.h"

namespace {

sg::RunState tiny_state() {
  sg::RunState state;
  state.config = sg::make_run_config("tiny", "combo2", 0);
  sg::apply_overrides(state.config, {"n_layer=1", "n_embd=16", "n_head=2", "block_size=8", "vocab_size=11"});
  return state;
}

}  // namespace

TEST_CASE("a run file with an invalid configuration or state is an InputError naming the file and field") {
  sg_test::Scratch scratch;
  auto write = [&](const sg::RunState& state, const std::string& name) {
    auto model = sg::build_model(state.config.model, 1);
    const auto path = scratch / name;
    sg::save_run(path, true, *model, nullptr, state, sg::Provenance{});
    return path;
  };
  auto good = tiny_state();
  CHECK_NOTHROW(sg::read_run_state(write(good, "good.h5")));

  auto zero_interval = tiny_state();
  zero_interval.config.train.checkpoint_interval = 0;
  const auto zero_path = write(zero_interval, "zero.h5");
  CHECK_THAT(sg_test::error_of(zero_path), Catch::Contains(zero_path) && Catch::Contains("checkpoint_interval"));

  auto negative = tiny_state();
  negative.step = -5;
  CHECK_THAT(sg_test::error_of(write(negative, "negative.h5")), Catch::Contains("step -5 lies outside [0, iterations"));

  auto huge = tiny_state();
  huge.step = static_cast<int64_t>(1e15);
  huge.data_position = huge.step * huge.config.train.batch();
  CHECK_THAT(sg_test::error_of(write(huge, "huge.h5")), Catch::Contains("lies outside"));

  auto position = tiny_state();
  position.step = 3;
  position.data_position = 5;
  CHECK_THAT(sg_test::error_of(write(position, "position.h5")), Catch::Contains("data_position 5 is not step x batch"));

  auto finished = tiny_state();
  finished.step = 3;
  finished.data_position = 3 * finished.config.train.batch();
  finished.finished = true;
  CHECK_THAT(sg_test::error_of(write(finished, "finished.h5")), Catch::Contains("says finished at step 3"));
}

TEST_CASE("the parameters a configuration implies are those the model registers, for every arm") {
  // ModelConfig::parameter_shapes (computed, lib/run) against the model LibTorch builds (counted):
  // readers compare a run file's tensors with the former before building the latter.
  auto arms = sg::paper_arm_names();
  arms.insert(arms.end(), {"sinktoken+projgate", "sinktoken+renorm", "offbyone+normgate"});
  for (const auto& arm : arms) {
    for (const int64_t layers : {1, 3}) {
      auto config = tiny_state().config.model;
      config.arm = sg::parse_arm(arm);
      config.n_layer = layers;
      const auto model = sg::build_model(config, 1);
      std::vector<std::pair<std::string, std::vector<int64_t>>> built;
      for (const auto& item : model->named_parameters()) built.emplace_back(item.key(), item.value().sizes().vec());
      INFO("arm " << arm << ", " << layers << " layers");
      CHECK(config.parameter_shapes() == built);
    }
  }
}

TEST_CASE("a checkpoint with non-finite weights or optimizer state is refused and the file keeps its last one") {
  sg_test::Scratch scratch;
  const auto path = scratch / "run.h5";
  auto state = tiny_state();
  auto model = sg::build_model(state.config.model, 1);
  auto optimizer = sg::make_optimizer(*model, state.config.train);
  sg::save_run(path, true, *model, optimizer.get(), state, sg::Provenance{});
  {
    torch::NoGradGuard no_grad;
    model->named_parameters()[0].value().view(-1)[0] = std::numeric_limits<float>::quiet_NaN();
  }
  state.step = 1;
  state.data_position = state.config.train.batch();
  CHECK_THROWS_AS(sg::save_run(path, true, *model, optimizer.get(), state, sg::Provenance{}), sg::NumericError);
  CHECK(sg::read_run_state(path).step == 0);  // the last good checkpoint, untouched
}

TEST_CASE("resuming a run whose optimizer state is missing is refused, not a silent restart of Adam") {
  sg_test::Scratch scratch;
  const auto path = scratch / "run.h5";
  auto state = tiny_state();
  state.step = 5;
  state.data_position = 5 * state.config.train.batch();
  auto model = sg::build_model(state.config.model, 1);
  sg::save_run(path, true, *model, /*optimizer=*/nullptr, state, sg::Provenance{});  // no /optimizer group
  auto optimizer = sg::make_optimizer(*model, state.config.train);
  CHECK_THROWS_WITH(sg::load_optimizer(path, *model, *optimizer),
                    Catch::Contains(path) && Catch::Contains("is missing at step 5"));
}
