#!/usr/bin/env python3
"""Usage: scripts/layers.py [SRC]   (default: src)

Checks the module structure of the crate under SRC: lists every import between its files
(`use crate::...`, `use super::...`, `use self::...` and paths written in code), following
re-exports to the file that defines the item, leaving out test code, and reports
  - each cycle of files that import one another (exit status 1), and
  - each import that points up the layers of docs/design.md (exit status 1).
A file's `mod` declarations are not imports. Prints the layers' edges when all is well."""
import os, re, sys

LAYERS = ["cli", "lib", "pipeline", "choice", "containers", "codecs", "entropy", "engine",
          "simd", "memory", "format", "error", "testing"]

def modules(src):
    """Maps each module path (tuple) to its file."""
    files = {}
    for root, _, names in os.walk(src):
        for n in names:
            if not n.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, n), src)[:-3].split(os.sep)
            if rel[-1] in ("mod", "lib"):
                rel = rel[:-1]
            if rel and rel[0] == "cli":
                continue  # the binary: a crate of its own over the library
            files[tuple(rel)] = os.path.join(root, n)
    return files

def strip_tests(text):
    """The text without `#[cfg(test)]` items (a module or a function, to its closing brace)."""
    out, i = [], 0
    while True:
        j = text.find("#[cfg(test)]", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        k = text.find("{", j)
        semi = text.find(";", j)
        if semi >= 0 and (k < 0 or semi < k):
            i = semi + 1
            continue
        depth, m = 0, k
        while m < len(text):
            depth += {"{": 1, "}": -1}.get(text[m], 0)
            m += 1
            if depth == 0:
                break
        i = m

DEF = re.compile(r"^(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+)?(?:const\s+)?(?:fn|struct|enum|trait|type|const|static|mod|macro_rules!)\s+(\w+)", re.M)
USE = re.compile(r"^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M)

def expand(tree):
    """`a::{b, c::{d}}` -> [a::b, a::c::d] (names with their `as` aliases)."""
    tree = " ".join(tree.split())
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [tree]
    head, body = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur); cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    parts.append(cur)
    return [p2 for p in parts if p.strip() for p2 in expand(head + p.strip())]

def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "src"
    files = modules(src)
    texts = {m: strip_tests(open(f).read()) for m, f in files.items()}
    defs = {m: set(DEF.findall(t)) for m, t in texts.items()}
    uses = {}
    for m, t in texts.items():
        table = {}
        for _, tree in USE.findall(t):
            for path in expand(tree):
                name = path.split(" as ")[-1].split("::")[-1].strip()
                table[name] = path.split(" as ")[0].strip()
        uses[m] = table

    def absolute(m, path):
        parts = path.split("::")
        if m + (parts[0],) in files:
            return m + tuple(parts)
        if parts[0] == "crate":
            return tuple(parts[1:])
        base = list(m)
        while parts and parts[0] in ("super", "self"):
            if parts.pop(0) == "super":
                base.pop()
        return tuple(base) + tuple(parts)

    def resolve(path, seen=()):
        """The file defining `path` (absolute), following re-exports."""
        for cut in range(len(path), -1, -1):
            mod = path[:cut]
            if mod in files:
                rest = path[cut:]
                if not rest or rest[0] in defs[mod] or rest[0] not in uses[mod]:
                    return mod
                if (mod, rest[0]) in seen:
                    return mod
                target = absolute(mod, uses[mod][rest[0]])
                return resolve(target + rest[1:], seen + ((mod, rest[0]),))
        return None

    edges = set()
    for m, t in texts.items():
        paths = [p.split(" as ")[0].strip() for _, tree in USE.findall(t) for p in expand(tree)]
        code = re.sub(r"//[^\n]*", "", USE.sub("", t))
        paths += re.findall(r"\b((?:crate|super|self)(?:::\w+)+)", code)
        paths += [p for p in re.findall(r"(?<![:\w])(\w+(?:::\w+)+)", code)
                  if m + (p.split("::")[0],) in files]
        for p in paths:
            if not (p.startswith(("crate", "super", "self")) or m + (p.split("::")[0],) in files):
                continue
            target = resolve(absolute(m, p))
            if target is not None and target != m:
                edges.add((m, target))
    # Cycles: strongly connected components of more than one file.
    graph = {m: sorted(t for s, t in edges if s == m) for m in files}
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)
    def visit(v):
        index[v] = low[v] = counter[0]; counter[0] += 1
        stack.append(v); on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    name = lambda m: "::".join(m) or "lib"
    bad = 0
    for comp in comps:
        bad = 1
        print("cycle:", ", ".join(sorted(name(m) for m in comp)))
        for s, t in sorted(edges):
            if s in comp and t in comp:
                print(f"    {name(s)} -> {name(t)}")
    unknown = sorted({m[0] for m in files if m and m[0] not in LAYERS})
    if unknown:
        print("modules in no layer (add them to LAYERS):", ", ".join(unknown))
        sys.exit(1)
    layer = lambda m: LAYERS.index(m[0]) if m else LAYERS.index("lib")
    for s, t in sorted(edges):
        if layer(t) < layer(s):
            bad = 1
            print(f"upward: {name(s)} -> {name(t)}")
    if not bad:
        pairs = sorted({(LAYERS[layer(s)], LAYERS[layer(t)]) for s, t in edges if layer(s) != layer(t)})
        print(f"{len(files)} files, {len(edges)} imports between them: no cycle, none upward")
        for a, b in pairs:
            print(f"    {a} -> {b}")
    sys.exit(bad)

main()
