#!/usr/bin/env python3
"""h5_header_edit.py — seeded edits inside HDF5 object headers, checksums recomputed, run through every reader.

HDF5 1.10 files carry a Jenkins lookup3 checksum on every metadata block, so random damage is
refused by the library before any reader sees it (tests/fuzz.py). A header edit with the checksum
recomputed (a buggy writer, or a deliberate edit) passes that check. This script makes the seed
inputs of tests/fuzz.py with the tools, finds their version-2 object headers ("OHDR"), the
continuation blocks ("OCHK") their continuation messages name, the version-2/3 superblock, and the
chunk indexes, B-tree and heap blocks found by signature (token files: extensible arrays, "EAHD"
and "EAIB"), and applies one seeded edit per case to one field:

  dataspace     version, rank, flags, class, a dimension, a maximum dimension
  datatype      class/version byte, class bits, size, offset, precision, float field layout, bias
  layout        version, class, address, size, chunk rank and dimensions, chunk index type and fields
  filters       count, filter id, flags, number of values
  fill value    version, flags, size
  attribute     name/datatype/dataspace sizes, and the datatype and dataspace it holds
  link          flags, link type, name length, the object address it points to
  link info, attribute info, group info   heap and B-tree addresses, flags, limits
  continuation  the address and length of the next block
  any message   its type, size and flags; the header's chunk size and flags
  superblock    base, extension, end-of-file and root-header addresses
  EAHD          the extensible array header's parameters, statistics and index-block address
  other blocks  an 8-byte word (as an address or a count) or a byte

then recomputes the block's checksum (H5_checksum_metadata: lookup3 hashlittle, initval 0, over the
block less its last 4 bytes), checked first against every unedited block of every seed. Each reader
of the file's kind (tests/fuzz.py's list; sg-eval with --allow-other-tokens, so that a token file
is judged by its reader rather than refused by the run's SHA-256 of it) runs on the result under
the same memory cap as tests/fuzz.py and a time limit, and each run is counted as

  refused   exit 3 naming the file (the clean refusal)
  accepted  exit 0 (harmless edits, e.g. a modification time, are accepted rightly)
  crash     a signal; hang: over the time limit; internal: exit 1; other: an undocumented code or
            exit 3 without the file's name

Crashes, hangs, internal errors and other codes keep their input and command in WORK_DIR/failures/;
after the campaign, the first crash or hang of each (kind, field, reader) gets a gdb backtrace when
gdb is installed (a crash run under gdb; a hang attached after the time limit), one at a time, and
WORK_DIR/failures.json lists them all. Before sinkgate checked headers itself (lib/io/h5_headers)
it found crashes inside libhdf5; since, none (docs/guarantees.md). A campaign takes about 20
minutes, so it is not in the suite; tests/io/test_h5_headers.cpp makes one edit of each kind.

Usage:
  h5_header_edit.py BIN_DIR WORK_DIR [--edits N] [--seed S] [--kinds tokens,run,result,...]
                    [--jobs J] [--timeout SEC] [--backtraces N] [--blocks EAHD,EAIB,...]

  BIN_DIR   the folder of the sg- executables (build/bin)
  WORK_DIR  scratch folder (wiped): seeds/, cases/, failures/, results.jsonl (one line per run)

Examples:
  python tests/h5_header_edit.py build/bin /tmp/hdr --edits 300 --seed 1
  python tests/h5_header_edit.py build/bin /tmp/hdr-ea --edits 150 --seed 2 --kinds tokens --blocks EAHD,EAIB

Each edit is reproducible from (--seed, edit number): edit i of kind K is the same edit of the
same seed file whatever else runs (seed files whose provenance differs, a later commit's, can shift
offsets: the failing inputs themselves are kept). --blocks narrows the edits to some blocks. Exit 0 when no run crashed, hung or failed internally, 1 otherwise.
"""
import argparse
import concurrent.futures
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz  # noqa: E402  (seed inputs, readers, the memory cap)

KINDS = ["tokens", "run", "result", "pairdiff", "examples"]
MASK = 0xFFFFFFFF
UNDEFINED = 0xFFFFFFFFFFFFFFFF  # HADDR_UNDEF as 8 bytes
SIGNATURE = b"\x89HDF\r\n\x1a\n"


# --- Jenkins lookup3, as H5_checksum_lookup3 -------------------------------------------------------

def _rot(x, k):
    return ((x << k) | (x >> (32 - k))) & MASK


def lookup3(data, initval=0):
    """hashlittle(data, len, initval): HDF5's metadata checksum with initval 0."""
    length = len(data)
    a = b = c = (0xDEADBEEF + length + initval) & MASK
    i = 0
    while length > 12:
        x, y, z = struct.unpack_from("<III", data, i)
        a, b, c = (a + x) & MASK, (b + y) & MASK, (c + z) & MASK
        a = (a - c) & MASK; a ^= _rot(c, 4); c = (c + b) & MASK
        b = (b - a) & MASK; b ^= _rot(a, 6); a = (a + c) & MASK
        c = (c - b) & MASK; c ^= _rot(b, 8); b = (b + a) & MASK
        a = (a - c) & MASK; a ^= _rot(c, 16); c = (c + b) & MASK
        b = (b - a) & MASK; b ^= _rot(a, 19); a = (a + c) & MASK
        c = (c - b) & MASK; c ^= _rot(b, 4); b = (b + a) & MASK
        length -= 12
        i += 12
    if length == 0:
        return c
    x, y, z = struct.unpack("<III", bytes(data[i:i + length]) + bytes(12 - length))
    a, b, c = (a + x) & MASK, (b + y) & MASK, (c + z) & MASK
    c ^= b; c = (c - _rot(b, 14)) & MASK
    a ^= c; a = (a - _rot(c, 11)) & MASK
    b ^= a; b = (b - _rot(a, 25)) & MASK
    c ^= b; c = (c - _rot(b, 16)) & MASK
    a ^= c; a = (a - _rot(c, 4)) & MASK
    b ^= a; b = (b - _rot(a, 14)) & MASK
    c ^= b; c = (c - _rot(b, 24)) & MASK
    return c


def checksum_ok(data, start, end):
    """Whether the block [start, end) ends with the checksum of the rest."""
    return struct.unpack_from("<I", data, end - 4)[0] == lookup3(bytes(data[start:end - 4]))


def reseal(data, start, end):
    struct.pack_into("<I", data, end - 4, lookup3(bytes(data[start:end - 4])))


# --- the file's metadata blocks ------------------------------------------------------------------

MESSAGE_NAMES = {0: "nil", 1: "dataspace", 2: "link-info", 3: "datatype", 4: "fill-old", 5: "fill-value", 6: "link",
                 7: "external-files", 8: "layout", 10: "group-info", 11: "filters", 12: "attribute", 13: "comment",
                 16: "continuation", 17: "symbol-table", 18: "modification-time", 21: "attribute-info",
                 22: "reference-count"}


class Block:
    """One checksummed metadata block: an OHDR chunk 0, an OCHK continuation, or the superblock.
    `messages`: [(type, header offset, body offset, body size)] (absolute offsets)."""

    def __init__(self, kind, start, end, messages=(), creation_order=False):
        self.kind, self.start, self.end = kind, start, end
        self.messages = list(messages)
        self.creation_order = creation_order


def parse_messages(data, start, end, creation_order):
    """The messages of a v2 header chunk whose messages span [start, end) (checksum excluded)."""
    header = 6 if creation_order else 4
    messages, at = [], start
    while at + header <= end:
        kind, size, _ = struct.unpack_from("<BHB", data, at)
        body = at + header
        if body + size > end:
            break
        messages.append((kind, at, body, size))
        at = body + size
    return messages


def parse_superblock(data):
    if data[:8] != SIGNATURE or data[8] not in (2, 3) or data[9] != 8 or data[10] != 8:
        return None
    block = Block("superblock", 0, 48)
    return block if checksum_ok(data, 0, 48) else None


def parse_ohdr(data, at):
    """The OHDR block at `at` (None when it does not parse or its checksum fails) and its
    continuations [(address, length)]."""
    if data[at:at + 4] != b"OHDR" or data[at + 4] != 2:
        return None, []
    flags = data[at + 5]
    p = at + 6
    if flags & 0x20:
        p += 16
    if flags & 0x10:
        p += 4
    width = 1 << (flags & 3)
    if p + width > len(data):
        return None, []
    size = int.from_bytes(data[p:p + width], "little")
    p += width
    end = p + size + 4
    if end > len(data) or not checksum_ok(data, at, end):
        return None, []
    creation_order = bool(flags & 0x04)
    block = Block("OHDR", at, end, parse_messages(data, p, end - 4, creation_order), creation_order)
    block.size_field = (p - width, width)
    return block, continuations(data, block)


def continuations(data, block):
    return [struct.unpack_from("<QQ", data, body) for kind, _, body, size in block.messages if kind == 16 and size >= 16]


def parse_ochk(data, at, length, creation_order):
    end = at + length
    if data[at:at + 4] != b"OCHK" or end > len(data) or length < 8 or not checksum_ok(data, at, end):
        return None, []
    block = Block("OCHK", at, end, parse_messages(data, at + 4, end - 4, creation_order), creation_order)
    return block, continuations(data, block)


# Chunk indexes (extensible and fixed arrays) and the B-trees and heaps of dense groups and
# attributes: found by signature, their length by the checksum that ends them.
INDEX_SIGNATURES = [b"EAHD", b"EAIB", b"EASB", b"EADB", b"FAHD", b"FADB", b"BTHD", b"BTIN", b"BTLF", b"FRHP", b"FHIB",
                    b"FHDB"]


def index_fields(data, block):
    """Fields of a chunk-index, B-tree or heap block: its named ones where known (the extensible
    array header), else each 8-byte word as an address or a count, and each byte."""
    at, end = block.start, block.end - 4
    if block.kind == "EAHD":
        names = ["element-size", "max-bits", "index-elements", "min-elements", "min-pointers", "page-bits"]
        fields = [(f"EAHD.{n}", at + 6 + i, 1, "count") for i, n in enumerate(names)]
        stats = ["secondary-blocks", "secondary-size", "data-blocks", "data-size", "max-index", "elements"]
        fields += [(f"EAHD.{n}", at + 12 + 8 * i, 8, "count") for i, n in enumerate(stats)]
        return fields + [("EAHD.index-address", at + 60, 8, "address")]
    fields = [(f"{block.kind}.word@{p - at}", p, 8, kind) for p in range(at + 4, end - 7, 2)
              for kind in ("address", "count")]
    return fields + [(f"{block.kind}.byte@{p - at}", p, 1, "enum") for p in range(at + 4, end)]


def metadata_blocks(data):
    """Every checksummed block this script edits: the superblock, each OHDR found by its signature
    (kept when its checksum holds), and the OCHK blocks their continuation messages name."""
    blocks = []
    superblock = parse_superblock(data)
    if superblock:
        blocks.append(superblock)
    at = data.find(b"OHDR")
    while at >= 0:
        block, pending = parse_ohdr(data, at)
        if block:
            blocks.append(block)
            seen = set()
            while pending:
                address, length = pending.pop()
                if address in seen:
                    continue
                seen.add(address)
                chunk, more = parse_ochk(data, address, length, block.creation_order)
                if chunk:
                    blocks.append(chunk)
                    pending += more
        at = data.find(b"OHDR", at + 4)
    for signature in INDEX_SIGNATURES:
        at = data.find(signature)
        while at >= 0:
            end = next((at + n for n in range(16, min(4096, len(data) - at) + 1) if checksum_ok(data, at, at + n)), None)
            if end:
                blocks.append(Block(signature.decode(), at, end))
            at = data.find(signature, at + 4)
    return blocks


# --- the fields of each message -------------------------------------------------------------------
# A field: (name, absolute offset, width in bytes, kind); kind "count" (a size, length or
# dimension), "address", "enum" (a version, class or type byte) or "flags".

def datatype_fields(data, at, limit, prefix="datatype"):
    if at + 8 > limit:
        return []
    fields = [(prefix + ".class-version", at, 1, "enum"), (prefix + ".class-bits", at + 1, 3, "flags"),
              (prefix + ".size", at + 4, 4, "count")]
    type_class = data[at] & 0x0F
    if type_class in (0, 1) and at + 12 <= limit:  # integer, float: offset, precision
        fields += [(prefix + ".offset", at + 8, 2, "count"), (prefix + ".precision", at + 10, 2, "count")]
    if type_class == 1 and at + 20 <= limit:
        fields += [(prefix + ".exponent-location", at + 12, 1, "count"), (prefix + ".exponent-size", at + 13, 1, "count"),
                   (prefix + ".mantissa-location", at + 14, 1, "count"), (prefix + ".mantissa-size", at + 15, 1, "count"),
                   (prefix + ".exponent-bias", at + 16, 4, "count")]
    return fields


def dataspace_fields(data, at, limit, prefix="dataspace"):
    if at + 4 > limit:
        return []
    version, rank, flags = data[at], data[at + 1], data[at + 2]
    fields = [(prefix + ".version", at, 1, "enum"), (prefix + ".rank", at + 1, 1, "count"),
              (prefix + ".flags", at + 2, 1, "flags")]
    if version == 2:
        fields.append((prefix + ".class", at + 3, 1, "enum"))
        dims = at + 4
    else:
        dims = at + 8
    for i in range(rank):
        if dims + 8 * (i + 1) <= limit:
            fields.append((f"{prefix}.dim[{i}]", dims + 8 * i, 8, "count"))
        if flags & 1 and dims + 8 * (rank + i + 1) <= limit:
            fields.append((f"{prefix}.maxdim[{i}]", dims + 8 * (rank + i), 8, "count"))
    return fields


def layout_fields(data, at, limit):
    fields = [("layout.version", at, 1, "enum"), ("layout.class", at + 1, 1, "enum")]
    version, layout = data[at], data[at + 1]
    p = at + 2
    if version >= 3 and layout == 0:  # compact
        fields.append(("layout.compact-size", p, 2, "count"))
    elif version >= 3 and layout == 1:  # contiguous
        fields += [("layout.address", p, 8, "address"), ("layout.size", p + 8, 8, "count")]
    elif version == 3 and layout == 2:
        rank = data[p]
        fields += [("layout.chunk-rank", p, 1, "count"), ("layout.index-address", p + 1, 8, "address")]
        fields += [(f"layout.chunk-dim[{i}]", p + 9 + 4 * i, 4, "count") for i in range(rank)]
    elif version == 4 and layout == 2:
        flags, rank, width = data[p], data[p + 1], data[p + 2]
        fields += [("layout.chunk-flags", p, 1, "flags"), ("layout.chunk-rank", p + 1, 1, "count"),
                   ("layout.dim-width", p + 2, 1, "count")]
        q = p + 3
        for i in range(rank):
            fields.append((f"layout.chunk-dim[{i}]", q, width, "count"))
            q += width
        index = data[q] if q < limit else 0
        fields.append(("layout.index-type", q, 1, "enum"))
        q += 1
        if index == 1:  # single chunk
            if flags & 2:
                fields += [("layout.single-chunk-size", q, 8, "count"), ("layout.single-chunk-filter-mask", q + 8, 4, "flags")]
                q += 12
        elif index == 3:  # fixed array
            fields.append(("layout.fixed-array-page-bits", q, 1, "count"))
            q += 1
        elif index == 4:  # extensible array
            names = ["max-bits", "index-elements", "min-pointers", "min-elements", "page-bits"]
            fields += [(f"layout.extensible-array-{n}", q + i, 1, "count") for i, n in enumerate(names)]
            q += 5
        elif index == 5:  # B-tree v2
            fields += [("layout.btree-node-size", q, 4, "count"), ("layout.btree-split", q + 4, 1, "count"),
                       ("layout.btree-merge", q + 5, 1, "count")]
            q += 6
        fields.append(("layout.index-address", q, 8, "address"))
    return [f for f in fields if f[1] + f[2] <= limit]


def filter_fields(data, at, limit):
    fields = [("filters.version", at, 1, "enum"), ("filters.count", at + 1, 1, "count")]
    version, count = data[at], data[at + 1]
    p = at + (2 if version == 2 else 8)
    for i in range(count):
        if p + 6 > limit:
            break
        ident = struct.unpack_from("<H", data, p)[0]
        fields.append((f"filters[{i}].id", p, 2, "enum"))
        named = version == 1 or ident >= 256
        name_length = struct.unpack_from("<H", data, p + 2)[0] if named else 0
        q = p + (4 if named else 2)
        fields += [(f"filters[{i}].flags", q, 2, "flags"), (f"filters[{i}].values", q + 2, 2, "count")]
        values = struct.unpack_from("<H", data, q + 2)[0] if q + 4 <= limit else 0
        if named:
            fields.append((f"filters[{i}].name-length", p + 2, 2, "count"))
        p = q + 4 + name_length + 4 * values + (4 if version == 1 and values % 2 else 0)
    return [f for f in fields if f[1] + f[2] <= limit]


def link_fields(data, at, limit):
    flags = data[at + 1]
    fields = [("link.version", at, 1, "enum"), ("link.flags", at + 1, 1, "flags")]
    p = at + 2
    link_type = 0
    if flags & 0x08:
        link_type = data[p]
        fields.append(("link.type", p, 1, "enum"))
        p += 1
    if flags & 0x04:
        fields.append(("link.creation-order", p, 8, "count"))
        p += 8
    if flags & 0x10:
        fields.append(("link.charset", p, 1, "enum"))
        p += 1
    width = 1 << (flags & 3)
    fields.append(("link.name-length", p, width, "count"))
    name_length = int.from_bytes(data[p:p + width], "little")
    p += width + name_length
    if link_type == 0:
        fields.append(("link.address", p, 8, "address"))
    elif link_type == 1:
        fields.append(("link.soft-length", p, 2, "count"))
    return [f for f in fields if f[1] + f[2] <= limit]


def attribute_fields(data, at, limit):
    version = data[at]
    fields = [("attribute.version", at, 1, "enum"), ("attribute.flags", at + 1, 1, "flags"),
              ("attribute.name-size", at + 2, 2, "count"), ("attribute.datatype-size", at + 4, 2, "count"),
              ("attribute.dataspace-size", at + 6, 2, "count")]
    name_size, type_size, space_size = struct.unpack_from("<HHH", data, at + 2)
    pad = (lambda n: (n + 7) // 8 * 8) if version == 1 else (lambda n: n)
    p = at + 8
    if version == 3:
        fields.append(("attribute.encoding", p, 1, "enum"))
        p += 1
    p += pad(name_size)
    fields += datatype_fields(data, p, min(limit, p + type_size), "attribute.datatype")
    p += pad(type_size)
    fields += dataspace_fields(data, p, min(limit, p + space_size), "attribute.dataspace")
    return [f for f in fields if f[1] + f[2] <= limit]


# The header messages whose fields a parser of its own lists, by message type.
MESSAGE_PARSERS = {1: dataspace_fields, 3: datatype_fields, 6: link_fields, 8: layout_fields, 11: filter_fields,
                   12: attribute_fields}


def message_fields(data, kind, body, size):
    limit = body + size
    if size == 0:
        return []
    if kind in MESSAGE_PARSERS:
        return MESSAGE_PARSERS[kind](data, body, limit)
    if kind == 16:
        return [("continuation.address", body, 8, "address"), ("continuation.length", body + 8, 8, "count")]
    if kind == 5:
        fields = [("fill-value.version", body, 1, "enum"), ("fill-value.flags", body + 1, 1, "flags")]
        if data[body] == 3 and data[body + 1] & 0x20:
            fields.append(("fill-value.size", body + 2, 4, "count"))
        elif data[body] in (1, 2):
            fields += [("fill-value.allocation-time", body + 1, 1, "enum"), ("fill-value.defined", body + 3, 1, "enum"),
                       ("fill-value.size", body + 4, 4, "count")]
        return [f for f in fields if f[1] + f[2] <= limit]
    if kind in (2, 21):  # link info, attribute info
        name = "link-info" if kind == 2 else "attribute-info"
        flags = data[body + 1]
        fields = [(name + ".version", body, 1, "enum"), (name + ".flags", body + 1, 1, "flags")]
        p = body + 2
        if flags & 1:
            fields.append((name + ".max-creation-index", p, 8 if kind == 2 else 2, "count"))
            p += 8 if kind == 2 else 2
        fields += [(name + ".heap-address", p, 8, "address"), (name + ".name-index-address", p + 8, 8, "address")]
        if flags & 2:
            fields.append((name + ".order-index-address", p + 16, 8, "address"))
        return [f for f in fields if f[1] + f[2] <= limit]
    if kind == 10:
        flags = data[body + 1]
        fields = [("group-info.version", body, 1, "enum"), ("group-info.flags", body + 1, 1, "flags")]
        p = body + 2
        if flags & 1:
            fields += [("group-info.max-compact", p, 2, "count"), ("group-info.min-dense", p + 2, 2, "count")]
            p += 4
        if flags & 2:
            fields += [("group-info.estimated-entries", p, 2, "count"), ("group-info.estimated-name-length", p + 2, 2, "count")]
        return [f for f in fields if f[1] + f[2] <= limit]
    if kind == 22:
        return [("reference-count.version", body, 1, "enum"), ("reference-count.count", body + 1, 4, "count")]
    return [(MESSAGE_NAMES.get(kind, f"type-{kind}") + ".byte", body + i, 1, "enum") for i in range(min(size, 8))]


# --- one edit --------------------------------------------------------------------------------------

def new_value(rng, kind, width, value, context):
    top = (1 << (8 * width)) - 1
    if kind == "flags":
        return value ^ (1 << rng.randrange(8 * width))
    if kind == "enum":
        return rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 16, 0x7F, 0xFF, rng.randrange(256)]) & top
    if kind == "address":
        headers = context["headers"] or [context["block"]]
        choices = [0, 1, value + 1, value - 1, value + 8, value - 8, context["eof"], context["eof"] - 1,
                   context["eof"] + 4096, 1 << 40, rng.randrange(context["eof"]), rng.choice(headers),
                   rng.choice(headers) + rng.choice([4, 6, 16]), context["block"]]
        if width == 8:
            choices.append(UNDEFINED)
        return rng.choice(choices) & top
    choices = [0, 1, 2, value + 1, value - 1, value * 2, value + 7, value >> 1, top, top - 1, top >> 1, (top >> 1) + 1,
               rng.randrange(top + 1), context["eof"], context["eof"] // max(value, 1) + 1]
    if width >= 4:
        choices += [1 << 31, 1 << 32, 1 << 40, 1 << 62]
    return rng.choice(choices) & top


def make_edit(data, blocks, rng):
    """One seeded edit of a copy of `data`: (edited bytes, description)."""
    context = {"eof": len(data), "headers": [b.start for b in blocks if b.kind == "OHDR"]}
    data = bytearray(data)
    choice = rng.random()
    superblock = next((b for b in blocks if b.kind == "superblock"), None)
    indexes = [b for b in blocks if b.kind.encode() in INDEX_SIGNATURES]
    if superblock is not None and choice < 0.04:
        block = superblock
        name, at, width, kind = rng.choice([("superblock.base-address", 12, 8, "address"),
                                            ("superblock.extension-address", 20, 8, "address"),
                                            ("superblock.eof-address", 28, 8, "count"),
                                            ("superblock.root-address", 36, 8, "address"),
                                            ("superblock.flags", 11, 1, "flags")])
    elif indexes and choice < 0.20:
        block = rng.choice(indexes)
        name, at, width, kind = rng.choice(index_fields(data, block))
    else:
        headers = [b for b in blocks if b.messages]
        if not headers:  # --blocks left chunk-index blocks only
            block = rng.choice(indexes)
            return seal_edit(data, block, rng.choice(index_fields(data, block)), rng, context)
        weights = [len(b.messages) for b in headers]
        block = rng.choices(headers, weights=weights)[0]
        message_type, header, body, size = rng.choice(block.messages)
        label = MESSAGE_NAMES.get(message_type, f"type-{message_type}")
        fields = message_fields(data, message_type, body, size)
        generic = [(label + ".message-type", header, 1, "enum"), (label + ".message-size", header + 1, 2, "count"),
                   (label + ".message-flags", header + 3, 1, "flags")]
        if block.kind == "OHDR":
            generic += [("ohdr.flags", block.start + 5, 1, "flags"),
                        ("ohdr.chunk-size", block.size_field[0], block.size_field[1], "count")]
        pick = rng.random()
        if fields and pick < 0.75:
            name, at, width, kind = rng.choice(fields)
        else:
            name, at, width, kind = rng.choice(generic)
    return seal_edit(data, block, (name, at, width, kind), rng, context)


def seal_edit(data, block, field, rng, context):
    """Sets `field` of `block` in `data` (a bytearray) to a new value and recomputes the block's checksum."""
    name, at, width, kind = field
    context["block"] = block.start
    old = int.from_bytes(data[at:at + width], "little")
    value = new_value(rng, kind, width, old, context)
    if value == old:
        value = old ^ 1
    data[at:at + width] = value.to_bytes(width, "little")
    end = block.end
    if name == "ohdr.chunk-size":  # the checksum moves with the chunk size when it still fits
        moved = block.size_field[0] + width + value + 4
        if block.start < moved <= len(data):
            end = moved
    reseal(data, block.start, end)
    where = f"{block.kind}@{block.start}"
    return bytes(data), {"block": where, "field": name, "offset": at, "width": width, "old": old, "new": value}


# --- running ---------------------------------------------------------------------------------------

OUTCOMES = ["refused", "accepted", "crash", "hang", "internal", "other"]


def classify(outcome):
    return {"ok": "accepted", "exit 3": "refused", "crash": "crash", "hang": "hang", "internal": "internal"}.get(outcome, "other")


def backtrace(argv, cwd, memory, hang, timeout):
    """A gdb backtrace of `argv`: run under gdb (a crash), or attached after `timeout` (a hang)."""
    if not shutil.which("gdb"):
        return ""
    env = dict(os.environ, TMPDIR=cwd)
    if hang:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   preexec_fn=fuzz.limits(memory), env=env, cwd=cwd)
        time.sleep(timeout)
        if process.poll() is not None:
            return f"(exited {process.returncode} before gdb attached)"
        result = subprocess.run(["gdb", "-batch", "-p", str(process.pid), "-ex", "thread apply all bt 30"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    else:
        result = subprocess.run(["gdb", "-batch", "-ex", "run", "-ex", "bt 30", "--args"] + argv,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                cwd=cwd, timeout=300, preexec_fn=fuzz.limits(2 * memory))
    lines = result.stdout.decode(errors="replace").splitlines()
    return "\n".join(line for line in lines if line.startswith(("#", "Thread")) or "signal" in line.lower())


def one_edit(number, kind, args, seeds, blocks, kinds):
    rng = random.Random(args.seed * 1_000_003 + KINDS.index(kind) * 100_000 + number)
    source = fuzz.seed_of(kind, seeds)
    with open(source, "rb") as f:
        original = f.read()
    data, edit = make_edit(original, blocks[kind], rng)
    case_dir = os.path.join(args.work, "cases", f"{kind}-{number}")
    os.makedirs(case_dir)
    target = os.path.join(case_dir, os.path.basename(source).replace(".", f"-e{number}.", 1))
    results = []
    for name, template, allowed in kinds[kind]:
        with open(target, "wb") as f:  # afresh for each reader: sg-train --resume writes its file
            f.write(data)
        argv = [a.replace("{F}", target) for a in template]
        outcome, detail, seconds = fuzz.run_reader(name, argv, allowed, target, args.timeout, case_dir)
        result = {"kind": kind, "edit": number, "reader": name, "outcome": classify(outcome), "detail": detail,
                  "seconds": round(seconds, 2), **edit}
        if result["outcome"] in ("crash", "hang", "internal", "other"):
            keep = os.path.join(args.work, "failures", f"{kind}-{number}")
            os.makedirs(keep, exist_ok=True)
            kept = os.path.join(keep, os.path.basename(target))
            with open(kept, "wb") as f:
                f.write(data)
            result["command"] = argv[0] + "".join(" " + a.replace(target, kept) for a in argv[1:])
            result["argv"] = [a.replace(target, kept) for a in argv]
            result["cwd"] = keep
        results.append(result)
    shutil.rmtree(case_dir, ignore_errors=True)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bin_dir")
    parser.add_argument("work")
    parser.add_argument("--edits", type=int, default=100, help="edits per kind")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated, of " + ",".join(KINDS))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--blocks", default="",
                        help="edit only these blocks, comma-separated: superblock, OHDR, OCHK, EAHD, EAIB, ... (default: all)")
    parser.add_argument("--backtraces", type=int, default=40,
                        help="gdb backtraces of the first crash or hang of each (kind, field, reader), at most this many")
    args = parser.parse_args()
    chosen = [k for k in args.kinds.split(",") if k]
    unknown = [k for k in chosen if k not in KINDS]
    if unknown:
        sys.exit(f"h5_header_edit.py: unknown kinds {unknown}; known: {KINDS}")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(os.path.join(args.work, "cases"))
    start = time.monotonic()
    bin_dir = os.path.abspath(args.bin_dir)
    seeds = fuzz.make_seeds(bin_dir, os.path.join(args.work, "seeds"), python_ok=False)
    print(f"h5_header_edit: seed inputs made in {time.monotonic() - start:.1f} s", flush=True)
    kinds = fuzz.readers(bin_dir, seeds, os.path.join(args.work, "cases"))
    # sg-eval refuses any token file but the run's own by its SHA-256, after reading it: so that an
    # edit is judged by the token file's reader, not by that check, it is told to allow others.
    kinds["tokens"] = [(name, argv + ["--allow-other-tokens"] if name == "sg-eval" else argv, allowed)
                       for name, argv, allowed in kinds["tokens"]]
    blocks = {}
    for kind in chosen:
        with open(fuzz.seed_of(kind, seeds), "rb") as f:
            data = f.read()
        blocks[kind] = metadata_blocks(data)
        if args.blocks:
            blocks[kind] = [b for b in blocks[kind] if b.kind in args.blocks.split(",")]
            if not blocks[kind]:
                sys.exit(f"h5_header_edit.py: {kind} has none of the blocks {args.blocks}")
        found = {}
        for block in blocks[kind]:
            found[block.kind] = found.get(block.kind, 0) + 1
        # Every block kept passed lookup3 on its stored checksum: the check of this implementation.
        if not args.blocks and not found.get("OHDR"):
            sys.exit(f"h5_header_edit.py: no object header of {kind} passed the checksum: lookup3 or the parser is wrong")
        print(f"h5_header_edit: {kind}: " + ", ".join(f"{n} {k}" for k, n in found.items()) +
              f", {sum(len(b.messages) for b in blocks[kind])} messages; every stored checksum reproduced", flush=True)
    jobs = [(n, kind) for n in range(args.edits) for kind in chosen]
    counts, failures = {}, []
    with open(os.path.join(args.work, "results.jsonl"), "w") as log, \
            concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as executor:
        futures = [executor.submit(one_edit, n, kind, args, seeds, blocks, kinds) for n, kind in jobs]
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            for result in future.result():
                log.write(json.dumps(result) + "\n")
                key = (result["kind"], result["outcome"])
                counts[key] = counts.get(key, 0) + 1
                if result["outcome"] in ("crash", "hang", "internal"):
                    failures.append(result)
            log.flush()
            if done % 100 == 0:
                print(f"h5_header_edit: {done}/{len(jobs)} edits, {len(failures)} crashes, hangs or internal errors, "
                      f"{time.monotonic() - start:.0f} s", flush=True)
    # Backtraces after the campaign, one at a time: the first crash or hang of each (kind, field,
    # reader, outcome), at most --backtraces of them.
    traced = set()
    for r in sorted(failures, key=lambda r: (r["kind"], r["edit"])):
        key = (r["kind"], r["field"], r["reader"], r["outcome"])
        if r["outcome"] not in ("crash", "hang") or key in traced or len(traced) >= args.backtraces:
            continue
        traced.add(key)
        memory = fuzz.MEMORY_CORE if os.path.basename(r["argv"][0]) in fuzz.CORE_TOOLS else fuzz.MEMORY_TORCH
        try:
            r["backtrace"] = backtrace(r["argv"], r["cwd"], memory, r["outcome"] == "hang", args.timeout)
        except subprocess.TimeoutExpired:
            r["backtrace"] = "(gdb timed out)"
        with open(os.path.join(r["cwd"], f"backtrace-{r['reader'].split()[0]}.txt"), "w") as f:
            f.write(r["command"] + "\n" + r["backtrace"] + "\n")
    with open(os.path.join(args.work, "failures.json"), "w") as f:
        json.dump(failures, f, indent=1)
    print(f"h5_header_edit: {len(jobs)} edits, {sum(counts.values())} reader runs in {time.monotonic() - start:.0f} s "
          f"(seed {args.seed})")
    for kind in chosen:
        print(f"  {kind:10s} " + "  ".join(f"{o} {counts.get((kind, o), 0)}" for o in OUTCOMES))
    fields = {}
    for r in failures:
        key = (r["kind"], r["field"], r["outcome"])
        fields[key] = fields.get(key, 0) + 1
    for (kind, field, outcome), count in sorted(fields.items()):
        print(f"  {outcome:8s} {kind:10s} {field:40s} {count} runs")
    for r in sorted(failures, key=lambda r: (r["kind"], r["edit"])):
        print(f"{r['outcome'].upper()} {r['kind']} edit {r['edit']} ({r['field']} {r['old']} -> {r['new']} in "
              f"{r['block']}): {r['reader']}: {r['detail'][:120]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
