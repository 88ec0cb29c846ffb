#!/usr/bin/env python3
"""Builds the network packs' training corpora from Debian packages (downloaded with apt-get,
unpacked with dpkg-deb, never installed): English prose and documentation (`text`), source
code (`code`) and HTML (`markup`, measured only). Each file taken is decompressed where
gzipped, deduplicated by content, and put in the held-out split where its SHA-256 starts with
0 (1/16 of the files), else in the training split; each split of each type is one file of the
files joined by a blank line. Files of the test corpus's packages, of the benchmark corpora's
sources and with their names are left out, and where ../shared/corpora is unpacked the result
is checked to share no 64-byte run with its files (see `check_disjoint`).

Usage: pretrained/corpus.py [OUT]   (default target/pretrained/corpus)
Writes OUT/{text,code,markup}.{train,heldout}, OUT/FILES.tsv (every file: type, split,
package, path, bytes, sha256) and pretrained/PACKAGES.tsv (package, version, .deb sha256,
files, bytes), which is committed.
"""

import gzip
import hashlib
import io
import os
import subprocess
import sys
import tarfile
import zipfile
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
# Files found to quote the benchmark corpora (`check_disjoint`): Python 2.0's notes quote
# Shakespeare's XML plays (Silesia's xml), a Go test quotes Bleak House (Silesia's dickens).
EXCLUDED_PATHS = ("whatsnew/2.0.rst.txt", "cmd/link/link_test.go")
# Files above this are cut: a few huge generated files would outweigh the rest.
FILE_MAX = 1 << 20
# Windows the disjointness check compares.
RUN = 64


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


def check_disjoint(out, shared):
    """Every 64-byte run at a multiple of 64 in the corpus's files, looked up among all
    64-byte runs of the benchmark corpora's text files (unpacked under `shared`); returns the
    number found (0 is the requirement). Runs of fewer than 16 distinct bytes (rules of dashes,
    indentation) are common to any two texts and are not counted."""
    runs = set()
    for f in sorted((shared / "text").rglob("*")):
        if f.is_file() and f.stat().st_size < 64 << 20:
            b = f.read_bytes()
            runs.update(hash(b[i:i + RUN]) for i in range(0, len(b) - RUN + 1))
    hits = 0
    for f in sorted(out.glob("*.train")) + sorted(out.glob("*.heldout")):
        b = f.read_bytes()
        for i in range(0, len(b) - RUN + 1, RUN):
            run = b[i:i + RUN]
            if len(set(run)) >= 16 and hash(run) in runs:
                hits += 1
                print(f"{f.name} at {i}: {run!r}")
    return hits


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target/pretrained/corpus"
    work = ROOT / "target/pretrained/debs"
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    seen = set()
    splits = {}
    files = ["type\tsplit\tpackage\tpath\tbytes\tsha256"]
    packages = ["package\tversion\tdeb_sha256\ttype\tfiles\tbytes"]
    for pkg, kind, suffixes, cap in SOURCES:
        if pkg in EXCLUDED_PACKAGES:
            continue
        deb, version = download(pkg, work)
        deb_sha = hashlib.sha256(deb.read_bytes()).hexdigest()
        taken = size = 0
        for path, data in members(deb, work / "x" / pkg):
            if size >= cap or not wanted(path, suffixes):
                continue
            if path.endswith(".gz"):
                try:
                    data = gzip.decompress(data)
                except (OSError, EOFError):
                    continue
            if not data or not looks_like_text(data):
                continue
            data = data[:FILE_MAX]
            sha = hashlib.sha256(data).hexdigest()
            if sha in seen:
                continue
            seen.add(sha)
            split = "heldout" if sha[0] == "0" else "train"
            splits.setdefault((kind, split), []).append(data)
            files.append(f"{kind}\t{split}\t{pkg}\t{path}\t{len(data)}\t{sha}")
            taken += 1
            size += len(data)
        packages.append(f"{pkg}\t{version}\t{deb_sha}\t{kind}\t{taken}\t{size}")
        print(f"{pkg} {version}: {taken} files, {size >> 10} KiB", flush=True)
    for (kind, split), parts in sorted(splits.items()):
        (out / f"{kind}.{split}").write_bytes(b"\n\n".join(parts))
    (out / "FILES.tsv").write_text("\n".join(files) + "\n")
    (ROOT / "pretrained/PACKAGES.tsv").write_text("\n".join(packages) + "\n")
    shared = ROOT.parent / "shared/corpora"
    unpacked = [d for d in (ROOT / "target/corpora", shared) if (d / "text").is_dir()]
    if unpacked:
        hits = check_disjoint(out, unpacked[0])
        print(f"64-byte runs shared with {unpacked[0]}: {hits}")
        if hits:
            sys.exit(f"the corpus shares {hits} runs with a benchmark corpus")
    for (kind, split), parts in sorted(splits.items()):
        print(f"{kind}.{split}: {len(parts)} files, {sum(map(len, parts)) >> 20} MiB")


if __name__ == "__main__":
    main()
