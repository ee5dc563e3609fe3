// hf_vocabulary.h — a byte-level BPE vocabulary in the forms a Hugging Face folder holds, so that
// transformers' AutoTokenizer gives the ids sinkgate's tokenizer gives (sg-export).
//
// A vocabulary whose ids are BPE ranks (GPT-2's, any tiktoken rank file) becomes vocab.json,
// merges.txt, tokenizer.json and tokenizer_config.json, derived from its token table
// (Tokenizer::tokens()): the token strings are the bytes mapped by GPT-2's reversible
// byte-to-character table (printable Latin-1 bytes stand for themselves, the other 68 bytes for
// U+0100 onwards, so a space is 'Ġ'); the ids are the ranks, and "<|endoftext|>" takes the next
// id. The merges are the ranks of the tokens longer than one byte, in rank order: each token's
// merge is the pair that byte-level BPE with the lower ranks alone leaves of it. tokenizer.json is
// the `tokenizers` form of the same model (ByteLevel pre-tokenizer and decoder, no prefix space,
// "<|endoftext|>" a special added token), so AutoTokenizer gives tiktoken's ids
// (tests/hf_export_reference.py checks them).
// A vocabulary read from Hugging Face files (tokenizer.json, or vocab.json + merges.txt) keeps
// those files, byte for byte, with a tokenizer_config.json beside them.
//
// Not here: reading vocabularies (tokenizer.h), vocabularies that are not byte-level BPE.
#pragma once
#include <cstdint>
#include <vector>

#include "lib/text/tokenizer.h"

namespace sg {

/// The files of `tokenizer`'s vocabulary in a Hugging Face folder (see the file comment), named as
/// the folder names them; tokenizer_config.json gives the end-of-text token as bos, eos and unk
/// and model_max_length the model's context. Throws InputError naming the vocabulary when a
/// rank-ordered one is not byte-level BPE (ranks with gaps, a byte without a token of its own, a
/// token that is not the merge of two lower-ranked ones, the end-of-text token not last).
std::vector<VocabularyFile> hf_vocabulary_files(const Tokenizer& tokenizer, int64_t model_max_length);

}  // namespace sg
