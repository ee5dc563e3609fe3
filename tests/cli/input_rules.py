"""input_rules.py BIN VOCAB — the rules every input and output of the core tools meets
(docs/guarantees.md), each checked from the command line:

  - an HDF5 input that is a FIFO with no writer is refused by name at once (exit 3), never waited on;
  - a corpus folder: a cycle of symbolic links is exit 3 naming it; a dangling link, a FIFO and a
    socket in it are skipped with a warning that says why, once; every file in it, read or skipped
    (HDF5, Parquet, binary, a FIFO), is refused as the output; a link to a folder in it is
    followed, and a cycle through one is exit 3 naming the link;
  - a file written with checksums whose one dataset lost its sg_crc32c is refused naming the file
    and the dataset;
  - an output that is a file of an input folder (a vocabulary folder's vocab.json beside its
    tokenizer.json) is refused, even with --force;
  - stdout on a full device (/dev/full), and a full temporary folder for stdin's copy, are exit 4
    with "no space left on device";
  - output names of 250 to 255 bytes are written;
  - sg-pairdiff: an arm whose every value is missing is named as such; an infinite value is exit 3;
  - a corpus too small for its validation split is named in the error.
Prints "input rules: ok" when every check passes.
"""
import os
import socket
import subprocess
import sys
import tempfile

import h5py

BIN, VOCAB = sys.argv[1], sys.argv[2]
failures = []


def tool(name, *args, stdout=subprocess.PIPE, stdin=None, env=None, timeout=60):
    try:
        done = subprocess.run([os.path.join(BIN, name), *args], stdout=stdout, stderr=subprocess.PIPE, stdin=stdin,
                              env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"(still running after {timeout} s)"
    return done.returncode, done.stderr.decode(errors="replace")


def check(what, ok, detail=""):
    print(("ok: " if ok else "FAIL: ") + what + ("" if ok else f"\n  {detail}"))
    if not ok:
        failures.append(what)


work = tempfile.mkdtemp(prefix="sg-input-rules-")
os.chdir(work)
with open("ref.csv", "w") as f:
    f.write("tier,arm,seed,val_loss\nA,baseline,0,1.0\nA,baseline,1,2.0\nA,baseline,2,3.0\n")
with open("arm.csv", "w") as f:
    f.write("tier,arm,seed,val_loss\nA,x,0,0.9\nA,x,1,1.7\nA,x,2,2.9\n")
with open("corpus.txt", "w") as f:
    f.write("Hello world. " * 50)

# An HDF5 input that is a FIFO nobody writes to.
os.mkfifo("table.h5")
code, err = tool("sg-tabulate", "table.h5", timeout=20)
check("a FIFO with no writer as an input is refused by name, at once",
      code == 3 and "table.h5" in err and "no writer" in err, f"exit {code}: {err}")
os.remove("table.h5")

# A corpus folder with a cycle of symbolic links.
os.makedirs("cycle")
with open("cycle/a.txt", "w") as f:
    f.write("Some text. " * 20)
os.symlink("l2", "cycle/l1")
os.symlink("l1", "cycle/l2")
code, err = tool("sg-tokenize", "cycle", "--vocab", VOCAB, "-o", "cycle.h5")
check("a cycle of links in a corpus folder is exit 3 naming it",
      code == 3 and "cycle/l" in err and "symbolic links" in err, f"exit {code}: {err}")

# A corpus folder with members that are no regular files.
os.makedirs("odd")
with open("odd/a.txt", "w") as f:
    f.write("Some text. " * 20)
with open("odd/b.h5", "wb") as f:
    f.write(b"\x89HDF\r\n\x1a\n" + bytes(100))
os.symlink("nowhere", "odd/dangling")
os.mkfifo("odd/pipe")
server = socket.socket(socket.AF_UNIX)
server.bind("odd/sock")
code, err = tool("sg-tokenize", "odd", "--vocab", VOCAB, "-o", "odd.h5")
check("a corpus folder's dangling link, FIFO and socket are skipped, each with why",
      code == 0 and "odd/dangling: skipped: a symbolic link to nothing" in err
      and "odd/pipe: skipped: a FIFO" in err and "odd/sock: skipped: a socket" in err, f"exit {code}: {err}")
check("each skipped member of a corpus folder is warned about once",
      all(err.count(f"odd/{name}: skipped") == 1 for name in ("dangling", "pipe", "sock"))
      and err.count("skipped 1 of 2 files, not text: an HDF5 file (1): odd/b.h5") == 1, err)
server.close()

# A folder's files are inputs whether read or skipped: none is an output, even with --force.
os.makedirs("corp")
members = {"a.txt": b"Some text. " * 20, "x.h5": b"\x89HDF\r\n\x1a\n" + bytes(100),
           "d.parquet": b"PAR1" + bytes(100), "b.bin": b"binary\0data"}
for name, data in members.items():
    with open(f"corp/{name}", "wb") as f:
        f.write(data)
os.mkfifo("corp/pipe")
for name in ("x.h5", "d.parquet", "b.bin", "pipe", "a.txt"):
    code, err = tool("sg-tokenize", "corp", "--vocab", VOCAB, "-o", f"corp/{name}", "--force")
    kept = name == "pipe" or open(f"corp/{name}", "rb").read() == members[name]
    check(f"a corpus folder's {name} as the output is refused, even with --force",
          code == 4 and f"corp/{name}" in err and kept, f"exit {code}, kept {kept}: {err}")

# A link to a folder inside a corpus folder is followed; a cycle through one is exit 3 naming it.
os.makedirs("linking")
os.makedirs("elsewhere")
with open("linking/a.txt", "w") as f:
    f.write("First document. " * 20)
with open("elsewhere/b.txt", "w") as f:
    f.write("Second document. " * 20)
os.symlink("../elsewhere", "linking/more")
code, err = tool("sg-tokenize", "linking", "--vocab", VOCAB, "--val-tokens", "10", "-o", "linking.h5")
check("a link to a folder in a corpus folder is followed: its text is read",
      code == 0 and "sg-tokenize: 2 documents" in err, f"exit {code}: {err}")
os.makedirs("loop/sub")
with open("loop/sub/a.txt", "w") as f:
    f.write("Some text. " * 20)
os.symlink("..", "loop/sub/up")
code, err = tool("sg-tokenize", "loop", "--vocab", VOCAB, "-o", "loop.h5")
check("a cycle through a folder link in a corpus folder is exit 3 naming the link",
      code == 3 and "loop/sub/up" in err and "cycle of folder links" in err and not os.path.exists("loop.h5"),
      f"exit {code}: {err}")

# A dataset of a file written with checksums that lost its sg_crc32c.
code, err = tool("sg-tabulate", "ref.csv", "--format", "h5", "-o", "table.h5")
assert code == 0, err
code, err = tool("sg-tabulate", "table.h5", "--format", "csv")
check("a fresh result table reads", code == 0, err)
with h5py.File("table.h5", "r+") as f:
    names = []
    f.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) and "sg_crc32c" in obj.attrs else None)
    assert len(names) > 1, names
    del f[names[-1]].attrs["sg_crc32c"]
code, err = tool("sg-tabulate", "table.h5", "--format", "csv")
check("a dataset that lost its sg_crc32c, in a file written with them, is refused naming file and dataset",
      code == 3 and "table.h5" in err and names[-1] in err and "sg_crc32c" in err, f"exit {code}: {err}")

# An exit-3 message names its file: a corpus too small for the validation split.
code, err = tool("sg-tokenize", "corpus.txt", "--vocab", VOCAB, "--val-tokens", "100000", "-o", "small.h5")
check("a corpus too small for its validation split is exit 3 naming the corpus",
      code == 3 and "corpus.txt: the corpus has" in err, f"exit {code}: {err}")

# An output that is a file of an input folder.
os.makedirs("vocab")
for name in ("tokenizer.json", "vocab.json", "merges.txt"):
    with open(f"vocab/{name}", "w") as f:
        f.write(f"the {name} of the folder\n")
code, err = tool("sg-tokenize", "corpus.txt", "--vocab", "vocab", "-o", "vocab/vocab.json", "--force")
with open("vocab/vocab.json") as f:
    kept = f.read() == "the vocab.json of the folder\n"
check("an output that is a file of an input folder is refused, even with --force",
      code == 4 and "vocab/vocab.json" in err and kept, f"exit {code}, kept {kept}: {err}")

# Standard output on a full device.
with open("/dev/full", "wb") as full:
    for name, args in (("sg-tabulate (HDF5)", ["sg-tabulate", "ref.csv", "--format", "h5"]),
                       ("sg-tabulate (Markdown)", ["sg-tabulate", "ref.csv"]),
                       ("sg-pairdiff", ["sg-pairdiff", "ref.csv", "arm.csv"])):
        code, err = tool(*args, stdout=full)
        check(f"{name} > /dev/full is exit 4 with the reason",
              code == 4 and "no space left on device" in err.lower(), f"exit {code}: {err}")

# A full temporary folder, where stdin is copied (a 64 KB tmpfs, where the test can mount one).
full_tmp = tempfile.mkdtemp(prefix="sg-full-tmp-")
if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", full_tmp], capture_output=True).returncode == 0:
    try:
        subprocess.run(f"head -c 200000 /dev/zero > {full_tmp}/fill", shell=True, stderr=subprocess.DEVNULL)
        with open("ref.csv", "rb") as table:
            code, err = tool("sg-tabulate", "-", stdin=table, env=dict(os.environ, TMPDIR=full_tmp))
        check("sg-tabulate - with a full temporary folder is exit 4 with the reason",
              code == 4 and "no space left on device" in err.lower() and "TMPDIR" in err, f"exit {code}: {err}")
    finally:
        subprocess.run(["umount", full_tmp])
else:
    print("skipped: sg-tabulate - with a full temporary folder (cannot mount a tmpfs here)")
os.rmdir(full_tmp)

# Output names of 250 to 255 bytes.
for length in (250, 255):
    name = "t" * (length - 4) + ".csv"
    code, err = tool("sg-tabulate", "ref.csv", "--format", "csv", "-o", name)
    check(f"an output name of {length} bytes is written", code == 0 and os.path.exists(name), f"exit {code}: {err}")
    code, err = tool("sg-tabulate", "ref.csv", "--format", "csv", "-o", name, "--force")
    check(f"an output name of {length} bytes is replaced with --force", code == 0, f"exit {code}: {err}")
    leftovers = [n for n in os.listdir(".") if ".tmp." in n]
    check(f"no temporary left beside the {length}-byte name", not leftovers, str(leftovers))

# sg-pairdiff: an arm with no value at all, and an infinite value.
with open("missing.csv", "w") as f:
    f.write("tier,arm,seed,val_loss\nA,x,0,\nA,x,1,\nA,y,0,1.5\n")
code, err = tool("sg-pairdiff", "ref.csv", "missing.csv", "-o", "missing.h5")
check("an arm whose every value is missing is named as such (no empty seed list)",
      code == 3 and "x: no seed with a value" in err and "seed ;" not in err, f"exit {code}: {err}")
with open("infinite.csv", "w") as f:
    f.write("tier,arm,seed,val_loss\nA,x,0,0.9\nA,x,1,inf\nA,x,2,2.9\n")
code, err = tool("sg-pairdiff", "ref.csv", "infinite.csv", "-o", "infinite.h5")
check("sg-pairdiff refuses an infinite value, naming its arm and seed",
      code == 3 and "x, seed 1" in err and "inf" in err, f"exit {code}: {err}")

subprocess.run(["rm", "-rf", work])
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("input rules: ok")
