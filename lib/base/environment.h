// environment.h — sinkgate's own environment variables, all named SINKGATE_*: SINKGATE_CACHE,
// SINKGATE_VOCAB, SINKGATE_RESIDENT_TOKENS, SINKGATE_LOSS_CHUNK_ROWS, SINKGATE_LOSS_PRODUCTS,
// SINKGATE_LOSS_PACKED, SINKGATE_LOSS_TUNING, SINKGATE_CPU_KERNELS. The loss's and the kernels'
// were once SG_*; those old names still work, with a warning naming the new one.
#pragma once
#include <string>

namespace sg {

/// The value of SINKGATE_<suffix>, else of the old name SG_<suffix> (then a warning on stderr,
/// once per name and process, naming the new one); nullptr when neither is set.
const char* sinkgate_env(const std::string& suffix);

/// The name sinkgate_env read for `suffix`: "SINKGATE_<suffix>", or "SG_<suffix>" where only the
/// old name is set (for messages that quote the variable).
std::string sinkgate_env_name(const std::string& suffix);

}  // namespace sg
