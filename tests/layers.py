#!/usr/bin/env python3
"""layers.py - checks the layering docs/ARCHITECTURE.md promises, from the #include lines alone:
every file includes only files of its own layer or of layers below it, and no two files
include each other in a loop (a cycle of any length). Shares no code with the C build.

usage: layers.py SOURCE_DIR [--inject FILE:INCLUDED]...  (--inject adds an include, to show
the check fails: the CTest cases layers_detects_* expect its message; exit 2 when an injected
path is not in the tree)"""
import os
import re
import sys

# bottom to top; models and plan are siblings (neither includes the other), as are kernels and
# plan's users above them. Public headers belong to the layer that implements them.
LAYERS = ["io", "graph", "models", "plan", "kernels", "exec", "backend", "app", "tools"]
RANK = {"io": 0, "graph": 1, "models": 2, "plan": 2, "kernels": 3, "exec": 4, "backend": 5, "app": 6, "tools": 7}
PUBLIC = {"error.h": "io", "io.h": "io", "dtype.h": "io", "safetensors.h": "io", "graph.h": "graph",
          "models.h": "models", "plan.h": "plan", "offload.h": "plan", "exec.h": "exec", "cache.h": "exec", "backend.h": "backend", "app.h": "app",
          "turnip.h": "app"}


def layer_of(rel):
    parts = rel.split("/")
    if parts[0] == "include":
        return PUBLIC.get(parts[-1])
    if parts[0] == "src":
        return parts[1]
    if parts[0] == "tools":
        return "tools"
    return None


def main():
    root = sys.argv[1]
    injects = [a.split(":", 1) for a in sys.argv[3::2]] if "--inject" in sys.argv else []
    files = {}
    for top in ("include", "src", "tools"):
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if n.endswith((".c", ".h", ".cu")):
                    rel = os.path.relpath(os.path.join(d, n), root)
                    files[rel] = layer_of(rel)
    bad = [f for f, l in files.items() if l is None or l not in RANK]
    if bad:
        print("files in no layer:", ", ".join(sorted(bad)))
        return 1
    edges = {f: set() for f in files}
    inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    for f in files:
        text = open(os.path.join(root, f), encoding="utf-8", errors="replace").read()
        for name in inc.findall(text):
            cands = [os.path.normpath(os.path.join(os.path.dirname(f), name)),
                     os.path.join("include", name), os.path.join("src", name)]
            hit = next((c for c in cands if c in files), None)
            if hit is None:
                if not name.startswith("cublas") and not name.startswith("cuda"):
                    print(f"{f}: #include \"{name}\" names no file of the tree")
                    return 1
                continue
            edges[f].add(hit)
    for f, t in injects:
        if f not in files or t not in files:
            print(f"--inject {f}:{t}: names a file not in the tree")
            return 2
        edges[f].add(t)
    errors = []
    for f, outs in edges.items():
        for t in outs:
            lf, lt = files[f], files[t]
            if RANK[lt] > RANK[lf] or (RANK[lt] == RANK[lf] and lf != lt):
                errors.append(f"upward or sideways include: {f} ({lf}) -> {t} ({lt})")
    # cycles: depth-first search with colours
    colour = {f: 0 for f in files}
    stack = []

    def dfs(u):
        colour[u] = 1
        stack.append(u)
        for w in sorted(edges[u]):
            if colour[w] == 1:
                errors.append("include cycle: " + " -> ".join(stack[stack.index(w):] + [w]))
            elif colour[w] == 0:
                dfs(w)
        stack.pop()
        colour[u] = 2

    sys.setrecursionlimit(10000)
    for f in sorted(files):
        if colour[f] == 0:
            dfs(f)
    for e in errors:
        print(e)
    nedges = sum(len(v) for v in edges.values())
    print(f"{len(files)} files, {nedges} includes, layers {' < '.join(LAYERS)}: "
          f"{len(errors)} violation(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
