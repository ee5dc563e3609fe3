// generation.h — text generation from a language model (sg-sample): greedy, or sampling with a
// temperature, top-k and top-p (nucleus) filtering, seeded; incremental decoding through the
// key-value cache (every arm: the cache holds the gated reads), or full recomputation for
// checking it.
//
// Order of the filters, as Hugging Face's generate applies them: logits / temperature, then
// top-k (keep the k largest), then top-p (keep the smallest set of largest-probability tokens
// whose probability reaches p, always at least one), then one draw from the renormalised
// distribution by a CPU generator seeded with `seed` (the same tokens on every device).
//
// Not here: tokenisation of the prompt (the tool), scoring (zero_shot.h).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "lib/hf/language_model.h"

namespace sg {

struct SamplingOptions {
  int64_t max_tokens = 100;   // tokens to generate at most
  double temperature = 1.0;   // 0: greedy (argmax)
  int64_t top_k = 0;          // 0: no top-k filter
  double top_p = 1.0;         // 1: no nucleus filter
  uint64_t seed = 0;
  bool stop_at_end_of_text = true;  // stop after generating the end-of-text token
  bool use_cache = true;      // false: every step recomputes the whole sequence
  /// Throws UsageError for a negative temperature, top-k or max_tokens, or top-p outside (0, 1].
  void validate() const;
};

/// Generates after `prompt` (at least one token; the tool gives the end-of-text token for an empty
/// prompt), calling on_token with each token as soon as it is chosen; returns the generated
/// tokens. Stops at max_tokens, at the end-of-text token (when asked) or when the sequence fills
/// the model's context. UsageError for an empty prompt or one as long as the context.
std::vector<int32_t> generate(const LanguageModel& model, const std::vector<int32_t>& prompt,
                              const SamplingOptions& options, const std::function<void(int32_t)>& on_token = {});

/// The token chosen from one position's logits (V) under `options` (greedy when temperature is
/// 0), drawing from `generator`.
int32_t choose_token(const torch::Tensor& logits, const SamplingOptions& options, at::Generator& generator);

}  // namespace sg
