// hf_vocabulary.h — a GPT-2-style byte-level BPE vocabulary in the forms a Hugging Face folder
// holds: vocab.json, merges.txt, tokenizer.json and tokenizer_config.json, derived from a tiktoken
// rank file (gpt2.tiktoken, "base64token rank" lines).
//
// The token strings are the bytes mapped by GPT-2's reversible byte-to-character table (printable
// Latin-1 bytes stand for themselves, the other 68 bytes for U+0100 onwards, so a space is 'Ġ');
// the ids are the ranks, and "<|endoftext|>" takes the next id. The merges are the ranks of the
// tokens longer than one byte, in rank order: each token's merge is the pair that byte-level BPE
// with the lower ranks alone leaves of it. tokenizer.json is the `tokenizers` form of the same
// model (ByteLevel pre-tokenizer and decoder, no prefix space, "<|endoftext|>" a special added
// token), so AutoTokenizer gives tiktoken's ids (tests/hf_export_reference.py checks them).
//
// Not here: reading these forms (tokenizer.h), vocabularies that are not byte-level BPE.
#pragma once
#include <cstdint>
#include <string>

namespace sg {

/// The four files' contents (UTF-8 JSON / text).
struct HfVocabularyFiles {
  std::string vocab_json;             // {"token": id, ...} in id order
  std::string merges_txt;             // "#version: 0.2" then one "left right" line per merge
  std::string tokenizer_json;         // the `tokenizers` serialisation (model BPE, ByteLevel)
  std::string tokenizer_config_json;  // GPT2Tokenizer, end-of-text as bos/eos/unk, model_max_length
};

/// The files of the vocabulary in the tiktoken rank file `rank_file`, with model_max_length the
/// model's context. Throws InputError naming the file when it is unreadable or malformed, when
/// its ranks are not 0..N-1 with the 256 single bytes among them, or when a token has no merge.
HfVocabularyFiles hf_vocabulary_files(const std::string& rank_file, int64_t model_max_length);

}  // namespace sg
