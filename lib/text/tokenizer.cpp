// tokenizer.cpp — GPT-2 byte-level BPE (see tokenizer.h): the hand-written pre-tokeniser, the BPE
// merge loop, added tokens, and the tables they run on, built from a vocabulary that
// vocabulary.h read (the character classes, UTF-8 repair and NFC are unicode.h's).
//
// One merge rule serves every format: a table from a pair of adjacent token ids to (priority,
// merged id), and at each step the pair of lowest priority, leftmost on ties, is merged.
//  - tiktoken rank file: any two adjacent parts whose bytes concatenate to a token merge, with the
//    token's rank as priority; the table lists every split of every token into two tokens.
//  - Hugging Face: the merges list, its line number as priority.
// A piece that is itself a token is emitted whole when the rule would give it anyway (always for a
// rank file, as tiktoken does; for Hugging Face files this is checked per token at load time).
//
// tokenizer.json's added tokens and NFC normaliser (the pipeline of tokenizer.h) come before all
// this: two tries of added-token contents (raw and normalised), and ICU's NFC.
#include "lib/text/tokenizer.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <thread>

#include "lib/base/error.h"
#include "lib/text/unicode.h"

namespace sg {
namespace {

// --- the pre-tokeniser -----------------------------------------------------------------------

struct Char {
  CharClass cls;
  uint32_t length;
};

// The class and byte length of the character at s[i] of valid UTF-8.
inline Char char_at(const CharClassTable& table, const unsigned char* s, size_t i) {
  const unsigned char b = s[i];
  if (b < 0x80) return {table.ascii[b], 1};
  if (b < 0xE0) return {table((char32_t{b} & 0x1F) << 6 | (s[i + 1] & 0x3F)), 2};
  if (b < 0xF0) return {table((char32_t{b} & 0x0F) << 12 | (char32_t{s[i + 1]} & 0x3F) << 6 | (s[i + 2] & 0x3F)), 3};
  return {table((char32_t{b} & 0x07) << 18 | (char32_t{s[i + 1]} & 0x3F) << 12 | (char32_t{s[i + 2]} & 0x3F) << 6 |
                (s[i + 3] & 0x3F)),
          4};
}

// The end of the pattern's match that starts at s[i] of valid UTF-8 s[0, n). The alternatives are
// tried in the pattern's order; no match ever spans from a non-space character into a space.
inline size_t piece_end(const CharClassTable& table, const unsigned char* s, size_t i, size_t n) {
  const unsigned char b = s[i];
  if (b == '\'' && i + 1 < n) {  // 's|'t|'re|'ve|'m|'ll|'d
    const unsigned char c = s[i + 1];
    if (c == 's' || c == 't' || c == 'm' || c == 'd') return i + 2;
    if (i + 2 < n) {
      const unsigned char d = s[i + 2];
      if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')) return i + 3;
    }
  }
  size_t j = i;
  Char first = char_at(table, s, i);
  if (b == ' ' && i + 1 < n) {
    const Char next = char_at(table, s, i + 1);
    if (next.cls != CharClass::space) {
      first = next;
      j = i + 1;
    }
  }
  if (first.cls != CharClass::space) {  //  ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+
    j += first.length;
    while (j < n) {
      const Char c = char_at(table, s, j);
      if (c.cls != first.cls) break;
      j += c.length;
    }
    return j;
  }
  // \s+(?!\S)|\s+ : the run of spaces, less its last character when it has two or more and
  // text follows (that character then starts the next piece, e.g. " word").
  size_t last = i;
  j = i + first.length;
  while (j < n) {
    const Char c = char_at(table, s, j);
    if (c.cls != CharClass::space) break;
    last = j;
    j += c.length;
  }
  return (j == n || last == i) ? j : last;
}

// Whether a chunk may end before s[p]: a non-space ASCII byte, then an ASCII space. No match
// crosses that point and none looks behind it, so encoding the two sides apart changes nothing.
inline bool is_safe_cut(std::string_view s, size_t p) {
  const auto before = static_cast<unsigned char>(s[p - 1]);
  const char at = s[p];
  return before > 0x20 && before < 0x7F && (at == ' ' || at == '\n' || at == '\t' || at == '\r');
}

// --- hash tables -----------------------------------------------------------------------------

inline uint64_t mix(uint64_t x) {
  x ^= x >> 32;
  x *= 0xD6E8FEB86659FD93ull;
  x ^= x >> 32;
  return x;
}

inline uint64_t hash_bytes(const unsigned char* p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull * (n + 1);
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    h = mix(h ^ word) * 0x9E3779B97F4A7C15ull;
  }
  uint64_t word = 0;
  std::memcpy(&word, p, n);
  return mix(h ^ word);
}

// Byte string → id, open addressing; the keys live in one arena.
class BytesMap {
 public:
  void insert(std::string_view key, int32_t value) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    const auto* p = reinterpret_cast<const unsigned char*>(key.data());
    const uint64_t h = hash_bytes(p, key.size());
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.value < 0) {
        slot = {h, static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(key.size()), value};
        arena_.append(key);
        ++count_;
        return;
      }
      if (slot.hash == h && slot.length == key.size() && std::memcmp(arena_.data() + slot.offset, p, key.size()) == 0) {
        slot.value = value;
        return;
      }
    }
  }
  // The id of p[0, n), or -1.
  int32_t find(const unsigned char* p, size_t n) const {
    if (slots_.empty()) return -1;
    const uint64_t h = hash_bytes(p, n);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.value < 0) return -1;
      if (slot.hash == h && slot.length == n && std::memcmp(arena_.data() + slot.offset, p, n) == 0) return slot.value;
    }
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t offset = 0, length = 0;
    int32_t value = -1;
  };
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(std::max<size_t>(64, old.size() * 2), Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& slot : old) {
      if (slot.value < 0) continue;
      size_t i = slot.hash & mask_;
      while (slots_[i].value >= 0) i = (i + 1) & mask_;
      slots_[i] = slot;
    }
  }
  std::vector<Slot> slots_;
  std::string arena_;
  size_t count_ = 0, mask_ = 0;
};

constexpr uint32_t kNoMerge = std::numeric_limits<uint32_t>::max();

// (left id, right id) → (priority, merged id), open addressing.
class PairMap {
 public:
  void insert(int32_t left, int32_t right, uint32_t priority, int32_t merged) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    const uint64_t key = key_of(left, right);
    for (size_t i = index_of(key);; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.key == kEmpty) ++count_;
      if (slot.key == kEmpty || slot.key == key) {
        slot = {key, priority, merged};
        return;
      }
    }
  }
  // The priority of merging left and right (kNoMerge if they do not merge) and the merged id.
  uint32_t find(int32_t left, int32_t right, int32_t* merged) const {
    if (slots_.empty()) return kNoMerge;
    const uint64_t key = key_of(left, right);
    for (size_t i = index_of(key);; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.key == key) {
        *merged = slot.merged;
        return slot.priority;
      }
      if (slot.key == kEmpty) return kNoMerge;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    uint32_t priority = kNoMerge;
    int32_t merged = -1;
  };
  static uint64_t key_of(int32_t left, int32_t right) {
    return uint64_t{static_cast<uint32_t>(left)} << 32 | static_cast<uint32_t>(right);
  }
  size_t index_of(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull) >> shift_; }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(std::max<size_t>(64, old.size() * 2), Slot{});
    mask_ = slots_.size() - 1;
    shift_ = 64 - static_cast<int>(__builtin_ctzll(slots_.size()));
    for (const Slot& slot : old) {
      if (slot.key == kEmpty) continue;
      size_t i = index_of(slot.key);
      while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
      slots_[i] = slot;
    }
  }
  std::vector<Slot> slots_;
  size_t count_ = 0, mask_ = 0;
  int shift_ = 64;
};

// --- added tokens (tokenizer.json) ---------------------------------------------------------

// How a tokenizer.json added token matches (its text is in a TokenTrie).
struct AddedToken {
  int32_t id = -1;
  bool single_word = false, lstrip = false, rstrip = false;
};

// Added-token patterns in a byte trie; find() scans leftmost-longest, as the aho-corasick crate's
// MatchKind::LeftmostLongest does for `tokenizers`.
class TokenTrie {
 public:
  TokenTrie() { root_.fill(-1); }
  // Adds a non-empty pattern with its value; false if the pattern is there already.
  bool insert(std::string_view pattern, int32_t value) {
    int32_t node = -1;
    for (size_t k = 0; k < pattern.size(); ++k) {
      const auto byte = static_cast<unsigned char>(pattern[k]);
      int32_t child = k == 0 ? root_[byte] : child_of(node, byte);
      if (child < 0) {
        child = static_cast<int32_t>(nodes_.size());
        nodes_.emplace_back();
        if (k == 0) root_[byte] = child;
        else nodes_[node].edges.emplace_back(byte, child);
      }
      node = child;
    }
    if (nodes_[node].value >= 0) return false;
    nodes_[node].value = value;
    return true;
  }
  bool empty() const { return nodes_.empty(); }
  // The value of the longest pattern that starts leftmost in s[from, n), its start and length;
  // -1 if no pattern occurs there.
  int32_t find(const unsigned char* s, size_t from, size_t n, size_t* start, size_t* length) const {
    for (size_t i = from; i < n; ++i) {
      int32_t node = root_[s[i]], best = -1;
      for (size_t j = i + 1; node >= 0; ++j) {
        if (nodes_[node].value >= 0) {
          best = nodes_[node].value;
          *length = j - i;
        }
        node = j < n ? child_of(node, s[j]) : -1;
      }
      if (best >= 0) {
        *start = i;
        return best;
      }
    }
    return -1;
  }

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> edges;
    int32_t value = -1;
  };
  int32_t child_of(int32_t node, unsigned char byte) const {
    for (const auto& [edge, child] : nodes_[node].edges)
      if (edge == byte) return child;
    return -1;
  }
  std::array<int32_t, 256> root_;
  std::vector<Node> nodes_;
};

// A piece of text [begin, end) and the added token it is (-1: text still to encode).
struct Segment {
  size_t begin, end;
  int32_t id;
};

// `tokenizers`' AddedVocabulary::find_matches: the added tokens of `tokens` found by `trie` in
// valid UTF-8 text, and the text around them, appended to out in order. With lstrip / rstrip the
// pieces can overlap (see tokenizer.h), exactly as there.
void split_added(std::string_view text, const TokenTrie& trie, const std::vector<AddedToken>& tokens,
                 std::vector<Segment>& out) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t offset = 0, start = 0, length = 0;
  for (size_t from = 0; from < n;) {
    const int32_t index = trie.find(s, from, n, &start, &length);
    if (index < 0) break;
    size_t stop = start + length, character = 0;
    from = stop;
    const AddedToken& token = tokens[index];
    if (token.single_word) {
      const bool word_before = start > 0 && is_word_character(code_point_at(s, previous_start(s, start), &character));
      const bool word_after = stop < n && is_word_character(code_point_at(s, stop, &character));
      if (word_before || word_after) continue;
    }
    if (token.lstrip) {
      size_t space_start = start;
      while (space_start > 0) {
        const size_t previous = previous_start(s, space_start);
        if (!is_white_space(code_point_at(s, previous, &character))) break;
        space_start = previous;
      }
      start = std::max(space_start, offset);
    }
    if (token.rstrip)
      while (stop < n && is_white_space(code_point_at(s, stop, &character))) stop += character;
    if (offset < start) out.push_back({offset, start, -1});
    out.push_back({start, stop, token.id});
    offset = stop;
  }
  if (offset < n) out.push_back({offset, n, -1});
}

}  // namespace

// --- the tokenizer ---------------------------------------------------------------------------

struct Tokenizer::Impl {
  std::string path;
  std::vector<std::string> token_bytes;  // by id; empty: no token has this id
  BytesMap whole;                        // pieces emitted whole: token bytes → id
  PairMap merges;
  std::array<int32_t, 256> byte_ids{};
  int32_t eot = -1;
  // tokenizer.json only (tokenizer.h): NFC, and the added tokens found in raw and in normalised
  // text (trie values index added_tokens); cut_safe: no added token reaches across a safe cut.
  bool nfc = false;
  std::vector<AddedToken> added_tokens;
  TokenTrie raw_tokens, normalized_tokens;
  bool cut_safe = true;
  // What it was read from (Tokenizer::identity, Tokenizer::files).
  TokenizerIdentity identity;
  std::vector<VocabularyFile> files;

  // Appends the BPE ids of one piece p[0, n), n ≥ 1.
  void encode_piece(const unsigned char* p, size_t n, std::vector<int32_t>& out) const {
    if (n == 1) {
      out.push_back(byte_ids[p[0]]);
      return;
    }
    const int32_t id = whole.find(p, n);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
    merge(p, n, out);
  }

  // BPE from single bytes: repeatedly merge the lowest-priority pair, leftmost first.
  void merge(const unsigned char* p, size_t n, std::vector<int32_t>& out) const {
    if (n > kShortPiece) return merge_long(p, n, out);
    int32_t symbol[kShortPiece], merged[kShortPiece];
    uint32_t priority[kShortPiece];
    size_t m = n;
    for (size_t i = 0; i < n; ++i) symbol[i] = byte_ids[p[i]];
    for (size_t i = 0; i + 1 < n; ++i) priority[i] = merges.find(symbol[i], symbol[i + 1], &merged[i]);
    while (m > 1) {
      size_t best = 0;
      for (size_t i = 1; i + 1 < m; ++i)
        if (priority[i] < priority[best]) best = i;
      if (priority[best] == kNoMerge) break;
      symbol[best] = merged[best];
      for (size_t i = best + 1; i + 1 < m; ++i) symbol[i] = symbol[i + 1];
      for (size_t i = best + 1; i + 2 < m; ++i) {
        priority[i] = priority[i + 1];
        merged[i] = merged[i + 1];
      }
      --m;
      if (best + 1 < m) priority[best] = merges.find(symbol[best], symbol[best + 1], &merged[best]);
      if (best > 0) priority[best - 1] = merges.find(symbol[best - 1], symbol[best], &merged[best - 1]);
    }
    out.insert(out.end(), symbol, symbol + m);
  }

  // The same rule in O(n log n) for long pieces: a linked list of symbols and a min-heap of
  // (priority, position) keys. A popped key is acted on only if the pair now at that position
  // still has that priority; the pair's own key is then the same, so the order is unchanged.
  void merge_long(const unsigned char* p, size_t n, std::vector<int32_t>& out) const {
    if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
      throw InputError("a single pre-token of " + std::to_string(n) + " bytes is too long to encode (at most 2^31 - 1)");
    struct Node {
      int32_t symbol, prev, next;  // symbol -1: merged into its left neighbour
    };
    std::vector<Node> nodes(n);
    for (size_t i = 0; i < n; ++i)
      nodes[i] = {byte_ids[p[i]], static_cast<int32_t>(i) - 1, i + 1 < n ? static_cast<int32_t>(i) + 1 : -1};
    std::vector<uint64_t> heap;
    auto consider = [&](int32_t left) {
      const int32_t right = nodes[left].next;
      if (right < 0) return;
      int32_t merged = -1;
      const uint32_t priority = merges.find(nodes[left].symbol, nodes[right].symbol, &merged);
      if (priority == kNoMerge) return;
      heap.push_back(uint64_t{priority} << 32 | static_cast<uint32_t>(left));
      std::push_heap(heap.begin(), heap.end(), std::greater<uint64_t>());
    };
    for (size_t i = 0; i + 1 < n; ++i) consider(static_cast<int32_t>(i));
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<uint64_t>());
      const uint64_t key = heap.back();
      heap.pop_back();
      const auto position = static_cast<int32_t>(key & 0xFFFFFFFFu);
      Node& left = nodes[position];
      if (left.symbol < 0 || left.next < 0) continue;
      Node& right = nodes[left.next];
      int32_t merged = -1;
      if (merges.find(left.symbol, right.symbol, &merged) != key >> 32) continue;  // stale
      left.symbol = merged;
      right.symbol = -1;
      left.next = right.next;
      if (left.next >= 0) nodes[left.next].prev = position;
      if (left.prev >= 0) consider(left.prev);
      consider(position);
    }
    for (int32_t i = 0; i >= 0; i = nodes[i].next) out.push_back(nodes[i].symbol);
  }

  // Appends the ids of valid UTF-8 text.
  void encode_valid(std::string_view text, std::vector<int32_t>& out) const {
    const CharClassTable& table = char_class_table();
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    for (size_t i = 0; i < n;) {
      const size_t end = piece_end(table, s, i, n);
      encode_piece(s + i, end - i, out);
      i = end;
    }
  }

  // Appends the ids of valid UTF-8 text by tokenizer.json's pipeline (tokenizer.h, steps 1-4).
  void encode_added(std::string_view text, std::vector<int32_t>& out) const {
    std::vector<Segment> raw, normal;
    if (raw_tokens.empty()) raw.push_back({0, text.size(), -1});
    else split_added(text, raw_tokens, added_tokens, raw);
    std::string normalized;
    for (const Segment& segment : raw) {
      if (segment.id >= 0) {
        out.push_back(segment.id);
        continue;
      }
      std::string_view piece = text.substr(segment.begin, segment.end - segment.begin);
      if (nfc && !is_plainly_nfc(piece)) {
        normalized.clear();
        append_nfc(piece, normalized);
        piece = normalized;
      }
      if (normalized_tokens.empty()) {
        encode_valid(piece, out);
        continue;
      }
      normal.clear();
      split_added(piece, normalized_tokens, added_tokens, normal);
      for (const Segment& part : normal) {
        if (part.id >= 0) out.push_back(part.id);
        else encode_valid(piece.substr(part.begin, part.end - part.begin), out);
      }
    }
  }

  void encode(std::string_view text, std::vector<int32_t>& out) const {
    const bool plain = !nfc && raw_tokens.empty() && normalized_tokens.empty();
    if (is_valid_utf8(text)) return plain ? encode_valid(text, out) : encode_added(text, out);
    const std::string valid = replace_invalid_utf8(text);
    plain ? encode_valid(valid, out) : encode_added(valid, out);
  }

  static constexpr size_t kShortPiece = 64;
};

std::vector<std::string_view> pretokenize(std::string_view text) {
  const CharClassTable& table = char_class_table();
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  std::vector<std::string_view> pieces;
  for (size_t i = 0; i < text.size();) {
    const size_t end = piece_end(table, s, i, text.size());
    pieces.push_back(text.substr(i, end - i));
    i = end;
  }
  return pieces;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 4 + 16);
  impl_->encode(text, ids);
  return ids;
}

std::vector<int32_t> Tokenizer::encode_parallel(std::string_view text, int64_t threads) const {
  constexpr size_t kMinChunk = size_t{1} << 16;
  if (threads <= 0) threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
  if (!impl_->cut_safe) threads = 1;
  if (threads == 1 || text.size() < 2 * kMinChunk) return encode(text);
  // About four chunks a thread, so that uneven chunks still keep every thread busy.
  const size_t wanted = std::min<size_t>(static_cast<size_t>(threads) * 4, text.size() / kMinChunk);
  std::vector<size_t> cuts{0};
  for (size_t k = 1; k < wanted; ++k) {
    size_t p = std::max(k * text.size() / wanted, cuts.back() + 1);
    while (p < text.size() && !is_safe_cut(text, p)) ++p;
    if (p >= text.size()) break;
    cuts.push_back(p);
  }
  cuts.push_back(text.size());
  const size_t chunks = cuts.size() - 1;
  std::vector<std::vector<int32_t>> parts(chunks);
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
  auto work = [&](size_t worker) {
    try {
      for (size_t k = next++; k < chunks; k = next++)
        parts[k] = encode(text.substr(cuts[k], cuts[k + 1] - cuts[k]));
    } catch (...) {
      errors[worker] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < static_cast<size_t>(threads) && t < chunks; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& thread : pool) thread.join();
  for (const auto& error : errors)
    if (error) std::rethrow_exception(error);
  size_t total = 0;
  for (const auto& part : parts) total += part.size();
  std::vector<int32_t> ids;
  ids.reserve(total);
  for (const auto& part : parts) ids.insert(ids.end(), part.begin(), part.end());
  return ids;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  for (const int32_t id : ids) {
    if (id < 0 || id >= vocab_size() || impl_->token_bytes[id].empty())
      throw InputError("token id " + std::to_string(id) + " is not in the vocabulary (" + impl_->path + ", ids 0.." +
                       std::to_string(vocab_size() - 1) + ")");
    text += impl_->token_bytes[id];
  }
  return text;
}

int32_t Tokenizer::eot_id() const { return impl_->eot; }
int64_t Tokenizer::vocab_size() const { return static_cast<int64_t>(impl_->token_bytes.size()); }
const std::vector<std::string>& Tokenizer::tokens() const { return impl_->token_bytes; }
const std::string& Tokenizer::path() const { return impl_->path; }

// --- building the tables from a vocabulary --------------------------------------------------

namespace {

constexpr const char* kEndOfText = "<|endoftext|>";

// Every rank file token is emitted whole, and every split of it into two tokens merges into it
// with its rank as priority.
void add_ranks(Tokenizer::Impl& impl, const std::vector<size_t>& lines) {
  const auto ranks = static_cast<int32_t>(impl.eot);
  for (int32_t id = 0; id < ranks; ++id) {
    const std::string& bytes = impl.token_bytes[id];
    if (bytes.empty()) continue;
    const int32_t earlier = impl.whole.find(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
    if (earlier >= 0)
      vocabulary_malformed(impl.path, lines[id], "the token of rank " + std::to_string(id) + " is given twice (also as rank " +
                                                     std::to_string(earlier) + ")");
    impl.whole.insert(bytes, id);
  }
  for (int32_t id = 0; id < ranks; ++id) {
    const std::string& bytes = impl.token_bytes[id];
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    for (size_t k = 1; k < bytes.size(); ++k) {
      const int32_t left = impl.whole.find(p, k), right = impl.whole.find(p + k, bytes.size() - k);
      if (left >= 0 && right >= 0) impl.merges.insert(left, right, static_cast<uint32_t>(id), id);
    }
  }
}

// Checks the byte tokens and the end-of-text token; whole must hold every single-byte token.
void find_byte_ids(Tokenizer::Impl& impl) {
  for (int b = 0; b < 256; ++b) {
    const auto byte = static_cast<unsigned char>(b);
    impl.byte_ids[b] = impl.whole.find(&byte, 1);
    if (impl.byte_ids[b] < 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", b);
      vocabulary_malformed(impl.path, 0,
                           std::string("no token for the single byte ") + hex + " (not a byte-level BPE vocabulary)");
    }
  }
  if (impl.eot < 0) vocabulary_malformed(impl.path, 0, std::string("no ") + kEndOfText + " token");
}

// Hugging Face merges in priority order; a byte-level token is emitted whole only where the
// merges would produce that very token (always with ignore_merges).
void add_merges(Tokenizer::Impl& impl, const Vocabulary& vocabulary) {
  for (const int32_t id : vocabulary.byte_level)
    if (impl.token_bytes[id].size() == 1) impl.whole.insert(impl.token_bytes[id], id);
  for (size_t i = 0; i < vocabulary.merges.size(); ++i) {
    const MergeRule& merge = vocabulary.merges[i];
    impl.merges.insert(merge.left, merge.right, static_cast<uint32_t>(i), merge.merged);
  }
  find_byte_ids(impl);
  std::vector<int32_t> ids;
  for (const int32_t id : vocabulary.byte_level) {
    const std::string& bytes = impl.token_bytes[id];
    if (bytes.size() < 2) continue;
    ids.clear();
    if (!vocabulary.ignore_merges) impl.merge(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), ids);
    if (vocabulary.ignore_merges || (ids.size() == 1 && ids[0] == id)) impl.whole.insert(bytes, id);
  }
}

// Whether an added token's match could reach across a cut of encode_parallel (a non-space ASCII
// byte, then ASCII white space): by holding that pair, by rstrip after a non-space ASCII byte, or by
// a single_word check before leading ASCII white space.
bool reaches_across_cut(const std::string& pattern, bool single_word, bool rstrip) {
  for (size_t k = 1; k < pattern.size(); ++k)
    if (is_safe_cut(pattern, k)) return true;
  return (rstrip && is_safe_cut(pattern + ' ', pattern.size())) || (single_word && is_safe_cut('a' + pattern, 1));
}

// tokenizer.json's added tokens in the two tries: raw ones as written, normalised ones after NFC.
void add_added_tokens(Tokenizer::Impl& impl, const std::vector<AddedTokenEntry>& tokens) {
  std::map<std::pair<bool, std::string>, std::string> matched_by;  // (normalized, pattern) → content
  for (const auto& token : tokens) {
    std::string pattern = token.content;
    if (token.normalized && impl.nfc) {
      pattern.clear();
      append_nfc(token.content, pattern);
    }
    const auto index = static_cast<int32_t>(impl.added_tokens.size());
    auto& trie = token.normalized ? impl.normalized_tokens : impl.raw_tokens;
    auto& earlier = matched_by[{token.normalized, pattern}];
    if (!trie.insert(pattern, index))
      vocabulary_malformed(impl.path, 0, "added tokens '" + vocabulary_excerpt(earlier) + "' and '" +
                                             vocabulary_excerpt(token.content) + "' match the same text");
    earlier = token.content;
    impl.added_tokens.push_back({token.id, token.single_word, token.lstrip, token.rstrip});
    if (reaches_across_cut(pattern, token.single_word, token.rstrip)) impl.cut_safe = false;
  }
}

// The tokenizer's tables from a checked vocabulary.
std::shared_ptr<const Tokenizer::Impl> build(Vocabulary vocabulary) {
  auto impl = std::make_shared<Tokenizer::Impl>();
  impl->path = vocabulary.path;
  impl->token_bytes = std::move(vocabulary.token_bytes);
  impl->eot = vocabulary.eot;
  impl->nfc = vocabulary.nfc;
  if (vocabulary.rank_merges) {
    add_ranks(*impl, vocabulary.lines);
    find_byte_ids(*impl);
  } else {
    add_merges(*impl, vocabulary);
  }
  add_added_tokens(*impl, vocabulary.added_tokens);
  impl->identity = std::move(vocabulary.identity);
  impl->files = std::move(vocabulary.files);
  return impl;
}

}  // namespace

Tokenizer Tokenizer::load(const std::string& path) { return Tokenizer(build(read_vocabulary(path))); }

Tokenizer Tokenizer::load_files(const std::vector<VocabularyFile>& files, const std::string& label) {
  return Tokenizer(build(read_vocabulary_files(files, label)));
}

const TokenizerIdentity& Tokenizer::identity() const { return impl_->identity; }
const std::vector<VocabularyFile>& Tokenizer::files() const { return impl_->files; }

}  // namespace sg
