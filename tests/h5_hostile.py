#!/usr/bin/env python3
"""h5_hostile.py — rewrites a sinkgate HDF5 file with h5py to use what sinkgate's writers never write.

Each edit keeps the file a valid HDF5 file that libhdf5 opens; a sinkgate reader must refuse every
one of them (InputError, exit 3, naming the file and the feature), never follow it, hang or crash:

  external-link      a dataset replaced by an external link to a copy of the file (another file's data)
  external-link-fifo a dataset replaced by an external link to a FIFO (following it blocks for ever)
  soft-link          a dataset replaced by a soft link to another dataset of the file
  soft-link-dangling a dataset replaced by a soft link to nowhere
  external-storage   a dataset's raw data moved to another file (h5py's external=)
  external-fifo      a dataset's raw data declared in a FIFO
  external-zero      a dataset's raw data declared in /dev/zero
  virtual            a dataset replaced by a virtual dataset mapping a copy of the file's dataset
  sparse-extend      a 1-D dataset made chunked and resizable and resized to 10^12 elements
  sparse-hole        a dataset rewritten chunked with one chunk never written (reads as fill values)
  gzip               a dataset rewritten with the gzip filter
  committed-type     a committed (named) datatype added to the root group
  compound-attribute an attribute of a compound type added to a dataset
  rank-9             a dataset of nine dimensions added to the root group
  zero-chunk         a whole stored chunk of a dataset and its Fletcher32 checksum overwritten by zeros
                     (a lost write: Fletcher32 of zeros is zero, so the library passes it)

and one edit that is no attack: no-checksum removes every dataset's sg_crc32c attribute and every
chunk table (the `*_chunk_crc32c` dataset beside an extendable one), making the file one written
before sinkgate stored checksums (which readers must still read).

Usage: h5_hostile.py EDIT IN OUT [--dataset PATH] [--seed N]
  Without --dataset a dataset is chosen by the seed among the file's (zero-chunk: among those with a
  stored chunk). Side files (the FIFO, the external data, the linked copy) go beside OUT, named OUT.*.
  Prints the dataset edited.
"""
import argparse
import os
import random
import shutil
import sys

import numpy as np

EDITS = ["external-link", "external-link-fifo", "soft-link", "soft-link-dangling", "external-storage",
         "external-fifo", "external-zero", "virtual", "sparse-extend", "sparse-hole", "gzip", "committed-type",
         "compound-attribute", "rank-9", "zero-chunk"]
HARMLESS = ["no-checksum"]


def datasets(f, h5py):
    found = []
    f.visititems(lambda name, obj: found.append("/" + name) if isinstance(obj, h5py.Dataset) else None)
    return found


def stored_chunks(f, path):
    """[(offset, size)] of the dataset's stored chunks (contiguous: its one block)."""
    d = f[path]
    if d.chunks is None:
        offset = d.id.get_offset()
        return [] if offset is None or d.id.get_storage_size() == 0 else [(offset, d.id.get_storage_size())]
    return [(info.byte_offset, info.size) for info in (d.id.get_chunk_info(i) for i in range(d.id.get_num_chunks()))]


def nonzero_chunks(f, path, source):
    """The stored chunks of `path` not already all zeros (zeroing those would change nothing)."""
    found = []
    with open(source, "rb") as raw:
        for offset, size in stored_chunks(f, path):
            raw.seek(offset)
            if raw.read(size).strip(b"\0"):
                found.append((offset, size))
    return found


def replace(f, path, make):
    """Deletes dataset `path` and makes a new object there with make(group, name, data); attributes carried over."""
    d = f[path]
    data, attrs = d[()], dict(d.attrs)
    parent, name = path.rsplit("/", 1)
    group = f[parent or "/"]
    del group[name]
    new = make(group, name, data)
    if new is not None:
        for key, value in attrs.items():
            new.attrs[key] = value


def edit(kind, source, out, dataset=None, seed=0):
    import h5py
    rng = random.Random(seed)
    shutil.copyfile(source, out)
    side = lambda what: out + "." + what
    with h5py.File(out, "r+") as f:
        all_datasets = datasets(f, h5py)
        if kind == "zero-chunk":
            candidates = [p for p in all_datasets if nonzero_chunks(f, p, source)]
        elif kind in ("sparse-extend",):
            candidates = [p for p in all_datasets if f[p].ndim == 1 and f[p].size > 0 and f[p].dtype.kind != "S"]
        elif kind in ("sparse-hole",):
            candidates = [p for p in all_datasets if f[p].ndim >= 1 and f[p].shape[0] >= 2]
        else:
            candidates = [p for p in all_datasets if f[p].ndim >= 1]
        if dataset is None:
            if not candidates:
                raise SystemExit(f"h5_hostile.py: {source} has no dataset for {kind}")
            dataset = rng.choice(sorted(candidates))
        d = f[dataset]
        if kind == "external-link":
            shutil.copyfile(source, side("linked.h5"))
            replace(f, dataset, lambda g, n, x: g.__setitem__(n, h5py.ExternalLink(os.path.basename(side("linked.h5")), dataset)))
        elif kind == "external-link-fifo":
            if not os.path.exists(side("fifo")):
                os.mkfifo(side("fifo"))
            replace(f, dataset, lambda g, n, x: g.__setitem__(n, h5py.ExternalLink(side("fifo"), dataset)))
        elif kind == "soft-link":
            others = [p for p in all_datasets if p != dataset] or ["/nowhere"]
            target = rng.choice(sorted(others))
            replace(f, dataset, lambda g, n, x: g.__setitem__(n, h5py.SoftLink(target)))
        elif kind == "soft-link-dangling":
            replace(f, dataset, lambda g, n, x: g.__setitem__(n, h5py.SoftLink("/no/such/object")))
        elif kind in ("external-storage", "external-fifo", "external-zero"):
            def make(g, n, x):
                x = np.ascontiguousarray(x)
                size = max(x.nbytes, 1)
                if kind == "external-storage":
                    target = side("raw")
                    with open(target, "wb") as raw:
                        raw.write(x.tobytes())
                elif kind == "external-fifo":
                    target = side("fifo")
                    if not os.path.exists(target):
                        os.mkfifo(target)
                else:
                    target = "/dev/zero"
                return g.create_dataset(n, shape=x.shape, dtype=x.dtype, external=[(target, 0, size)])
            replace(f, dataset, make)
        elif kind == "virtual":
            copy = side("source.h5")
            with h5py.File(copy, "w") as other:
                other[dataset.lstrip("/")] = d[()]
            x = d[()]
            layout = h5py.VirtualLayout(shape=x.shape, dtype=x.dtype)
            layout[...] = h5py.VirtualSource(os.path.basename(copy), dataset, shape=x.shape)
            replace(f, dataset, lambda g, n, x: g.create_virtual_dataset(n, layout))
        elif kind == "sparse-extend":
            def make(g, n, x):
                new = g.create_dataset(n, data=x, chunks=(max(1, min(len(x), 1024)),), maxshape=(None,), fletcher32=True)
                new.resize((10**12,))
                return new
            replace(f, dataset, make)
        elif kind == "sparse-hole":
            def make(g, n, x):
                rows = x.shape[0]
                new = g.create_dataset(n, shape=x.shape, dtype=x.dtype, chunks=(1,) + x.shape[1:], fletcher32=True)
                keep = rng.randrange(rows)
                for r in range(rows):
                    if r != keep:
                        new[r] = x[r]
                return new
            replace(f, dataset, make)
        elif kind == "gzip":
            replace(f, dataset, lambda g, n, x: g.create_dataset(n, data=x, compression="gzip"))
        elif kind == "committed-type":
            f["sg_committed_type"] = np.dtype("<f8")
            dataset = "/sg_committed_type"
        elif kind == "compound-attribute":
            d.attrs["sg_compound"] = np.array((1, 2.0), dtype=[("a", "<i4"), ("b", "<f8")])
        elif kind == "rank-9":
            f.create_dataset("sg_rank9", data=np.zeros((1,) * 9, dtype="<f4"))
            dataset = "/sg_rank9"
        elif kind == "no-checksum":
            for path in all_datasets:
                if path.endswith("_chunk_crc32c") and path[: -len("_chunk_crc32c")] in all_datasets:
                    del f[path]
                elif "sg_crc32c" in f[path].attrs:
                    del f[path].attrs["sg_crc32c"]
        elif kind == "zero-chunk":
            chunks = nonzero_chunks(f, dataset, source)
            if not chunks:
                raise SystemExit(f"h5_hostile.py: {dataset} of {source} has no stored chunk that is not zeros already")
            offset, size = rng.choice(chunks)
        else:
            raise SystemExit(f"h5_hostile.py: unknown edit {kind!r}; known: {', '.join(EDITS)}")
    if kind == "zero-chunk":
        with open(out, "r+b") as raw:
            raw.seek(offset)
            raw.write(b"\0" * size)
    return dataset


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("edit", choices=EDITS + HARMLESS)
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--dataset")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(edit(args.edit, args.input, args.output, args.dataset, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
