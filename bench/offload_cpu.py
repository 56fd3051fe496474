#!/usr/bin/python3
"""offload_cpu.py - turnip's planner on a training chain, run on the cpu backend with a throttled
link, beside the sim backend's figure for the same graph (issue 14 part 5; docs/weight-offload.md
"Inside turnip").

The chain (default examples/chains/gpt2-38-b16.json) is scaled so it runs on one machine in
seconds: bytes / S (weights, activations, M_GPU), times / K, beta x K / S. Every transfer then
takes its time / K, as every computation does: the chain keeps its shape (the ratio of transfer
to compute time, the memory pressure), and the MILP bound and every makespan are the original's
/ K. With --layers N only the first N layers are kept and M_GPU is put the same fraction of the
way from the least any schedule needs (the largest M_o of equation 1) to every weight resident
as in the original chain.

For the scaled chain it writes the TaskGraph (`turnip offload-plan CHAIN --taskgraph G
--sim-profile P --flops R --bound`: kernels `opaque` with flops = seconds x R), then for each
planner (turnip's own eviction, and --weight-offload greedy, greedy-star, l2l) and each dispatch
policy (--order any, fixed):

  sim: `turnip sim G --machine P --plan-order topo` (virtual time, deterministic: one run);
  cpu: `turnip run G --zero-inputs --plan-order topo --opaque-rate R --link-bandwidth beta'`,
       --runs times (each a fresh process: the plan, then one run in a session of the plan's
       sizes): an opaque kernel of F flops sleeps F / R s, each copy takes bytes / beta'.

Prints the makespan (the executor's: first launch to last completion, `totals: makespan`), the
bound (the MILP's on the scaled chain; where it is the compute sum, that), the ratio, the cpu's
min / median / max over the runs and the cpu median over the sim. The cpu figures are wall-clock
times: take them on a quiet machine (nothing compiling). The copies memcpy their bytes (at most
a few ms of the transfer's time at the defaults) and every wake-up costs tens of us on a busy
machine; the sim has neither.

usage: bench/offload_cpu.py [--turnip PATH] [--chain FILE] [--bytes-scale S] [--time-scale K]
                            [--layers N] [--runs N] [--flops R] [--time-limit S]
                            [--planners none,greedy,greedy-star,l2l] [--orders any,fixed]
                            [--csv FILE]
defaults: S 128, K 4 (gpt2-38-b16: 1.5 s of compute per iteration, 3.5 MB weights, 122 MB of
device memory, a 0.375 GB/s link), all 38 layers, 3 runs, R 1e12, bound time limit 60 s."""
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from atomic_write import write_atomic  # noqa: E402
PLANNERS = ["none", "greedy", "greedy-star", "l2l"]
ORDERS = ["any", "fixed"]


def die(msg):
    print("offload_cpu: " + msg, file=sys.stderr)
    sys.exit(2)


def run(cmd, timeout=900):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        die("%s: no answer in %d s" % (" ".join(cmd), timeout))
    if p.returncode != 0:
        die("%s: exit %d: %s" % (" ".join(cmd), p.returncode, (p.stderr or p.stdout).strip()[-2000:]))
    return p.stdout


def makespan(out, cmd):
    m = re.search(r"^totals: makespan ([0-9.eE+-]+) s", out, re.M)
    if not m:
        die("%s: no 'totals: makespan' line" % " ".join(cmd))
    return float(m.group(1))


def ops_memory(c):
    """equation 1: M_o of every F_i and B_i, and M_o - |w_o| (what o holds beside its weight)"""
    acts, out = c["a0"], []
    for l in c["layers"]:
        acts += l["a"]
        out.append((l["w"] + acts, acts))            # F_i
        out.append((2 * l["w"] + acts, l["w"] + acts))  # B_i: the weight and its gradient
    return out


def mem_range(c):
    """(least any schedule needs, every weight resident) for chain c"""
    ops = ops_memory(c)
    return max(m for m, _ in ops), sum(l["w"] for l in c["layers"]) + max(r for _, r in ops)


def scale_chain(c, layers, s, k):
    if layers:
        lo, hi = mem_range(c)
        frac = (c["mgpu"] - lo) / (hi - lo) if hi > lo else 1.0
        c = dict(c, layers=c["layers"][:layers])
        lo, hi = mem_range(c)
        c["mgpu"] = int(lo + frac * (hi - lo))
    out = {"format": "turnip.chain/1", "mgpu": c["mgpu"] // s, "beta": c["beta"] * k / s, "a0": c["a0"] // s,
           "layers": [{"uf": l["uf"] / k, "ub": l["ub"] / k, "w": max(1, l["w"] // s), "a": l["a"] // s}
                      for l in c["layers"]]}
    return out


def machine_lines():
    model = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    blas = "?"
    try:
        p = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True)
        libs = sorted({l.split("=>")[-1].strip() for l in p.stdout.splitlines() if "libopenblas.so.0" in l})
        blas = ", ".join(libs) or "libopenblas.so.0 not found by ldconfig"
    except OSError:
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    return ["# %s, %s, %s, %d cores, load average %s" % (time.strftime("%Y-%m-%d %H:%M"), platform.node(), model,
                                                          os.cpu_count() or 0, " ".join("%.2f" % x for x in load)),
            "# BLAS: not called (opaque kernels sleep); the library turnip loads: %s; OPENBLAS_NUM_THREADS=%s, "
            "OPENBLAS_CORETYPE=%s" % (blas, os.environ.get("OPENBLAS_NUM_THREADS", "(unset)"),
                                      os.environ.get("OPENBLAS_CORETYPE", "(unset)"))]


# numeric flags: key in the arguments, type, range
NUMERIC = {"--bytes-scale": ("s", int, 1, 1 << 30), "--time-scale": ("k", float, 1e-3, 1e6),
           "--layers": ("layers", int, 1, 512), "--runs": ("runs", int, 1, 1000),
           "--flops": ("flops", float, 1, 1e18), "--time-limit": ("limit", float, 0.01, 86400)}


# list flags: key in the arguments, the names allowed (defaults: PLANNERS, ORDERS)
CHOICES = {"--planners": ("planners", PLANNERS), "--orders": ("orders", ["any", "fixed", "random", "priority"])}


def parse_args(argv):
    a = {"turnip": os.path.join(ROOT, "build", "turnip"), "chain": os.path.join(ROOT, "examples", "chains",
                                                                                "gpt2-38-b16.json"),
         "s": 128, "k": 4.0, "layers": 0, "runs": 3, "flops": 1e12, "limit": 60.0, "planners": PLANNERS,
         "orders": ORDERS, "csv": None}
    i = 0
    while i < len(argv):
        f = argv[i]
        if f in ("-h", "--help"):
            print(__doc__)
            sys.exit(0)
        if i + 1 >= len(argv):
            die("%s needs a value" % f)
        v = argv[i + 1]
        try:
            if f == "--turnip":
                a["turnip"] = v
            elif f == "--chain":
                a["chain"] = v
            elif f in NUMERIC:
                key, kind, lo, hi = NUMERIC[f]
                a[key] = kind(v)
                if not lo <= a[key] <= hi:  # NaN fails too
                    die("%s: %s in [%g, %g]" % (f, "an integer" if kind is int else "a number", lo, hi))
            elif f in CHOICES:
                key, allowed = CHOICES[f]
                a[key] = v.split(",")
                if any(x not in allowed for x in a[key]):
                    die("%s: a comma-separated list of %s" % (f, ", ".join(allowed)))
            elif f == "--csv":
                a["csv"] = v
            else:
                die("unknown argument %s (--help)" % f)
        except ValueError:
            die("%s: not a number: %s" % (f, v))
        i += 2
    return a


def main(argv):
    a = parse_args(argv)
    turnip = a["turnip"]
    if not os.access(turnip, os.X_OK):
        die("no turnip at %s (scripts/build.sh build)" % turnip)
    if not os.path.isfile(a["chain"]):
        die("%s: not a regular file" % a["chain"])
    run([turnip, "offload-plan", a["chain"]])  # the chain reader's checks (exit 2, one line) before scaling it
    with open(a["chain"]) as f:
        chain = json.load(f)
    if a["layers"] > len(chain.get("layers", [])):
        die("--layers %d: the chain has %d" % (a["layers"], len(chain.get("layers", []))))
    sc = scale_chain(chain, a["layers"], a["s"], a["k"])
    rows = []
    with tempfile.TemporaryDirectory(prefix="offload_cpu.") as d:
        cpath, g, prof = (os.path.join(d, n) for n in ("chain.json", "graph.json", "profile.json"))
        with open(cpath, "w") as f:
            json.dump(sc, f)
        o = run([turnip, "offload-plan", cpath, "--bound", "--time-limit", repr(a["limit"]), "--taskgraph", g,
                 "--sim-profile", prof, "--flops", repr(a["flops"])], timeout=a["limit"] * 4 + 600)
        kv = dict(line.split(" ", 1) for line in o.splitlines() if " " in line)
        compute, bound = float(kv["compute"].split()[0]), float(kv["bound"].split()[0])
        proved = "proved optimal" in kv["bound"]
        greedy_chain = float(kv["makespan"].split()[0])
        with open(prof) as f:
            devmem = json.load(f)["device_mem"]
        gbps = sc["beta"] / 1e9
        for line in machine_lines():
            print(line)
        w = [l["w"] for l in sc["layers"]]
        print("# chain %s%s scaled: bytes / %d, times / %g, beta x %g / %d -> %d layers, weights %.2f MB each (%.1f MB "
              "in all), M_GPU %.1f MB, link %.4g GB/s (a weight in %.2f ms), compute %.4f s" % (
                  os.path.basename(a["chain"]), " (first %d layers)" % a["layers"] if a["layers"] else "", a["s"],
                  a["k"], a["k"], a["s"], len(w), max(w) / 1e6, sum(w) / 1e6, sc["mgpu"] / 1e6, gbps,
                  1e3 * max(w) / sc["beta"], compute))
        print("# bound %.4f s (%s; bound / compute %.4f); the chain's own Greedy schedule %.4f s (%.4f); "
              "opaque rate %g flops/s; %d cpu runs each" % (bound, "MILP, proved optimal" if proved else
                                                            "MILP, not proved: the solver's bound at the time limit",
                                                            bound / compute, greedy_chain, greedy_chain / bound,
                                                            a["flops"], a["runs"]))
        print("| planner | order | sim s | sim / bound | cpu min s | cpu median s | cpu max s | cpu median / bound "
              "| cpu median / sim |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|", flush=True)
        for p in a["planners"]:
            flag = [] if p == "none" else ["--weight-offload", p]
            for order in a["orders"]:
                cmd = [turnip, "sim", g, "--machine", prof, "--plan-order", "topo", "--order", order] + flag
                sim = makespan(run(cmd), cmd)
                cmd = [turnip, "run", g, "--device-mem", str(devmem), "--zero-inputs", "--plan-order", "topo",
                       "--order", order, "--opaque-rate", repr(a["flops"]), "--link-bandwidth", repr(gbps)] + flag
                cpu = [makespan(run(cmd), cmd) for _ in range(a["runs"])]
                med = statistics.median(cpu)
                r = {"planner": "turnip" if p == "none" else "turnip+" + p, "order": order, "sim_s": sim,
                     "sim/bound": sim / bound, "cpu_min_s": min(cpu), "cpu_median_s": med, "cpu_max_s": max(cpu),
                     "cpu/bound": med / bound, "cpu/sim": med / sim}
                rows.append(r)
                print("| %s | %s | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f |" % (
                    r["planner"], order, sim, r["sim/bound"], r["cpu_min_s"], med, r["cpu_max_s"], r["cpu/bound"],
                    r["cpu/sim"]), flush=True)
    if a["csv"]:
        cols = list(rows[0].keys())
        def write(f):
            f.write(",".join(cols) + "\n")
            for r in rows:
                f.write(",".join(str(r[c]) for c in cols) + "\n")
        write_atomic(a["csv"], write)
        print("wrote %s" % a["csv"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
