#!/usr/bin/env python3
"""zero_shot_reference.py — an independent reference for the zero-shot evaluation (lm-evaluation-harness v0.4).

Writes small task files, two small random models with their own byte-level BPE vocabularies, and the
answers lm-eval's rules give for them, computed here with transformers' forward pass in float64 and HF
tokenizers; nothing is taken from the C++ code. The rules follow lm-eval's source (EleutherAI/
lm-evaluation-harness), cited at each function: request tokenisation (lm_eval/api/model.py), scoring
(lm_eval/models/huggingface.py), the tasks (lm_eval/tasks/lambada/lambada_openai.yaml, tasks/hellaswag/
utils.py, tasks/wikitext/preprocess_wikitext.py and the EleutherAI/wikitext_document_level loader), the
task plumbing (lm_eval/api/task.py) and the aggregations (lm_eval/api/metrics.py). The Table 11 distance of a
LAMBADA target to its last earlier occurrence is the project's own definition, implemented here.

Commands:
  fixtures DIR    DIR (created; may exist) holding
                    lambada.jsonl     {"text": ...} lines, the OpenAI lambada_test.jsonl form
                    hellaswag.jsonl   Rowan/hellaswag rows (ind, activity_label, ctx_a, ctx_b, ctx, endings,
                                      source_id, split, split_type, label as a string)
                    wiki.test.raw     WikiText-2 raw text: three articles
                    gpt2/             GPT2LMHeadModel, random (float32 safetensors, config.json) with a
                                      byte-level BPE in GPT-2's layout: vocab.json + merges.txt,
                                      "<|endoftext|>" the last id (GPT-2's convention)
                    neox/             GPTNeoXForCausalLM, random, with tokenizer.json: byte-level BPE,
                                      "<|endoftext|>" an added special token with id 0 (Pythia's convention)
                    NAME.reference.json for NAME in gpt2, neox:
                      max_length, prefix_token
                      lambada: [{text, context, continuation (after _encode_pair moved the context's
                                 trailing whitespace), context_tokens, continuation_tokens (before
                                 truncation), loglik, greedy, distance (int or null), bin}]
                      lambada_metrics: {acc, ppl, n, bins: {absent|1-32|33-96|>96: {acc (null if n is 0), n}}}
                      hellaswag: [{query, choices, gold, logliks, continuation_tokens, acc, acc_norm}]
                      hellaswag_metrics: {acc, acc_norm, n}
                      wikitext: [{page (original), detokenized, tokens, loglik, words, bytes, windows}]
                      wikitext_metrics: {word_perplexity, byte_perplexity, bits_per_byte, token_perplexity,
                                         words, bytes, tokens, n}

The two LAMBADA passages whose target is 32 and 33 tokens from its last earlier occurrence are padded with
a list of things ("On the way he bought eggs and milk.") until the distance under the gpt2 vocabulary is
exact; that vocabulary is trained on the task files, so the padding and the training are repeated until
both agree.

Models: transformers' default random initialisation, 64 positions; the GPT-2's seed is the first that
predicts some LAMBADA target greedily by a clear margin (its tied head copies the token just read:
"far far"). The reference reads the saved float32 weights back and computes in float64, each request in
its own unpadded forward pass; GPT-NeoX's rotary angles, which transformers computes in float32 whatever
the dtype, are recomputed in float64.
"""
import copy
import json
import math
import os
import re
import sys

import numpy as np
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import GPT2Config, GPT2LMHeadModel, GPTNeoXConfig, GPTNeoXForCausalLM
from transformers.utils import logging as hf_logging

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tokenizer_reference import bytes_to_unicode  # noqa: E402  GPT-2's byte-to-character table

hf_logging.set_verbosity_error()
hf_logging.disable_progress_bar()

MAX_LENGTH = 64
ENDOFTEXT = "<|endoftext|>"
VOCAB_SIZES = {"gpt2": 600, "neox": 500}
BINS = ["absent", "1-32", "33-96", ">96"]

# ---------------------------------------------------------------------------------------------------------
# Task files

# The LAMBADA passages with fixed text; the constructed ones (distances 32, 33, > 96) are added by
# lambada_texts(). Every one ends with its target word after a single space, but the "gold  coin" one.
LAMBADA_FIXED = [
    # a rare made-up target: several tokens under both vocabularies, absent from the context
    "The old priest told the villagers about a strange faith from beyond the mountains, one that worshipped "
    "the seven moons and forbade the eating of bread on feast days. He said its followers called it Zorblaxianism",
    # the word right before the target is the target: distance 1 (" far" is one token under both vocabularies)
    "Her grandmother began every story the same way: once upon a time, in a land far far",
    # the same, but " woof" is several tokens: the one holding its first character is more than 1 back
    "When the puppy finally learned to speak, the very first thing it said to the mailman at the gate was woof woof",
    # the target is absent from the context
    "She packed her bag with a map, a torch, some bread and a warm coat, then stepped out into the cold night "
    "and locked the door behind her with the old brass key",
    # the comparison is case-sensitive: "Rain" is not "rain"
    "Rain fell all night long, and by morning the streets of the little town were flooded. Nobody there had "
    "ever seen so much rain",
    # stripping: "cats'" -> "cats", "cat's" stays "cat's", "(cat)" -> "cat" (the match)
    "The cats' bowls were empty, and the cat's tail twitched with anger. Only the youngest (cat) stayed calm, "
    "while every other animal in the house waited for the cat",
    # the target carries punctuation ("home." -> "home")
    "He left home at sixteen with nothing but a fiddle and a dream, and after all those years on the road he "
    "finally came back home.",
    # quotes around the earlier occurrence ("bed?\"" -> "bed")
    "\"I can't find my glasses anywhere,\" said Mary. \"Have you looked under the bed?\" asked her mother, "
    "pointing at the unmade bed",
    # a double space before the last word: the context ends with a space, which _encode_pair moves
    "After searching every drawer in the house, she reached deep into her coat pocket and pulled out a single "
    "gold  coin",
    # longer than the model's 64 positions (left truncation), the earlier occurrence 33-96 tokens back
    "The farmer set off for the spring fair early in the morning and walked along the river road. It was a long "
    "walk, and on the way he stopped at an inn, where he ate a bowl of soup and drank a cup of cider. At the fair "
    "he bought a grey horse and led it home. When at last he reached his farm, his wife came out to the gate to "
    "look at the horse",
]

# The passage whose target is over 96 tokens from its earlier occurrence is padded with these sentences.
FAR_FILLER = [
    "It was a long and quiet day in the town.", "The baker sold his bread.", "The smith worked at his fire.",
    "Children ran down to the river to play.", "The water was cold.",
    "In the evening the men sat together and talked about the weather.",
    "The women sang old songs by the light of the lamps.", "Nobody thought much about the morning.",
]
# The passages with distances 32 and 33 are padded by a list of things: ITEMS[start:start + count], cycling.
ITEMS = ("bread cheese apples rope candles salt nails soap wool flour honey eggs milk fish oil tea wine paper "
         "ink string beans rice sugar butter onions pears plums cloth thread lamps").split()

# key: (head, lead of the list, tail, wanted distance or None). The target is the tail's last word and
# occurs once in the head; None: the FAR_FILLER sentences, whatever distance over 96 they give.
CONSTRUCTED = {
    "d32": ("Tom left his umbrella at the door.", "On the way he bought", "Later he went back for his umbrella", 32),
    "d33": ("Anna planted a lemon tree.", "At the market she sold", "Her children now play under that tree", 33),
    "far": ("The captain kept a green parrot on his shoulder wherever he went.", None,
            "Each morning, before anything else, he fed the parrot", None),
}


def listing(lead, start, count):
    """'lead a, b and c.' with ITEMS[start:start + count] (cycling); nothing for count 0."""
    items = [ITEMS[(start + i) % len(ITEMS)] for i in range(count)]
    if not items:
        return []
    return [lead + " " + (items[0] if count == 1 else ", ".join(items[:-1]) + " and " + items[-1]) + "."]


def constructed_text(key, run):
    head, lead, tail, _ = CONSTRUCTED[key]
    return " ".join([head] + (FAR_FILLER if lead is None else listing(lead, *run)) + [tail])


def lambada_texts(runs):
    """All LAMBADA passages; runs: {key: (start, count)} for the constructed ones padded by ITEMS."""
    return LAMBADA_FIXED + [constructed_text(key, runs.get(key)) for key in CONSTRUCTED]


# Rows shaped like Rowan/hellaswag's (made-up content). label is a string there.
HELLASWAG = [
    {"ind": 14, "activity_label": "Washing dishes", "ctx_a": "A woman stands at a kitchen sink full of plates.",
     "ctx_b": "she",
     "endings": ["turns on the tap and rinses a plate under the warm water.",
                 "picks up a guitar and plays a song for the camera.",
                 "dries her hands and walks out of the room  to get the mail.",
                 "throws the plates out of the window one by one."],
     "source_id": "activitynet~v_made_up_0001", "split": "val", "split_type": "indomain", "label": "0"},
    # ctx_b has capitals inside: str.capitalize() lowers them
    {"ind": 27, "activity_label": "Playing violin", "ctx_a": "A young man holds a violin under his chin in a small room.",
     "ctx_b": "the Teacher watches as He",
     "endings": ["eats a large sandwich and then puts the violin in the hot oven to bake.",
                 "jumps into a swimming pool with the violin held high above his head.",
                 "plays a slow tune.",
                 "paints the  walls of the room a bright green with a small brush."],
     "source_id": "activitynet~v_made_up_0002", "split": "val", "split_type": "indomain", "label": "2"},
    # WikiHow markers, empty ctx_b; an ending starting with "[title]" (no space before it: removed by the
    # regex, leaving a leading space) and one with " [title]" inside and a triple space
    {"ind": 102, "activity_label": "Home and Garden",
     "ctx_a": "[header] How to water a cactus [title] Check the soil first. [step] Push a finger into the soil "
              "to feel whether it is dry.",
     "ctx_b": "",
     "endings": ["[substeps] If the soil is dry, water the plant slowly until the water drains from the pot.",
                 "Cut the cactus into small pieces and  put them in the freezer.",
                 "[title] Water it every hour. [step] Cacti need a lot of water   every day [title] Use a hose.",
                 "Paint the pot a bright color so that the cactus feels happy."],
     "source_id": "wikihow~made_up_0003", "split": "val", "split_type": "zeroshot", "label": "0"},
    {"ind": 133, "activity_label": "Food and Entertaining",
     "ctx_a": "[header] How to make lemonade [title] Squeeze the lemons. [step] Cut six lemons in half and "
              "squeeze the juice into a jug.",
     "ctx_b": "add about",
     "endings": ["six cups of cold water and a little sugar, then stir until the sugar dissolves.",
                 "a cup of sand to the jug  and shake it hard.",
                 "[substeps] ten lemons to the oven and bake them for an hour.",
                 "a spoon of salt, then pour the lemonade down the sink."],
     "source_id": "wikihow~made_up_0004", "split": "val", "split_type": "indomain", "label": "0"},
    {"ind": 158, "activity_label": "Walking the dog", "ctx_a": "A man walks a small dog along a busy street.",
     "ctx_b": "the dog",
     "endings": ["stops to sniff a lamp post.",
                 "climbs a tall tree and  sings a long song about the moon and the stars.",
                 "drives the car back home  while the man sleeps in the back seat.",
                 "turns into a bird and flies away over the  houses and the hills."],
     "source_id": "activitynet~v_made_up_0005", "split": "val", "split_type": "indomain", "label": "0"},
    # the ctx ends with "[step]": removing it leaves the query with a trailing space, which _encode_pair moves
    {"ind": 190, "activity_label": "Pets and Animals",
     "ctx_a": "[header] How to teach a dog to sit [title] Hold a treat near the dog's nose. [step]",
     "ctx_b": "",
     "endings": ["Throw the treat into the river and walk away from the dog.",
                 "Give the dog a bath in cold water every morning.",
                 "Move your hand up slowly, so that the dog's head follows the treat and its back end lowers.",
                 "Buy a new dog if the first one does not sit."],
     "source_id": "wikihow~made_up_0006", "split": "val", "split_type": "indomain", "label": "2"},
]

# WikiText-2 raw text: each line starts with a space, headings " = Title = ", blank lines " ".
WIKI_PARAGRAPHS = {
    "Valley Mill": [
        None,
        "Valley Mill is a former water mill on the River Orrin , about 3 @.@ 5 miles ( 5 @.@ 6 km ) north of the "
        "village of Marsh End . It was built in 1 @,@ 742 by the Harlow family , and the miller 's house still "
        "stands beside it . The mill was known locally as \" the old wheel \" .",
        ("= =", "History"),
        "The mill ground wheat and barley for more than a century . In 1851 a second wheel was added ; the "
        "farmers ' market moved to the mill yard soon after , and the Harlow 's trade grew .",
        ("= = =", "Later years"),
        "Milling ended in 1928 . The building is now a small museum ( open in summer ) .",
    ],
    "Lake Orrin": [
        None,
        "Lake Orrin is a long and narrow lake in the hills above Marsh End . It is fed by three small streams "
        "and drains to the north through the River Orrin , which turns the wheel of Valley Mill before it "
        "reaches the sea . The lake is about 4 @.@ 2 miles long and , at its widest , a little under half a mile "
        "across . Its deepest point , near the northern shore , is 61 metres ( 200 ft ) below the surface .",
        ("= =", "Geography"),
        "The hills around the lake are covered in heather , bracken and a few stands of old oak and birch . On "
        "the eastern shore a narrow road runs from Marsh End to the hamlet of Cold Harbour , where a ferry once "
        "crossed to the western side . The western shore has no road at all ; walkers follow a path that climbs "
        "over two high ridges and drops to a sandy bay at the southern end of the lake .",
        ("= = =", "Climate"),
        "The weather at the lake changes quickly . Rain falls on more than two hundred days a year , and in "
        "winter the road to Cold Harbour is often closed by snow . Summers are cool and short , but on a clear "
        "day the water is a deep blue and the far hills seem close enough to touch .",
        ("= =", "History"),
        "People have lived by the lake for at least four thousand years . A stone circle stands on the ridge "
        "above the sandy bay , and the remains of round houses have been found near Cold Harbour . In the middle "
        "ages the land belonged to the abbey at Marsh End , whose monks kept fish in the shallow bays and sent "
        "salted trout to the markets in the south . After the abbey was closed in 1536 , the land was sold to the "
        "Harlow family , who built Valley Mill two centuries later .",
        "In the nineteenth century the lake became popular with painters and poets . A small hotel opened at "
        "Cold Harbour in 1863 , and a steam launch , the \" Lady of the Lake \" , carried visitors up and down the "
        "water every summer until 1914 .",
        ("= =", "Wildlife"),
        "The lake holds brown trout , pike and perch , and a rare small fish , the Orrin char , which is found "
        "nowhere else . Otters live along the streams , and red deer come down to the shore in winter . Birds "
        "include the osprey , which returned to nest on an island in 1998 after an absence of more than a "
        "hundred years .",
    ],
    "The Grey Heron ( ship )": [
        None,
        "The Grey Heron was a small cargo ship built at Cold Harbour in 1872 . She carried slate and timber on "
        "the lake until she sank in a storm in 1901 ; her wreck lies in 30 metres of water .",
    ],
}


def wiki_raw():
    """The text of wiki.test.raw: a ' ' line first, then the pages, as the real file is laid out."""
    lines = [" "]
    for title, parts in WIKI_PARAGRAPHS.items():
        lines += [f" = {title} = ", " "]
        for part in parts:
            if part is None:
                continue
            if isinstance(part, tuple):
                marks, heading = part
                lines += [f" {marks} {heading} {marks} ", " "]
            else:
                lines += [f" {part} ", " "]
    return "\n".join(lines) + "\n"


def hellaswag_rows():
    rows = []
    for item in HELLASWAG:
        row = dict(item)
        row["ctx"] = (item["ctx_a"] + " " + item["ctx_b"]).strip() if item["ctx_b"] else item["ctx_a"]
        rows.append(row)
    return rows


def training_text(lambada, hellaswag, wiki):
    """The text both vocabularies are trained on: every string of the three task files."""
    text = list(lambada)
    for row in hellaswag:
        text += [row["activity_label"], row["ctx_a"], row["ctx_b"]] + row["endings"]
    return text + wiki.split("\n")


# ---------------------------------------------------------------------------------------------------------
# Vocabularies

CHAR_TO_BYTE = {c: b for b, c in bytes_to_unicode().items()}


def token_bytes(tokenizer, token_id):
    """The bytes a vocabulary token stands for (its string mapped back through the byte alphabet)."""
    return bytes(CHAR_TO_BYTE[c] for c in tokenizer.id_to_token(token_id))


def byte_level_bpe():
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def train_vocabulary(text, vocab_size, special):
    """A byte-level BPE trained on text; special: the special tokens given the first ids."""
    tokenizer = byte_level_bpe()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False, special_tokens=special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(text, trainer)
    return tokenizer


def save_gpt2_vocabulary(tokenizer, folder):
    """vocab.json + merges.txt in GPT-2's layout; <|endoftext|> takes the id after the trained ones."""
    config = json.loads(tokenizer.to_str())
    vocab = dict(sorted(config["model"]["vocab"].items(), key=lambda item: item[1]))
    vocab[ENDOFTEXT] = len(vocab)
    merges = [m if isinstance(m, str) else " ".join(m) for m in config["model"]["merges"]]
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        f.writelines(m + "\n" for m in merges)


def load_vocabulary(folder):
    """The tokenizer of a saved model folder: tokenizer.json, or vocab.json + merges.txt."""
    path = os.path.join(folder, "tokenizer.json")
    if os.path.exists(path):
        return Tokenizer.from_file(path)
    tokenizer = byte_level_bpe()
    tokenizer.model = models.BPE.from_file(os.path.join(folder, "vocab.json"), os.path.join(folder, "merges.txt"))
    return tokenizer


def encode(tokenizer, text):
    return tokenizer.encode(text, add_special_tokens=False).ids


# ---------------------------------------------------------------------------------------------------------
# lm-eval's request tokenisation and scoring

def encode_pair(tokenizer, context, continuation, prefix_token):
    """lm_eval/api/model.py TemplateLM.loglikelihood + _encode_pair (causal): the context's trailing
    whitespace moves to the front of the continuation; the continuation's tokens are those of the whole
    text after the context's own. An empty context becomes the prefix token. Returns the strings (after
    the move) and the two token lists."""
    if context == "":
        cont = encode(tokenizer, continuation)
        # lm-eval: the prefix token, unless the continuation already starts with it
        if cont[0] == prefix_token:
            return context, continuation, cont[:1], cont[1:]
        return context, continuation, [prefix_token], cont
    kept = context.rstrip()
    if len(kept) < len(context):
        continuation = context[len(kept):] + continuation
        context = kept
    whole = encode(tokenizer, context + continuation)
    ctx = encode(tokenizer, context)
    return context, continuation, ctx, whole[len(ctx):]


class Scorer:
    """lm_eval/models/huggingface.py HFLM._loglikelihood_tokens, one request per unpadded forward pass."""

    def __init__(self, model):
        self.model = model

    def logprobs(self, ctx, cont):
        """The log-softmax at the positions that predict cont: (len(cont), vocabulary)."""
        assert ctx and cont and len(cont) <= MAX_LENGTH
        # left truncation: the last max_length + 1 tokens, less the last (it is only predicted)
        inputs = (ctx + cont)[-(MAX_LENGTH + 1):][:-1]
        with torch.no_grad():
            logits = self.model(torch.tensor([inputs])).logits[0].to(torch.float64)
        return torch.log_softmax(logits, dim=-1)[len(inputs) - len(cont):]

    def __call__(self, ctx, cont):
        """(log-likelihood of cont, whether every token of cont is the argmax)."""
        logprobs = self.logprobs(ctx, cont)
        target = torch.tensor(cont)
        loglik = float(logprobs.gather(1, target[:, None]).sum())
        greedy = bool((logprobs.argmax(dim=-1) == target).all())
        return loglik, greedy

    def clearly_greedy(self, ctx, cont, margin=0.01):
        """Whether every token of cont is the argmax by at least margin (nats) over the runner-up."""
        top = self.logprobs(ctx, cont).topk(2, dim=-1)
        return bool((top.indices[:, 0] == torch.tensor(cont)).all() and
                    (top.values[:, 0] - top.values[:, 1]).min() >= margin)


# ---------------------------------------------------------------------------------------------------------
# LAMBADA (lm_eval/tasks/lambada/lambada_openai.yaml) and the Table 11 distance

def lambada_request(text):
    """doc_to_text: the words but the last, joined by single spaces; doc_to_target: ' ' + the last word."""
    words = text.split(" ")
    return " ".join(words[:-1]), " " + words[-1]


def strip_word(word):
    """(number of leading characters dropped, word without leading/trailing non-alphanumerics)."""
    begin, end = 0, len(word)
    while begin < end and not word[begin].isalnum():
        begin += 1
    while end > begin and not word[end - 1].isalnum():
        end -= 1
    return begin, word[begin:end]


def target_distance(tokenizer, context, ctx, cont, target):
    """Tokens from the last earlier occurrence of the target word to the target (the first continuation
    token), over ctx + cont before truncation; None when the context has no such word. Words: maximal runs
    of non-whitespace, compared exactly (case-sensitive) once stripped of non-alphanumerics at both ends."""
    _, wanted = strip_word(target)
    start = None
    for match in re.finditer(r"\S+", context):
        lead, word = strip_word(match.group())
        if word and word == wanted:
            start = match.start() + lead
    if start is None:
        return None
    byte_offset = len(context[:start].encode("utf-8"))
    end = 0
    for index, token in enumerate(ctx + cont):
        end += len(token_bytes(tokenizer, token))
        if end > byte_offset:
            assert index < len(ctx), "the occurrence is not in the context tokens"
            return len(ctx) - index
    raise AssertionError("the occurrence lies past the tokens")


def distance_bin(distance):
    if distance is None:
        return "absent"
    if distance <= 32:
        return "1-32"
    return "33-96" if distance <= 96 else ">96"


def lambada_distance(tokenizer, text, prefix_token):
    context, continuation = lambada_request(text)
    context, continuation, ctx, cont = encode_pair(tokenizer, context, continuation, prefix_token)
    return target_distance(tokenizer, context, ctx, cont, text.split(" ")[-1])


def evaluate_lambada(tokenizer, score, texts, prefix_token):
    rows = []
    for text in texts:
        context, continuation = lambada_request(text)
        context, continuation, ctx, cont = encode_pair(tokenizer, context, continuation, prefix_token)
        assert b"".join(token_bytes(tokenizer, t) for t in ctx + cont) == (context + continuation).encode("utf-8")
        loglik, greedy = score(ctx, cont)
        distance = target_distance(tokenizer, context, ctx, cont, text.split(" ")[-1])
        rows.append({"text": text, "context": context, "continuation": continuation, "context_tokens": ctx,
                     "continuation_tokens": cont, "loglik": loglik, "greedy": greedy, "distance": distance,
                     "bin": distance_bin(distance)})
    # lm_eval/api/metrics.py: acc is the mean of the greedy flags, perplexity exp(-mean(loglik))
    bins = {}
    for name in BINS:
        members = [r for r in rows if r["bin"] == name]
        bins[name] = {"acc": float(np.mean([r["greedy"] for r in members])) if members else None,
                      "n": len(members)}
    metrics = {"acc": float(np.mean([r["greedy"] for r in rows])),
               "ppl": math.exp(-float(np.mean([r["loglik"] for r in rows]))), "n": len(rows), "bins": bins}
    return rows, metrics


# ---------------------------------------------------------------------------------------------------------
# HellaSwag (lm_eval/tasks/hellaswag/utils.py; multiple_choice in lm_eval/api/task.py)

def hellaswag_preprocess(text):
    """utils.py preprocess: strip, ' [title]' -> '. ', drop [...] markers (non-greedy), one pass of
    '  ' -> ' '."""
    text = text.strip().replace(" [title]", ". ")
    text = re.sub(r"\[.*?\]", "", text)
    return text.replace("  ", " ")


def hellaswag_doc(row):
    """utils.py process_docs; gold: doc_to_target '{{label}}' renders the string label, which
    ConfigurableTask.doc_to_target turns into an int (it is all digits and the task has choices)."""
    query = hellaswag_preprocess(row["activity_label"] + ": " + row["ctx_a"] + " " + row["ctx_b"].capitalize())
    choices = [hellaswag_preprocess(ending) for ending in row["endings"]]
    return query, choices, int(row["label"])


def evaluate_hellaswag(tokenizer, score, rows, prefix_token):
    out = []
    for row in rows:
        query, choices, gold = hellaswag_doc(row)
        logliks, conts = [], []
        for choice in choices:
            # construct_requests: (context, target_delimiter + choice), target_delimiter " "
            _, _, ctx, cont = encode_pair(tokenizer, query, " " + choice, prefix_token)
            logliks.append(score(ctx, cont)[0])
            conts.append(cont)
        # process_results: argmax (ties to the first) of the logliks, and of logliks / len(choice) in characters
        lls = np.array(logliks)
        lengths = np.array([float(len(c)) for c in choices])
        out.append({"query": query, "choices": choices, "gold": gold, "logliks": logliks,
                    "continuation_tokens": conts, "acc": int(np.argmax(lls) == gold),
                    "acc_norm": int(np.argmax(lls / lengths) == gold)})
    metrics = {"acc": float(np.mean([r["acc"] for r in out])), "acc_norm": float(np.mean([r["acc_norm"] for r in out])),
               "n": len(out)}
    return out, metrics


# ---------------------------------------------------------------------------------------------------------
# WikiText (EleutherAI/wikitext_document_level; lm_eval/tasks/wikitext/preprocess_wikitext.py; rolling
# log-likelihood in lm_eval/models/huggingface.py loglikelihood_rolling and lm_eval/utils.py)

def wikitext_pages(raw):
    """The document-level loader: a line that is a top-level heading ('= Title =' once '= =' and
    '= = =' are closed up and the line stripped) ends the page collected so far (kept if not blank) and
    starts the next; the last page is kept whatever it holds."""
    pages, lines = [], []
    for line in raw.split("\n"):
        closed = line.replace("= = =", "===").replace("= =", "==").strip()
        if closed.startswith("= ") and closed.endswith(" ="):
            page = "\n".join(lines)
            if page.strip():
                pages.append(page)
            lines = []
        lines.append(line)
    pages.append("\n".join(lines))
    return pages


def _pairing(opening, closing):
    """A bracket pair with the spaces just inside it removed: preprocess_wikitext.py's 'double brackets'."""
    o, c = re.escape(opening), re.escape(closing)
    return ("re", o + r"\s*([^" + c + r"]*?)\s*" + c, opening + r"\1" + closing)


# preprocess_wikitext.py wikitext_detokenizer, in its order.
DETOKENIZER = (
    [("str", "s '", "s'"), ("re", r"/' [0-9]/", r"/'[0-9]/")] +
    [("str", f" @{c}@ ", c) for c in "-,."] +
    [("str", f" {p} ", f"{p} ") for p in ":;.!?,"] +
    [_pairing(o, c) for o, c in ("()", "[]", "{}", '""', "''")] +
    [("str", "= = = =", "===="), ("str", "= = =", "==="), ("str", "= =", "=="),
     ("str", " \u00b0 ", "\u00b0"), ("str", " \n", "\n"), ("str", "\n ", "\n"), ("str", " N ", " 1 "),
     ("str", " 's", "'s")])


def wikitext_detokenize(page):
    for kind, old, new in DETOKENIZER:
        page = page.replace(old, new) if kind == "str" else re.sub(old, new, page)
    return page


def rolling_windows(tokens, prefix_token):
    """utils.py get_rolling_token_windows (max_seq_len = MAX_LENGTH, context_len = 1) followed by
    make_disjoint_window: (context, continuation) pairs whose continuations cover the tokens once."""
    windows = []
    if not tokens:
        return windows
    first = min(MAX_LENGTH, len(tokens))
    windows.append(([prefix_token] + tokens[:first - 1], tokens[:first]))
    done = first
    while done < len(tokens):
        count = min(len(tokens) - done, MAX_LENGTH)
        end = done + count
        windows.append((tokens[end - MAX_LENGTH - 1:end - 1], tokens[end - count:end]))
        done = end
    # disjoint: the inputs that are not also predicted
    return [(inputs[:len(inputs) - (len(preds) - 1)], preds) for inputs, preds in windows]


def evaluate_wikitext(tokenizer, score, raw, prefix_token):
    out = []
    for page in wikitext_pages(raw):
        text = wikitext_detokenize(page)
        tokens = encode(tokenizer, text)
        windows = rolling_windows(tokens, prefix_token)
        assert [t for _, cont in windows for t in cont] == tokens
        loglik = sum(score(ctx, cont)[0] for ctx, cont in windows)
        # process_results: words and bytes of the page before detokenising
        out.append({"page": page, "detokenized": text, "tokens": len(tokens), "loglik": loglik,
                    "words": len(re.split(r"\s+", page)), "bytes": len(page.encode("utf-8")),
                    "windows": len(windows)})
    ll = sum(r["loglik"] for r in out)
    words, nbytes, tokens = (sum(r[k] for r in out) for k in ("words", "bytes", "tokens"))
    metrics = {"word_perplexity": math.exp(-ll / words), "byte_perplexity": math.exp(-ll / nbytes),
               "bits_per_byte": -ll / nbytes / math.log(2), "token_perplexity": math.exp(-ll / tokens),
               "words": words, "bytes": nbytes, "tokens": tokens, "n": len(out)}
    return out, metrics


# ---------------------------------------------------------------------------------------------------------
# Fixtures

def padded_lambada(hellaswag, wiki):
    """The LAMBADA passages and the gpt2 vocabulary trained with them, once the constructed passages'
    distances under that vocabulary are exactly as wanted. A fixed-point search: train on the passages,
    give each passage that misses the first list (fewest items, then earliest start) not tried before
    that has the wanted distance under that vocabulary, and train again."""
    candidates = [(0, 0)] + [(start, count) for count in range(1, len(ITEMS) + 1) for start in range(len(ITEMS))]
    exact = [key for key, entry in CONSTRUCTED.items() if entry[3] is not None]
    runs = {key: (0, 0) for key in exact}
    tried = {key: {(0, 0)} for key in exact}
    for _ in range(100):
        texts = lambada_texts(runs)
        tokenizer = train_vocabulary(training_text(texts, hellaswag, wiki), VOCAB_SIZES["gpt2"], [])
        prefix = tokenizer.get_vocab_size()  # where <|endoftext|> will go
        distance = lambda key, run: lambada_distance(tokenizer, constructed_text(key, run), prefix)
        far = distance("far", None)
        assert far is not None and far > 96, far
        wrong = [key for key in exact if distance(key, runs[key]) != CONSTRUCTED[key][3]]
        if not wrong:
            assert lambada_distance(tokenizer, LAMBADA_FIXED[1], prefix) == 1, "' far' is not one token"
            return texts, tokenizer
        for key in wrong:
            fits = [run for run in candidates if run not in tried[key] and distance(key, run) == CONSTRUCTED[key][3]]
            if not fits:
                break
            runs[key] = fits[0]
            tried[key].add(fits[0])
    raise SystemExit("zero_shot_reference.py: no list of items gives the wanted distances")


def build_model(name, vocab_size, eot, seed=0):
    """Random, transformers' default initialisation; <|endoftext|> as bos and eos."""
    torch.manual_seed(sum(map(ord, name)) + seed)
    if name == "gpt2":
        config = GPT2Config(n_embd=32, n_head=4, n_layer=2, n_positions=MAX_LENGTH, vocab_size=vocab_size,
                            bos_token_id=eot, eos_token_id=eot)
        model = GPT2LMHeadModel(config)
    else:
        config = GPTNeoXConfig(hidden_size=32, num_attention_heads=4, num_hidden_layers=2, intermediate_size=128,
                               vocab_size=vocab_size, max_position_embeddings=MAX_LENGTH, rotary_pct=0.25,
                               use_parallel_residual=True, bos_token_id=eot, eos_token_id=eot)
        model = GPTNeoXForCausalLM(config)
    return model.eval()


def exact_rotary(model):
    """transformers computes the rotary angles in float32 whatever the model's dtype; recompute them in
    float64 (inverse frequencies included) so that the reference is float64 throughout."""
    rotary = model.gpt_neox.rotary_emb
    rope = model.config.rope_parameters
    head = model.config.hidden_size // model.config.num_attention_heads
    dims = int(head * rope.get("partial_rotary_factor", 1.0))
    inv_freq = 1.0 / (rope["rope_theta"] ** (torch.arange(0, dims, 2, dtype=torch.float64) / dims))

    def forward(x, position_ids):
        freqs = position_ids[..., None].to(torch.float64) * inv_freq
        angles = torch.cat((freqs, freqs), dim=-1)
        return angles.cos().to(x.dtype), angles.sin().to(x.dtype)

    rotary.forward = forward


def load_model(folder, name):
    family = GPT2LMHeadModel if name == "gpt2" else GPTNeoXForCausalLM
    model = family.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").to(torch.float64)
    if name == "neox":
        exact_rotary(model)
    return model.eval()


def greedy_gpt2(tokenizer, texts, vocab_size, eot):
    """The random GPT-2 of the first seed that predicts some LAMBADA target greedily (by 0.01 nats or
    more), so that the reference has a greedy hit: with its tied head, a random GPT-2 often predicts the
    token it has just read, as in "far far"; a random untied GPT-NeoX hardly ever does."""
    for seed in range(100):
        model = build_model("gpt2", vocab_size, eot, seed)
        score = Scorer(copy.deepcopy(model).to(torch.float64))
        for text in texts:
            _, _, ctx, cont = encode_pair(tokenizer, *lambada_request(text), eot)
            if score.clearly_greedy(ctx, cont):
                return model
    raise SystemExit("zero_shot_reference.py: no seed gives a greedy LAMBADA target")


def write_jsonl(path, rows):
    with open(path, "w", encoding="ascii") as f:
        f.writelines(json.dumps(row) + "\n" for row in rows)


def make_fixtures(out):
    torch.set_num_threads(1)  # tiny models, one request at a time: threads only add contention
    os.makedirs(out, exist_ok=True)
    hellaswag = hellaswag_rows()
    wiki = wiki_raw()
    texts, gpt2_vocab = padded_lambada(hellaswag, wiki)
    write_jsonl(os.path.join(out, "lambada.jsonl"), [{"text": t} for t in texts])
    write_jsonl(os.path.join(out, "hellaswag.jsonl"), hellaswag)
    with open(os.path.join(out, "wiki.test.raw"), "w", encoding="ascii") as f:
        f.write(wiki)
    corpus = training_text(texts, hellaswag, wiki)

    for name in ("gpt2", "neox"):
        folder = os.path.join(out, name)
        os.makedirs(folder, exist_ok=True)
        if name == "gpt2":
            trained = gpt2_vocab
            save_gpt2_vocabulary(trained, folder)
        else:
            trained = train_vocabulary(corpus, VOCAB_SIZES["neox"], [ENDOFTEXT])
            trained.save(os.path.join(folder, "tokenizer.json"))
        tokenizer = load_vocabulary(folder)
        vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)
        eot = tokenizer.token_to_id(ENDOFTEXT)
        assert eot is not None and max(tokenizer.get_vocab(with_added_tokens=True).values()) == vocab_size - 1
        assert all(encode(tokenizer, t) == encode(trained, t) for t in corpus)  # the files round-trip
        model = build_model(name, vocab_size, eot)
        if name == "gpt2":
            model = greedy_gpt2(tokenizer, texts, vocab_size, eot)
        model.save_pretrained(folder)  # transformers 5 writes safetensors only

        score = Scorer(load_model(folder, name))
        lambada, lambada_metrics = evaluate_lambada(tokenizer, score, texts, eot)
        hella, hella_metrics = evaluate_hellaswag(tokenizer, score, hellaswag, eot)
        wikitext, wikitext_metrics = evaluate_wikitext(tokenizer, score, wiki, eot)
        result = {"max_length": MAX_LENGTH, "prefix_token": eot, "lambada": lambada,
                  "lambada_metrics": lambada_metrics, "hellaswag": hella, "hellaswag_metrics": hella_metrics,
                  "wikitext": wikitext, "wikitext_metrics": wikitext_metrics}
        with open(os.path.join(out, name + ".reference.json"), "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1, allow_nan=False)
        print(f"{name}: vocabulary {vocab_size}, <|endoftext|> {eot}; lambada distances "
              f"{[r['distance'] for r in lambada]}, greedy {sum(r['greedy'] for r in lambada)}; "
              f"wikitext windows {[r['windows'] for r in wikitext]}")


def main(argv):
    if len(argv) != 3 or argv[1] != "fixtures":
        sys.exit(__doc__)
    make_fixtures(argv[2])


if __name__ == "__main__":
    main(sys.argv)
