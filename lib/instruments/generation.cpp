// generation.cpp — see generation.h.
#include "lib/instruments/generation.h"

#include <ATen/CPUGeneratorImpl.h>

#include "lib/base/error.h"
#include "lib/model/tensors.h"

namespace sg {

void SamplingOptions::validate() const {
  if (max_tokens < 0) throw UsageError("--max-tokens must not be negative");
  if (!(temperature >= 0)) throw UsageError("--temperature must not be negative (0: greedy)");
  if (top_k < 0) throw UsageError("--top-k must not be negative (0: no top-k filter)");
  if (!(top_p > 0 && top_p <= 1)) throw UsageError("--top-p must lie in (0, 1]");
}

int32_t choose_token(const torch::Tensor& logits, const SamplingOptions& options, at::Generator& generator) {
  auto scores = logits.to(torch::kCPU, torch::kFloat64).reshape({-1});  // (V)
  if (options.temperature == 0) return static_cast<int32_t>(scores.argmax().item<int64_t>());
  scores = scores / options.temperature;
  const double minus_infinity = -std::numeric_limits<double>::infinity();
  if (options.top_k > 0 && options.top_k < scores.size(0)) {
    const auto threshold = std::get<0>(scores.topk(options.top_k)).min();
    scores = scores.masked_fill(scores < threshold, minus_infinity);
  }
  if (options.top_p < 1) {
    const auto sorted = scores.sort(/*dim=*/0, /*descending=*/true);
    const auto& values = std::get<0>(sorted);
    const auto& indices = std::get<1>(sorted);
    const auto cumulative = torch::softmax(values, 0).cumsum(0);
    // Drop a token when the tokens before it already reach top_p; the first always stays.
    auto drop = (cumulative - torch::softmax(values, 0)) >= options.top_p;
    drop[0] = false;
    scores = scores.index_put({indices.masked_select(drop)}, torch::tensor(minus_infinity, torch::kFloat64));
  }
  const auto probabilities = torch::softmax(scores, 0);
  return static_cast<int32_t>(torch::multinomial(probabilities, 1, /*replacement=*/false, generator).item<int64_t>());
}

std::vector<int32_t> generate(const LanguageModel& model, const std::vector<int32_t>& prompt,
                              const SamplingOptions& options, const std::function<void(int32_t)>& on_token) {
  options.validate();
  if (prompt.empty()) throw UsageError("the prompt has no tokens");
  const int64_t context = model.context_length();
  if (static_cast<int64_t>(prompt.size()) >= context)
    throw UsageError("the prompt has " + std::to_string(prompt.size()) + " tokens; the model's context is " +
                     std::to_string(context) + ", and generation needs at least one more position");
  auto generator = at::make_generator<at::CPUGeneratorImpl>(options.seed);
  std::vector<int32_t> sequence = prompt, generated;
  DecodeCache cache;
  auto as_tensor = [](const std::vector<int32_t>& ids, size_t from) {
    std::vector<int64_t> values(ids.begin() + static_cast<std::ptrdiff_t>(from), ids.end());
    return torch::tensor(values, torch::kLong).unsqueeze(0);  // (1, T)
  };
  size_t fed = 0;  // tokens of `sequence` already in the cache
  while (static_cast<int64_t>(generated.size()) < options.max_tokens &&
         static_cast<int64_t>(sequence.size()) < context) {
    torch::Tensor hidden;
    if (options.use_cache) {
      hidden = model.hidden(as_tensor(sequence, fed).to(model.device()), cache);
      fed = sequence.size();
    } else {
      hidden = model.hidden(as_tensor(sequence, 0).to(model.device()));
    }
    const auto logits = model.head(hidden.select(1, hidden.size(1) - 1).squeeze(0));  // (V)
    if (!all_finite(logits))  // finite weights can still overflow
      throw InputError(model.path() + ": the model's logits at position " + std::to_string(sequence.size()) +
                           " are not finite (NaN or infinity)",
                       "its weights are damaged, or too large for float32");
    const int32_t token = choose_token(logits, options, generator);
    sequence.push_back(token);
    generated.push_back(token);
    if (on_token) on_token(token);
    if (options.stop_at_end_of_text && token == model.tokenizer().eot_id()) break;
  }
  return generated;
}

}  // namespace sg
