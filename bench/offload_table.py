#!/usr/bin/python3
"""offload_table.py - the weight-offload paper's Table 1 and bandwidth sweep, rebuilt (issue 14;
docs/weight-offload.md "Table 1").

For every chain of examples/chains/ (scripts/gen_chains.py, 12 GB/s; with --instances paper, of
examples/chains-paper/, the instances calibrated on Table 1's own columns, gen_chains.py --paper) it runs
`turnip offload-plan --algo milp` (the section 6 lower bound, GLPK, --time-limit S, and Algorithm 2
on the MILP's selection) and the four other strategies (greedy, greedy-star, l2l, l2l-sync; each schedule
replayed by the independent checker) and prints each makespan over the bound; then turnip's
planner on the chain's TaskGraph (`turnip offload-plan --taskgraph --sim-profile`, simulated by
`turnip sim`, --order any and fixed), with its own eviction and with the greedy and the milp
selections as directed evictions (--weight-offload greedy|milp; each on the TaskGraph in its own
schedule's start state). Then the sweep of section 7.2: one chain (--sweep-chain, default
gpt2-38-b16; with --instances paper gpt2-38-b32, as the paper's Figure 4 is at batch 32 or 64)
regenerated at each bandwidth (--betas, GB/s), the same columns. Makespans are the
checker's simulated times (deterministic: one run each); the solver's seconds are one run's wall
time on this machine (printed for the gap, not as a benchmark figure).

Writes OUT/offload_table1.csv, OUT/offload_sweep.csv and, with gnuplot, OUT/offload_sweep.png
(a fixed script over fixed names in a private temporary directory; every file written to a
temporary name and renamed into place).
usage: bench/offload_table.py [--turnip PATH] [--time-limit S (120)] [--out DIR] [--sweep-chain NAME]
                              [--betas 1,2,4,8,12,16] [--only NAME,...] [--instances model|paper]
The CSV and PNG names carry the instances: offload_table1.csv, offload_sweep.{csv,png} for the
cost model (the default), offload_table1-paper.csv, offload_sweep-paper.{csv,png} for paper."""
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from atomic_write import write_atomic  # noqa: E402
ALGOS = ["greedy", "greedy-star", "l2l", "l2l-sync", "milp"]


def die(msg):
    print("offload_table: " + msg, file=sys.stderr)
    sys.exit(2)


def plan(turnip, chain, algo, limit, extra=(), may_fail=False):
    """offload-plan's printed lines as a dict; None when it exits 2 and may_fail (milp: no
    incumbent in the time limit, or no schedule fits its selection)"""
    cmd = [turnip, "offload-plan", chain, "--algo", algo] + list(extra)
    if algo == "milp" or "--bound" in extra:  # the solver's limit (offload-plan refuses it otherwise)
        cmd += ["--time-limit", str(limit)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit * 4 + 600)
    if p.returncode == 2 and may_fail:
        print("offload_table: %s --algo %s: %s (column n/a)" % (os.path.basename(chain), algo, p.stderr.strip()),
              file=sys.stderr)
        return None
    if p.returncode != 0:
        die("%s --algo %s: exit %d: %s" % (chain, algo, p.returncode, p.stderr.strip()))
    out = {}
    for line in p.stdout.splitlines():
        k, _, v = line.partition(" ")
        out[k] = v
    return out


def row(turnip, chain, limit):
    with open(chain) as f:
        layers = json.load(f)["layers"]
    with tempfile.TemporaryDirectory(prefix="offload_turnip.") as d:
        # each strategy once; those the planners start from also write their TaskGraph (in the
        # start state of their schedule) and the chain's machine profile
        prof = os.path.join(d, "chain.profile.json")
        starts = set(start for _, _, start in PLANNERS)
        graphs = {a: os.path.join(d, "chain.%s.taskgraph.json" % a) for a in starts}
        res = {a: plan(turnip, chain, a, limit, ["--taskgraph", graphs[a], "--sim-profile", prof] if a in starts else [],
                       may_fail=a == "milp") for a in ALGOS}
        b = res["milp"] or plan(turnip, chain, "greedy", limit, ["--bound"])  # the bound without milp's schedule
        bound = float(b["bound"].split()[0])
        r = {"chain": os.path.basename(chain)[:-5], "compute_s": sum(x["uf"] + x["ub"] for x in layers),
             "bound_s": bound, "optimal": "proved optimal" in b["bound"], "gap": float(b["gap"]),
             "solver_s": float(b["solver"].rsplit(",", 1)[1].split()[0])}
        for a in ALGOS:
            m = float(res[a]["makespan"].split()[0]) if res[a] else float("nan")
            r[a + "_s"] = m
            r[a + "/bound"] = m / bound if bound > 0 else 1.0
        for planner, flags, start in PLANNERS:
            for policy in POLICIES:
                k = "%s_%s" % (planner, policy)
                if not res[start]:  # its strategy failed: no TaskGraph
                    r[k + "_s"] = r[k + "/bound"] = float("nan")
                    continue
                extra = ["--milp-time-limit", str(limit)] if "milp" in flags else []
                cmd = [turnip, "sim", graphs[start], "--machine", prof, "--plan-order", "topo", "--order", policy] + flags + extra
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit * 4 + 600)
                m = re.search(r"totals: makespan ([0-9.eE+-]+) s", p.stdout)
                if p.returncode != 0 or not m:
                    die("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()))
                r[k + "_s"] = float(m.group(1))
                r[k + "/bound"] = float(m.group(1)) / bound if bound > 0 else 1.0
    return r


# turnip's planner on the chain's TaskGraph (turnip offload-plan --taskgraph) in turnip sim:
# its own eviction (Belady) and the greedy and milp selections as directed evictions, under two
# dispatch policies; each on the TaskGraph in the start state of the strategy named third
PLANNERS = [("turnip", [], "greedy"), ("turnip-greedy", ["--weight-offload", "greedy"], "greedy"),
            ("turnip-milp", ["--weight-offload", "milp"], "milp")]
POLICIES = ["any", "fixed"]
TCOLS = ["%s_%s%s" % (p, o, x) for p, _, _ in PLANNERS for o in POLICIES for x in ("_s", "/bound")]
COLS = ["chain", "compute_s", "bound_s", "optimal", "gap", "solver_s"] + [a + x for a in ALGOS for x in ("_s", "/bound")] + TCOLS


def write_csv(path, rows, extra=()):
    def write(f):
        w = csv.writer(f)
        w.writerow(list(extra) + COLS)
        for r in rows:
            w.writerow([r[c] for c in list(extra) + COLS])
    write_atomic(path, write, newline="")


def show_header(first):
    print("| %s | compute s | bound s | proved | gap | solver s | Greedy | Greedy* | L2L | L2L sync | MILP sel "
          "| turnip any / fixed | turnip+greedy any / fixed | turnip+milp any / fixed |" % first)
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|", flush=True)


def show(r, first):
    # a milp that found no selection in the time limit reads nan (n/a)
    print("| %s | %.3f | %.3f | %s | %.4f | %.1f | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f / %.4f | %.4f / %.4f | %.4f / %.4f |" % (
        r[first], r["compute_s"], r["bound_s"], "yes" if r["optimal"] else "no", r["gap"], r["solver_s"],
        r["greedy/bound"], r["greedy-star/bound"], r["l2l/bound"], r["l2l-sync/bound"], r["milp/bound"], r["turnip_any/bound"],
        r["turnip_fixed/bound"], r["turnip-greedy_any/bound"], r["turnip-greedy_fixed/bound"],
        r["turnip-milp_any/bound"], r["turnip-milp_fixed/bound"]), flush=True)


def main(argv):
    turnip = os.path.join(ROOT, "build", "turnip")
    # 120 s: on a 2-core Intel Xeon VM bert-144-b32's simplex took 33 s, past the half of a 60 s
    # limit it is given (docs/weight-offload.md "Table 1 rebuilt")
    limit, out, sweep_chain, betas, only = 120.0, os.path.join(ROOT, "out"), None, [1, 2, 4, 8, 12, 16], None
    instances = "model"
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(__doc__)
            return 0
        if i + 1 >= len(argv):
            die("%s needs a value" % a)
        v = argv[i + 1]
        if a == "--turnip":
            turnip = v
        elif a == "--time-limit":
            try:
                limit = float(v)
            except ValueError:
                limit = float("nan")
            if not 0.01 <= limit <= 86400:
                die("--time-limit must be in [0.01, 86400]")
        elif a == "--out":
            out = v
        elif a == "--sweep-chain":
            sweep_chain = v
            if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", v):  # a chain's name, never a path
                die("--sweep-chain: a chain name such as gpt2-38-b16")
        elif a == "--betas":
            try:
                betas = [float(x) for x in v.split(",")]
            except ValueError:
                die("--betas: a comma-separated list of GB/s values")
            if not betas or any(not 0.001 <= x <= 1000 for x in betas):
                die("--betas: GB/s values in [0.001, 1000]")
        elif a == "--only":
            only = v.split(",")
        elif a == "--instances":
            if v not in ("model", "paper"):
                die("--instances: model (the cost model, examples/chains) or paper (examples/chains-paper)")
            instances = v
        else:
            die("unknown argument %s (--help)" % a)
        i += 2
    if not os.access(turnip, os.X_OK):
        die("no turnip at %s (scripts/build.sh build)" % turnip)
    os.makedirs(out, exist_ok=True)
    cdir = os.path.join(ROOT, "examples", "chains" if instances == "model" else "chains-paper")
    gen_flags = [] if instances == "model" else ["--paper"]
    if sweep_chain is None:  # the paper's Figure 4 is at batch 32 or 64; the model's sweep kept its older chain
        sweep_chain = "gpt2-38-b16" if instances == "model" else "gpt2-38-b32"
    suffix = "" if instances == "model" else "-paper"
    chains = sorted(f for f in os.listdir(cdir) if f.endswith(".json"))
    if only:
        unknown = sorted(set(only) - set(c[:-5] for c in chains))
        if unknown:
            die("--only: no chain %s in %s" % (", ".join(unknown), os.path.relpath(cdir, ROOT)))
        chains = [c for c in chains if c[:-5] in only]
    print("Table 1 (12 GB/s), %s instances (%s), time limit %g s per bound; ratios are makespan / bound" % (
        instances, os.path.relpath(cdir, ROOT), limit))
    rows = []
    show_header("chain")
    for c in chains:
        rows.append(row(turnip, os.path.join(cdir, c), limit))
        show(rows[-1], "chain")
    write_csv(os.path.join(out, "offload_table1%s.csv" % suffix), rows)
    print("\nBandwidth sweep: %s" % sweep_chain)
    tmpd = tempfile.mkdtemp(prefix="offload_sweep.")
    try:
        srows = []
        show_header("beta_GBps")
        for b in betas:
            d = os.path.join(tmpd, "b")
            shutil.rmtree(d, ignore_errors=True)
            subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "gen_chains.py"), "--out", d, "--beta",
                            repr(b * 1e9)] + gen_flags, check=True, capture_output=True)
            path = os.path.join(d, sweep_chain + ".json")
            if not os.path.isfile(path):
                die("no chain %s" % sweep_chain)
            r = row(turnip, path, limit)
            r["beta_GBps"] = b
            srows.append(r)
            show(r, "beta_GBps")
        csvp = os.path.join(out, "offload_sweep%s.csv" % suffix)
        write_csv(csvp, srows, ("beta_GBps",))
        if shutil.which("gnuplot"):
            shutil.copy(csvp, os.path.join(tmpd, "sweep.csv"))
            col = lambda name: 2 + COLS.index(name)  # gnuplot counts from 1; beta_GBps comes first
            lines = [("greedy/bound", "Greedy"), ("greedy-star/bound", "Greedy*"), ("l2l/bound", "L2L"),
                     ("l2l-sync/bound", "L2L (synchronous)"),
                     ("milp/bound", "MILP selection"), ("turnip_any/bound", "turnip planner (any)"),
                     ("turnip-greedy_fixed/bound", "turnip planner + greedy (fixed)"),
                     ("turnip-milp_fixed/bound", "turnip planner + milp (fixed)")]
            script = ("set terminal pngcairo size 800,500\nset output 'sweep.png'\nset datafile separator ','\n"
                      "set key top right\nset xlabel 'link bandwidth (GB/s)'\nset ylabel 'makespan / lower bound'\n"
                      "set logscale x 2\nplot " +
                      ", ".join("'sweep.csv' every ::1 using 1:%d with linespoints title '%s'" % (col(c), t)
                                for c, t in lines) + "\n")
            with open(os.path.join(tmpd, "sweep.gp"), "w") as f:
                f.write(script)
            subprocess.run(["gnuplot", "sweep.gp"], cwd=tmpd, check=True)
            with open(os.path.join(tmpd, "sweep.png"), "rb") as png:
                write_atomic(os.path.join(out, "offload_sweep%s.png" % suffix), lambda f: shutil.copyfileobj(png, f), "wb")
            print("wrote %s, %s" % (csvp, os.path.join(out, "offload_sweep%s.png" % suffix)))
        else:
            print("wrote %s (no gnuplot: no PNG)" % csvp)
    finally:
        shutil.rmtree(tmpd, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
