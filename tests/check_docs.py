#!/usr/bin/env python3
"""check_docs.py — the manual's links resolve, its figures agree with the measurements log, its
option lists with the tools' tables, and the README stays the front door.

Checks README.md, CHANGELOG.md and every docs/**/*.md of the source tree:
  - every relative Markdown link, [text](path) or [text](path#anchor) (and a bare (#anchor) into
    the same page), names a file or folder that exists; where it has an anchor and the target is
    a Markdown file, the anchor is one of that file's headings, slugged as GitHub slugs them
    (lowercase; punctuation dropped except '-', '_' and spaces; spaces to '-'; a repeated
    heading gets -1, -2, …). Links inside code blocks and inline code are not links;
  - README.md is at most 25,000 bytes, and holds the two commands CI runs, verbatim;
  - no page cites an issue number ("issue 19"): the manual is reference, history goes to
    CHANGELOG.md;
  - no docs page is over 15,000 bytes, except the measurements log (docs/measurements.md);
  - the main job's and the test suite's times quoted anywhere agree with the newest row of the
    log's tables "The main job" and "The test suite" (the first row under each heading): a link
    into one of those tables whose text is a time ("9 min 47 s", "about 10 minutes") must give
    that row's time, exactly or rounded to whole minutes; and a line that speaks of the main job
    or the test suite may quote a time only inside such a link;
  - CHANGELOG.md has at most one section of each kind (Added, Changed, …) per release;
  - every variable the make files set with `?=` (Makefile.experiments, pipelines/*.mk) is named
    in docs/make.md, in backticks, by itself or by a family `PREFIX_<tier>` / `PREFIX_*`; and
    every variable the first column of its tables names is one the make files set or read;
  - every `sh` code block that writes a file (`-o PATH`, `> PATH`, `>> PATH`, `tee PATH`) into a
    folder creates that folder first (`mkdir -p` of it or a folder under it, earlier in the block)
    or writes into a folder the source tree has (build/ counts), since the tools refuse a missing
    folder;
  - every option list of the pages equals the table it lists, as the tools' tables give it:
    tests/cli/option_tables prints them from lib/ (the tables every --help list is tested equal
    to) and `sg-tabulate --list-formats` the formats it writes (`tabulate-formats`), both from
    --bin DIR (default build/bin; where they are missing, the lists are left unchecked).
    The convention: a list is marked in the page by two HTML comments around its names,
        <!-- list: TABLE -->`name`, `name`, …<!-- /list -->
    (TABLE: tiers, tabulate-formats, junk, cutoffs, probes, tasks, zero-options, filters,
    output-gates, paper-arms, …); between them every name in backticks is in TABLE and every
    name of TABLE is there (an arm axis's list may add `none`). A paragraph or table row that
    names in backticks most of a table's names (three or more, half or more) but not all,
    outside a marked list, fails too: mark it as the list it is, or <!-- subset: TABLE --> where
    it names only some on purpose. A marker that begins a line stands alone on it (Markdown
    prints the rest of a line that begins with an HTML comment raw). The option tables of the
    tools' own pages (docs/tools/*.md) are held to the same tables by tests/cli/option_lists.cmake;
  - every time or speed ratio quoted in README.md and docs/, in prose and in code blocks' comments
    ("34 minutes", "2.3 s", "6 h", "3.3×", "1.69–1.85 times as fast", "a factor of two"), is in
    the measurements log (the log and CHANGELOG.md are not held to this): the same
    number with the same unit somewhere in it, or in the log's section that the figure's own link
    names (a whole number of minutes may round a logged "M min S s"). What is not a measurement
    says so: the paper's own figures are listed in PAPER_FIGURES below with where the paper gives
    them, and their line says whose ("the paper's", "App. A"); settings and goals are listed in
    NOT_MEASURED with where they are set; estimates computed from a measurement follow an
    <!-- estimate --> marker (to the end of its paragraph or table) and say how they are computed;
  - docs/gpu.md's account of what has been verified on a GPU names every commit of the log's
    newest GPU rows (the "gpu_check.sh" table's newest date, the "Training throughput" run), so
    that a new GPU measurement cannot be logged without the page saying what it verified.
Plain Python 3, no third-party package. Prints what it checked; exits 1 naming every failure.

Usage: python3 tests/check_docs.py [--bin BIN_DIR] [SOURCE_DIR]
       (default: the folder above this script; BIN_DIR: SOURCE_DIR/build/bin)
"""
import os
import re
import sys

README_LIMIT = 25_000
PAGE_LIMIT = 15_000
LOG = "docs/measurements.md"
# The log's tables whose newest row every quoted figure must agree with: anchor -> what it times.
LOGGED_TIMES = {"the-main-job": "the main job", "the-test-suite": "the test suite"}
# A time as the manual writes it: "9 min 47 s", "10 min 0 s", "about 10 minutes", "75 s".
TIME = re.compile(r"(?:about )?(\d+) min(?:utes)?(?: (\d+) s)?|(\d+) s\b")
# A line speaking of the main job or of the test suite (not of "quick" in general).
SPEAKS_OF = {"the-main-job": re.compile(r"main job", re.IGNORECASE),
             "the-test-suite": re.compile(r"test suite|the suite(?:'s time| takes| took| runs in| ran in)", re.IGNORECASE)}
README_COMMANDS = [
    "./setup.sh && make -f Makefile.experiments -j 2 quick",
    "./setup.sh && ctest --test-dir build --output-on-failure -j 2",
]
ISSUE = re.compile(r"\bissue \d+", re.IGNORECASE)
# [text](target) with an optional "title"; images ![alt](src) too. Nested brackets in the text
# are rare in this manual; the text may hold backticks.
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")


def pages(root):
    """The Markdown files checked, relative to root, in a stable order."""
    found = [name for name in ("README.md", "CHANGELOG.md") if os.path.isfile(os.path.join(root, name))]
    docs = os.path.join(root, "docs")
    for folder, subfolders, files in os.walk(docs):
        subfolders.sort()
        for name in sorted(files):
            if name.endswith(".md"):
                found.append(os.path.relpath(os.path.join(folder, name), root))
    return found


def prose_lines(text, blank_code=True):
    """(line number, line) of the lines outside fenced code blocks; inline code blanked unless
    blank_code is false (a heading's inline code is part of its anchor)."""
    inside = None
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if fence:
            if inside is None:
                inside = fence.group(1)
            elif fence.group(1) == inside:
                inside = None
            continue
        if inside is None:
            yield number, INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line) if blank_code else line


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"<[^>]+>", "", heading)                        # inline HTML
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)         # links keep their text
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in "-_ ")  # drops punctuation, backticks, emphasis
    return text.replace(" ", "-")


def anchors(path, cache={}):
    """The anchors of a Markdown file's headings."""
    if path not in cache:
        seen, result = {}, set()
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for _, line in prose_lines(text, blank_code=False):
            match = re.match(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if not match:
                continue
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            result.add(base if count == 0 else f"{base}-{count}")
        for name in re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text):
            result.add(name)
        cache[path] = result
    return cache[path]


def log_times(root, problems):
    """The newest time of each table of LOGGED_TIMES in the measurements log, in seconds: the
    'time' column of the first row under the table's heading."""
    path = os.path.join(root, LOG)
    if not os.path.isfile(path):
        problems.append(f"{LOG}: missing")
        return {}
    with open(path, encoding="utf-8") as f:
        text = f.read()
    newest, heading, header = {}, None, None
    for _, line in prose_lines(text, blank_code=False):
        match = re.match(r"^##\s+(.*?)\s*$", line)
        if match:
            heading, header = slug(match.group(1)), None
            continue
        if heading not in LOGGED_TIMES or heading in newest or not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not all(re.fullmatch(r":?-+:?", cell) for cell in cells):
            if "time" not in header or len(cells) != len(header):
                problems.append(f"{LOG}: the table under #{heading} needs a 'time' column in every row")
                newest[heading] = None
                continue
            seconds = parse_time(cells[header.index("time")])
            if seconds is None:
                problems.append(f"{LOG}: #{heading}: the newest row's time '{cells[header.index('time')]}' does not parse")
            newest[heading] = seconds
    for anchor in LOGGED_TIMES:
        if anchor not in newest:
            problems.append(f"{LOG}: no table under a heading with the anchor #{anchor}")
    return {anchor: seconds for anchor, seconds in newest.items() if seconds is not None}


def parse_time(text):
    """Seconds of a time written as the manual writes it, or None."""
    match = TIME.fullmatch(text.strip())
    if not match:
        return None
    if match.group(3):
        return int(match.group(3))
    return int(match.group(1)) * 60 + int(match.group(2) or 0)


def agrees(quoted, seconds):
    """Whether a quoted time (text) agrees with the log's time: the same to the second when it
    gives seconds, else the same in whole minutes (rounded)."""
    match = TIME.fullmatch(quoted.strip())
    if not match:
        return False
    if match.group(3) or match.group(2):
        return parse_time(quoted) == seconds
    return int(match.group(1)) == round(seconds / 60)


def show(seconds):
    return f"{seconds // 60} min {seconds % 60} s (about {round(seconds / 60)} minutes)"


def check_times(page, text, newest, problems):
    """The main job's and the test suite's times quoted on one page against the log's newest rows;
    returns how many quotes were checked."""
    checked = 0
    for number, line in prose_lines(text):
        linked = []
        for match in LINK.finditer(line):
            path, _, anchor = match.group(1).partition("#")
            if not path.endswith("measurements.md") or anchor not in LOGGED_TIMES:
                continue
            linked.append(match.span())
            label = re.match(r"!?\[(.*)\]", match.group(0)).group(1)
            if not TIME.search(label) or anchor not in newest:
                continue
            checked += 1
            if not agrees(label, newest[anchor]):
                problems.append(f"{page}:{number}: '{label}' for {LOGGED_TIMES[anchor]}, where the newest row of "
                                f"{LOG}#{anchor} says {show(newest[anchor])}")
        outside = line
        for begin, end in reversed(linked):
            outside = outside[:begin] + " " * (end - begin) + outside[end:]
        for anchor, speaks in SPEAKS_OF.items():
            if not speaks.search(outside):
                continue
            stray = TIME.search(outside) or re.search(r"main job's \d+", outside)
            if stray:
                problems.append(f"{page}:{number}: a time ('{stray.group(0)}') beside {LOGGED_TIMES[anchor]} that does not "
                                f"come from the log: link it to {LOG}#{anchor}")
    return checked


def check_changelog(text, problems):
    """At most one section of each kind (### Added, …) per release (## [version])."""
    release, seen = None, set()
    for number, line in prose_lines(text, blank_code=False):
        if re.match(r"^##\s", line):
            release, seen = line[3:].strip(), set()
        elif re.match(r"^###\s", line) and release is not None:
            kind = line[4:].strip()
            if kind in seen:
                problems.append(f"CHANGELOG.md:{number}: a second '### {kind}' in {release}: one section of each kind "
                                "per release")
            seen.add(kind)


def check_links(root, page, text, problems):
    """Every relative link of one page; returns how many were checked."""
    checked = 0
    here = os.path.dirname(os.path.join(root, page))
    for number, line in prose_lines(text):
        for match in LINK.finditer(line):
            target = match.group(1)
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
                continue  # https:, mailto:, …: not a file of this tree
            checked += 1
            path, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(here, path)) if path else os.path.join(root, page)
            where = f"{page}:{number}: ({target})"
            if not os.path.exists(resolved):
                problems.append(f"{where}: no such file {os.path.relpath(resolved, root)}")
                continue
            if anchor and resolved.endswith(".md") and os.path.isfile(resolved):
                if anchor not in anchors(resolved):
                    problems.append(f"{where}: {os.path.relpath(resolved, root)} has no heading with the anchor #{anchor}")
    return checked


GPU_PAGE = "docs/gpu.md"
GPU_STATUS = "6. What has been verified on a GPU"
COMMIT = re.compile(r"\b[0-9a-f]{7,40}\b")


def section(text, heading):
    """The lines under a heading (any level) up to the next heading of the same or a higher level."""
    lines, inside, level = [], False, 0
    for line in text.splitlines():
        match = re.match(r"^(#+)\s+(.*?)\s*$", line)
        if match and inside and len(match.group(1)) <= level:
            break
        if match and match.group(2) == heading:
            inside, level = True, len(match.group(1))
            continue
        if inside:
            lines.append(line)
    return "\n".join(lines)


def check_gpu_status(root, problems):
    """The commits of the log's newest GPU measurements appear in docs/gpu.md's verification section."""
    log_path, page_path = os.path.join(root, LOG), os.path.join(root, GPU_PAGE)
    if not (os.path.isfile(log_path) and os.path.isfile(page_path)):
        return 0
    with open(log_path, encoding="utf-8") as f:
        log = f.read()
    with open(page_path, encoding="utf-8") as f:
        status = section(f.read(), GPU_STATUS)
    if not status:
        problems.append(f"{GPU_PAGE}: no section '{GPU_STATUS}'")
        return 0
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in section(log, "gpu_check.sh").splitlines()
            if line.startswith("|") and re.match(r"\|\s*\d{4}-\d{2}-\d{2}", line)]
    newest = max((row[0] for row in rows), default=None)
    commits = {c for row in rows if row[0] == newest for c in COMMIT.findall(row[2])}
    commits |= set(COMMIT.findall(section(log, "Training throughput").split("\n\n")[0]))
    for commit in sorted(commits):
        if commit not in status:
            problems.append(f"{GPU_PAGE}: '{GPU_STATUS}' does not name commit {commit}, which the log's newest GPU "
                            "measurements ran: say what it verified and what changed since")
    return len(commits)


MAKE_VARIABLE = re.compile(r"^([A-Z][A-Z0-9_]*)\s*\?=")
QUOTED_VARIABLE = re.compile(r"`([A-Z][A-Z0-9_]*)(<[a-z]+>|\*)?`")


def check_make_variables(root, problems):
    """Every `NAME ?=` of the make files is named in docs/make.md; returns how many were checked."""
    files = ["Makefile.experiments"] + sorted(
        os.path.join("pipelines", name) for name in os.listdir(os.path.join(root, "pipelines")) if name.endswith(".mk"))
    variables, known = {}, set()
    for name in files:
        path = os.path.join(root, name)
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as f:
            for line in f:
                match = MAKE_VARIABLE.match(line)
                if match:
                    variables.setdefault(match.group(1), name)
                known.update(re.findall(r"^\s*(?:export\s+|override\s+)?([A-Z][A-Z0-9_]*)\s*[?:+]?=", line))
                known.update(re.findall(r"\$[({]([A-Z][A-Z0-9_]*)", line))
    with open(os.path.join(root, "docs", "make.md"), encoding="utf-8") as f:
        page = f.read()
    named = {m.group(1) for m in QUOTED_VARIABLE.finditer(page) if not m.group(2)}
    families = {m.group(1) for m in QUOTED_VARIABLE.finditer(page) if m.group(2)}
    for variable, where in variables.items():
        if variable not in named and not any(variable.startswith(f) and variable != f for f in families):
            problems.append(f"docs/make.md: the variable {variable} ({where}) is not in its table")
    # And the other way: a variable the table's first column names is one the make files set or read.
    for line in page.splitlines():
        if not line.startswith("| `"):
            continue
        for match in QUOTED_VARIABLE.finditer(line.split("|")[1]):
            variable, family = match.groups()
            if family and not any(k.startswith(variable) for k in known):
                problems.append(f"docs/make.md: the family {variable}{family} matches no variable of the make files")
            elif not family and variable not in known:
                problems.append(f"docs/make.md: the variable {variable} is one no make file sets or reads")
    return len(variables)


SH_FENCE = re.compile(r"^\s*```(sh|bash|shell)\s*$")
OUTPUT = re.compile(r"(?:^|\s)(?:-o|--output)[ =]([^\s;|&)]+)|(?<![0-9&>-])>>?\s*([^\s;|&)>]+)|\btee\s+(?:-a\s+)?([^\s;|&)]+)")
MKDIR = re.compile(r"\bmkdir\s+-p\s+([^;|&]+)")


def check_output_folders(root, page, text, problems):
    """Each sh block's `-o DIR/FILE`, `> DIR/FILE`, `>> DIR/FILE` and `tee DIR/FILE` has DIR made
    earlier in the block or present in the tree."""
    writes = 0
    inside, made, lines = False, set(), text.splitlines()
    for number, line in enumerate(lines, 1):
        if not inside:
            inside = bool(SH_FENCE.match(line))
            made = set()
            continue
        if FENCE.match(line):
            inside = False
            continue
        command = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
        for match in MKDIR.finditer(command):
            for folder in match.group(1).split():
                folder = folder.strip("'\"").rstrip("/")
                while folder and folder != ".":
                    made.add(folder)
                    folder = os.path.dirname(folder)
        for match in OUTPUT.finditer(command):
            target = next(group for group in match.groups() if group).strip("'\"")
            folder = os.path.dirname(target.rstrip("/"))
            if target == "-" or target.startswith(("&", "/dev/")) or not folder or "$" in target or target.startswith(("/tmp", "~", "<")):
                continue
            writes += 1
            top = folder.split("/")[0]
            if folder in made or os.path.isdir(os.path.join(root, folder)) or top == "build":
                continue
            problems.append(f"{page}:{number}: writes {target} into {folder}/, which the block does not create "
                            f"(add mkdir -p {folder} before it): the tools refuse a missing folder")
    return writes


# --- option lists --------------------------------------------------------------------------------
# A list of a table's names is marked in the page, around the names, by two HTML comments (which
# Markdown does not render):  <!-- list: junk -->`structured`, …, `key-own-direction`<!-- /list -->
# Between them, every name in backticks must be in the table and every name of the table must be
# there (order free; a list of an arm axis may also name `none`). TABLE is a table of
# load_tables: tests/cli/option_tables prints tiers, junk, cutoffs, probes, tasks, zero-options,
# filters, output-gates, paper-arms, …; `sg-tabulate --list-formats` gives tabulate-formats.
# A paragraph or table row that names in backticks most of a table's names (at least three, at least half) outside a
# marked list must be marked as the list it is, or marked <!-- subset: TABLE --> where it names
# only some of them on purpose, or names other things that share their names (make targets named
# like probes).
LIST_OPEN = re.compile(r"<!--\s*list:\s*([a-z0-9-]+)\s*-->")
LIST_CLOSE = re.compile(r"<!--\s*/list\s*-->")
SUBSET = re.compile(r"<!--\s*subset:\s*([a-z0-9-]+)\s*-->")
NAME = re.compile(r"`([^`\s]+)`")
# The arm axes' tables leave out "none", which a list of an axis may name.
AXES = ("zero-options", "filters", "output-gates")
# The tables an unmarked near-complete list is looked for in (the others are too short or their
# names too common in prose: log levels, cutoffs, tasks).
LIST_TABLES = ("tiers", "tabulate-formats", "junk", "probes", "zero-options", "filters", "output-gates", "paper-arms")


def load_tables(bin_dir, problems):
    """The option tables, as {table: [names]}: those that BIN/option_tables prints ("tiers: 10M 50M
    …"), and `tabulate-formats`, the formats sg-tabulate writes (BIN/sg-tabulate --list-formats). An
    executable that is not there gives no table."""
    import subprocess
    tables = {}
    for command, table in ((["option_tables"], None), (["sg-tabulate", "--list-formats"], "tabulate-formats")):
        executable = os.path.join(bin_dir, command[0])
        if not os.access(executable, os.X_OK):
            continue
        try:
            output = subprocess.run([executable] + command[1:], check=True, capture_output=True, text=True).stdout
        except (OSError, subprocess.CalledProcessError) as error:
            problems.append(f"{' '.join([executable] + command[1:])}: {error}")
            continue
        if table:
            tables[table] = output.split()
            continue
        for line in output.splitlines():
            name, _, names = line.partition(":")
            tables[name.strip()] = names.split()
    return tables


def paragraphs(text):
    """(first line number, text) of each prose paragraph, each table row on its own; code blocks left
    out, inline code kept."""
    block, start = [], None
    for number, line in prose_lines(text, blank_code=False):
        row = line.lstrip().startswith("|")
        if block and (not line.strip() or row or number != start + len(block)):
            yield start, "\n".join(block)  # a blank line, a table or a code block ends a paragraph
            block, start = [], None
        if row:
            yield number, line
        elif line.strip():
            start = number if start is None else start
            block.append(line)
    if block:
        yield start, "\n".join(block)


def check_lists(page, text, tables, problems, skipped):
    """The marked lists of one page against their tables, and no unmarked near-complete list;
    returns how many marked lists were checked."""
    checked = 0
    for number, line in prose_lines(text, blank_code=False):
        if re.match(r"^\s{0,3}<!--.*?-->\s*\S", line):
            problems.append(f"{page}:{number}: a line that begins with an HTML comment is an HTML block to Markdown, "
                            "which prints the rest of the line raw: put the marker on a line of its own or later in the line")
    for number, paragraph in paragraphs(text):
        rest, at = "", 0
        for match in LIST_OPEN.finditer(paragraph):
            if match.start() < at:
                continue
            close = LIST_CLOSE.search(paragraph, match.end())
            line = number + paragraph.count("\n", 0, match.start())
            if not close:
                problems.append(f"{page}:{line}: <!-- list: {match.group(1)} --> without <!-- /list --> in its paragraph")
                break
            rest += paragraph[at:match.start()]
            at = close.end()
            table = match.group(1)
            if table not in tables:
                skipped.add(table)
                continue
            checked += 1
            names = NAME.findall(paragraph[match.end():close.start()])
            for name in names:
                if name not in tables[table] and not (name == "none" and table in AXES):
                    problems.append(f"{page}:{line}: the list of {table} names `{name}`, which is not in the table "
                                    f"({', '.join(tables[table])})")
            for name in tables[table]:
                if name not in names:
                    problems.append(f"{page}:{line}: the list of {table} lacks `{name}` (the table: "
                                    f"{', '.join(tables[table])})")
        rest += paragraph[at:]
        subsets = set(SUBSET.findall(rest))
        named = set(NAME.findall(rest))
        for table in LIST_TABLES:
            if table not in tables or table in subsets:
                continue
            names = tables[table]
            found = [name for name in names if name in named]
            if len(found) >= 3 and 2 * len(found) >= len(names) and len(found) < len(names):
                missing = ", ".join(name for name in names if name not in named)
                problems.append(f"{page}:{number}: names {len(found)} of the {len(names)} {table} ({missing} not): mark "
                                f"it <!-- list: {table} -->…<!-- /list --> and complete it, or <!-- subset: {table} --> "
                                "where it names some on purpose")
    return checked


# --- quoted times and ratios ---------------------------------------------------------------------
# A time ("34 minutes", "about 8 min", "2.3 s", "6 h", "26 GPU-hours") or a speed ratio ("3.3×",
# "1.69–1.85 times as fast", "about 3.3 times torch::mm's rate", "a factor of two") in a page
# must be the log's: the same number with the same unit (min/minutes, s/seconds, h/hours, × and
# "times" alike; each end of a range) somewhere in docs/measurements.md, or in the section of the
# log that the figure's own link names; a whole number of minutes may also be a logged "M min S s"
# that rounds to it (the log may write a ratio "1.85x"). Not measurements, and so not held to the
# log: the paper's own figures, listed in PAPER_FIGURES with where the paper gives them (the line
# must say whose: "paper" or "App. X"); settings and goals, listed in NOT_MEASURED with where they
# are set; and estimates computed from a measurement, from an <!-- estimate --> marker to the end of
# its paragraph or table, whose text must say how they are computed.
UNITS = {"ms": "ms", "s": "s", "second": "s", "seconds": "s", "min": "min", "minute": "min", "minutes": "min",
         "h": "h", "hour": "h", "hours": "h", "GPU-hours": "GPU-h", "GPU-hour": "GPU-h"}
NUMBER = r"\d+(?:,\d{3})*(?:\.\d+)?"
TIME_FIGURE = re.compile(rf"(?<![\w.,×/-])({NUMBER})(?:\s?[–-]\s?({NUMBER}))? ?(?:(?:CPU|GPU) )?(GPU-hours?|ms|seconds?|s|minutes?|min|hours?|h)(?![\w-])")
RATIO_FIGURE = re.compile(rf"(?<![\w.,])({NUMBER})(?:\s?[–-]\s?({NUMBER}))?(?:×| times (?:as fast|faster|slower|as slow|(?:\S+ )?(?:rate|speed)))"
                          r"|a factor of (two|three|four|\d+(?:\.\d+)?)")
WORDS = {"two": "2", "three": "3", "four": "4"}
LOG_TIME = re.compile(r"(\d+) min (\d+) s")
COMPOUND_TIME = re.compile(r"(?<![\w.,])(\d+) ?min(?:utes?)? (\d+) ?s\b")
# The paper's own figures a page may quote, each with where the paper gives it.
PAPER_FIGURES = {
    ("10", "min"): "App. A, training details: a 10M run takes about ten minutes on one RTX 5090",
    ("48", "h"): "App. A, training details: a 350M run takes about 48 hours on one RTX 5090",
}
# Figures that are settings or goals, not measurements, each with where it is set.
NOT_MEASURED = {
    ("600", "s"): "sg-train --dist-timeout's default (lib/train/train.h: timeout_seconds)",
    ("5", "s"): "open_input's wait for a FIFO's writer (lib/base/input_file.h: kFifoWriterWaitMs)",
    ("15", "s"): "tests/fuzz.py --timeout's default, a reader run's time limit",
    ("20", "s"): "tests/h5_header_edit.py --timeout's default",
    ("540", "s"): "SG_DEVICE_BUDGET_S's default (pipelines/device/build_and_check.sh)",
    ("4", "×"): "the MLP's width over the model's (App. A); the GPU goal's speed-up (pipelines/GPU_COSTS.md)",
}
PAPER_LINE = re.compile(r"paper|App\. [A-H]\b")
ESTIMATE = "<!-- estimate -->"


def figures(line):
    """(text, [(number, unit)], span) of each time and ratio figure of a line; "M min S s" is one
    figure, in seconds."""
    found = []
    for match in COMPOUND_TIME.finditer(line):
        seconds = int(match.group(1)) * 60 + int(match.group(2))
        found.append((match.group(0), [(str(seconds), "s")], match.span()))
    for match in TIME_FIGURE.finditer(line):
        if any(begin <= match.start() < end for _, _, (begin, end) in found):
            continue
        unit = UNITS[match.group(3)]
        numbers = [match.group(1)] + ([match.group(2)] if match.group(2) else [])
        found.append((match.group(0), [(n.replace(",", ""), unit) for n in numbers], match.span()))
    for match in RATIO_FIGURE.finditer(line):
        if match.group(3):
            numbers = [WORDS.get(match.group(3), match.group(3))]
        else:
            numbers = [match.group(1)] + ([match.group(2)] if match.group(2) else [])
        found.append((match.group(0), [(n.replace(",", ""), "×") for n in numbers], match.span()))
    return found


def logged_figures(text):
    """The (number, unit) pairs a part of the log holds, and its 'M min S s' times in seconds."""
    pairs, seconds = set(), set()
    for line in text.splitlines():
        for _, numbers, _ in figures(line):
            pairs.update(numbers)
        for match in re.finditer(r"(?<![\w.])(\d+(?:\.\d+)?)(?:×|x\b| times\b)", line):
            pairs.add((match.group(1), "×"))
        for match in LOG_TIME.finditer(line):
            seconds.add(int(match.group(1)) * 60 + int(match.group(2)))
    return pairs, seconds


def in_log(number, unit, logged):
    pairs, seconds = logged
    if (number, unit) in pairs or (unit == "s" and number.isdigit() and int(number) in seconds):
        return True
    if unit == "min" and number.isdigit():
        return any(round(s / 60) == int(number) for s in seconds)
    return False


def read_log(root, cache={}):
    """The measurements log's text and its figures (logged_figures), read once."""
    if root not in cache:
        with open(os.path.join(root, LOG), encoding="utf-8") as f:
            log = f.read()
        cache[root] = (log, logged_figures(log))
    return cache[root]


def prose_and_comments(text):
    """(line number, text) of the prose lines (inline code blanked) and of the comments of the code
    blocks ("# …" to the end of a line)."""
    prose = dict(prose_lines(text))
    for number, line in enumerate(text.splitlines(), 1):
        if number in prose:
            yield number, prose[number]
        elif not FENCE.match(line):
            comment = re.search(r"(?:^|\s)#\s(.*)$", line)
            if comment:
                yield number, comment.group(1)


def check_figures(root, page, text, problems):
    """The times and ratios one page quotes against the log; returns how many were checked."""
    log, whole = read_log(root)
    checked, estimate, previous = 0, False, 0
    for number, line in prose_and_comments(text):
        if number != previous + 1 or not line.strip():
            estimate = False  # a blank line or a code block ends the paragraph or table
        previous = number
        if ESTIMATE in line:
            estimate, line = True, line[line.index(ESTIMATE):]
        if estimate:
            continue
        links = [(m.span(), m.group(1)) for m in LINK.finditer(line)]
        for quoted, values, (begin, end) in figures(line):
            target = next((t for (b, e), t in links if b <= begin and end <= e), None)
            if target:
                path, _, anchor = target.partition("#")
                if path.endswith("measurements.md") and anchor in LOGGED_TIMES:
                    continue  # the main job's and the suite's times: check_times holds them to the newest row
            logged = whole
            if target and target.partition("#")[0].endswith("measurements.md") and target.partition("#")[2]:
                heading = next((h for h in re.findall(r"^#+\s+(.*?)\s*$", log, re.M)
                                if slug(h) == target.partition("#")[2]), None)
                logged = logged_figures(section(log, heading)) if heading else whole
            for value, unit in values:
                checked += 1
                if in_log(value, unit, logged):
                    continue
                if (value, unit) in PAPER_FIGURES and PAPER_LINE.search(line):
                    continue
                if (value, unit) in NOT_MEASURED:
                    continue
                where = f"the log's section #{target.partition('#')[2]}" if logged is not whole else LOG
                problems.append(f"{page}:{number}: '{quoted}' is not in {where}: quote the log's figure (and link it), "
                                "or, if it is the paper's, a setting or an estimate, say so as check_docs.py's "
                                "rule for figures says")
    return checked


def main():
    arguments = sys.argv[1:]
    bin_dir = None
    if "--bin" in arguments:
        at = arguments.index("--bin")
        bin_dir = arguments[at + 1]
        del arguments[at:at + 2]
    root = os.path.abspath(arguments[0] if arguments else os.path.join(os.path.dirname(__file__), ".."))
    problems = []
    total = 0
    quotes = 0
    writes = 0
    lists = 0
    figures_checked = 0
    skipped = set()
    bin_dir = bin_dir or os.path.join(root, "build", "bin")
    tables = load_tables(bin_dir, problems)
    newest = log_times(root, problems)
    checked_pages = pages(root)
    if "README.md" not in checked_pages:
        problems.append("README.md: missing")
    for page in checked_pages:
        with open(os.path.join(root, page), encoding="utf-8") as f:
            text = f.read()
        links = check_links(root, page, text, problems)
        total += links
        for number, line in enumerate(text.splitlines(), 1):
            if ISSUE.search(line):
                problems.append(f"{page}:{number}: cites an issue number ('{ISSUE.search(line).group(0)}'): "
                                "say what is true now; history goes to CHANGELOG.md")
        size = len(text.encode("utf-8"))
        if page.startswith("docs" + os.sep) and page != os.path.normpath(LOG) and size > PAGE_LIMIT:
            problems.append(f"{page}: {size:,} bytes, more than {PAGE_LIMIT:,}: split the page or move "
                            "measurements to the log")
        if page != os.path.normpath(LOG) and page != "CHANGELOG.md":
            quotes += check_times(page, text, newest, problems)
        if page == "CHANGELOG.md":
            check_changelog(text, problems)
        else:
            writes += check_output_folders(root, page, text, problems)
            lists += check_lists(page, text, tables, problems, skipped)
            if page != os.path.normpath(LOG):
                figures_checked += check_figures(root, page, text, problems)
        print(f"check_docs: {page}: {size:,} bytes, {links} relative links")
    readme = os.path.join(root, "README.md")
    if os.path.isfile(readme):
        size = os.path.getsize(readme)
        if size > README_LIMIT:
            problems.append(f"README.md: {size:,} bytes, more than {README_LIMIT:,}: move reference material into docs/")
        with open(readme, encoding="utf-8") as f:
            text = f.read()
        for command in README_COMMANDS:
            if command not in text:
                problems.append(f"README.md: the command CI runs is missing or changed: {command}")
    variables = check_make_variables(root, problems)
    print(f"check_docs: docs/make.md names all {variables} variables of the make files; {writes} writes (`-o`, `>`, "
          "`tee`) in sh blocks, each into a folder made first or present")
    if tables:
        print(f"check_docs: {lists} marked option lists equal their tables (from {bin_dir})"
              + (f"; tables not printed by this build, left unchecked: {', '.join(sorted(skipped))}" if skipped else ""))
    else:
        print(f"check_docs: no option_tables or sg-tabulate in {bin_dir} (give --bin DIR, or build): "
              "the option lists are left unchecked")
    print(f"check_docs: {figures_checked} quoted times and ratios are the log's, the paper's or settings")
    gpu_commits = check_gpu_status(root, problems)
    print(f"check_docs: {GPU_PAGE}: the log's newest GPU measurements ran {gpu_commits} commit(s)")
    for anchor, seconds in newest.items():
        print(f"check_docs: {LOGGED_TIMES[anchor]}, the log's newest row: {show(seconds)}")
    print(f"check_docs: {len(checked_pages)} pages, {total} relative links, {quotes} quoted times, README.md within "
          f"{README_LIMIT:,} bytes, pages within {PAGE_LIMIT:,}: " + ("ok" if not problems else f"{len(problems)} problem(s)"))
    for problem in problems:
        print(f"check_docs: error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
