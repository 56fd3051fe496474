#!/usr/bin/python3
"""chains_variant.py - scripts/gen_chains.py's sensitivity variant (--bytes 2 --paper-times,
docs/weight-offload.md "How the instances decide") checked against numbers written here: each
chain's compute sum is the paper's Table 1 sum u_j, uf : ub is 1 : 3, a weight is 2 bytes per
parameter of a 3072-wide block, an activation 2 bytes per value of batch x sequence x 3072, and
the GPU memory is 16 GiB less 60 such activations; each flag alone changes only its own
part (compared with the default chains); a flag value the script does not take, or a variant
without --out, exits 2 and writes nothing. Then --paper (the instances calibrated on Table 1):
times from sum u_j (uf : ub 1 : 3), every weight of a family the byte count written here
(the mean over its rows of (L2L - sum u_j) / (2 (L - 1)) seconds at 12 GB/s), activations and M_GPU as the default chains';
without --out it writes examples/chains-paper beside the script's default directory, and it
refuses --bytes and --paper-times.
usage: chains_variant.py SOURCE_DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SUM_U = {"gpt2-74-b64": 47421, "gpt2-56-b64": 35553, "gpt2-38-b64": 23694, "gpt2-74-b32": 23697,
         "gpt2-56-b32": 17762, "gpt2-38-b32": 11840, "gpt2-74-b16": 11612, "gpt2-56-b16": 8697,
         "gpt2-38-b16": 5794, "bert-144-b64": 34486, "bert-96-b64": 22965, "bert-144-b32": 17443,
         "bert-96-b32": 11617, "bert-144-b16": 9090, "bert-96-b16": 6058}
L2L = {"gpt2-74-b64": 52707, "gpt2-56-b64": 39542, "gpt2-38-b64": 26387, "gpt2-74-b32": 28983,
       "gpt2-56-b32": 21751, "gpt2-38-b32": 14533, "gpt2-74-b16": 16898, "gpt2-56-b16": 12686,
       "gpt2-38-b16": 8487, "bert-144-b64": 38379, "bert-96-b64": 25577, "bert-144-b32": 21336,
       "bert-96-b32": 14230, "bert-144-b16": 12983, "bert-96-b16": 8670}


def gen(script, d, *flags):
    subprocess.run([sys.executable, script, "--out", d] + list(flags), check=True, stdout=subprocess.DEVNULL, timeout=120)
    out = {}
    for name in SUM_U:
        with open(os.path.join(d, name + ".json")) as f:
            out[name] = json.load(f)
    return out


def main(src):
    script = os.path.join(src, "scripts", "gen_chains.py")
    fails = 0
    with tempfile.TemporaryDirectory() as d:
        both = gen(script, os.path.join(d, "both"), "--bytes", "2", "--paper-times")
        base = gen(script, os.path.join(d, "base"))
        by2 = gen(script, os.path.join(d, "bytes"), "--bytes", "2")
        pt = gen(script, os.path.join(d, "times"), "--paper-times")
        paper = gen(script, os.path.join(d, "paper"), "--paper")
        # each family's block, bytes: 12e9 x the mean of (L2L - sum u_j) / (2 (L - 1)) over its rows,
        # worked out once by hand from Table 1 (GPT-2 36.287 ms, BERT 13.681 ms) and written here
        wbytes = {"gpt2": 435444031, "bert": 164166066}
        for fam in ("gpt2", "bert"):
            rows = [n for n in SUM_U if n.startswith(fam + "-")]
            t = sum((L2L[n] - SUM_U[n]) / 1e3 / (2 * (int(n.split("-")[1]) - 1)) for n in rows) / len(rows)
            if abs(t * 12e9 - wbytes[fam]) > 1:  # the table above and the bytes written here agree
                print("FAIL: %s: Table 1 gives %.1f B per block, the test says %d" % (fam, t * 12e9, wbytes[fam]))
                fails += 1
            for name in rows:
                c = paper[name]
                s = sum(x["uf"] + x["ub"] for x in c["layers"])
                ok = abs(s * 1e3 - SUM_U[name]) <= 1e-6 * SUM_U[name] and c["beta"] == 12e9
                ok &= all(abs(x["ub"] - 3 * x["uf"]) <= 1e-12 * x["ub"] for x in c["layers"])
                ok &= all(x["w"] == wbytes[fam] for x in c["layers"])
                ok &= [x["a"] for x in c["layers"]] == [x["a"] for x in base[name]["layers"]]
                ok &= c["a0"] == base[name]["a0"] and c["mgpu"] == base[name]["mgpu"]
                if not ok:
                    print("FAIL --paper %s: sum %.6f s (want %.3f), t %.6f s, layer 0 %s" % (
                        name, s, SUM_U[name] / 1e3, t, c["layers"][0]))
                    fails += 1
        for name, ms in sorted(SUM_U.items()):
            c = both[name]
            depth = int(name.split("-")[1])
            seq = 128 if name.startswith("gpt2") else 48
            batch = int(name.rsplit("-b", 1)[1])
            act = 2 * batch * seq * 3072
            s = sum(x["uf"] + x["ub"] for x in c["layers"])
            ok = len(c["layers"]) == depth and c["beta"] == 12e9 and abs(s * 1e3 - ms) <= 1e-6 * ms
            ok &= all(abs(x["ub"] - 3 * x["uf"]) <= 1e-12 * x["ub"] for x in c["layers"])
            ok &= all(x["w"] == 2 * (12 * 3072 * 3072 + 13 * 3072) for x in c["layers"])
            ok &= all(x["a"] == act for x in c["layers"]) and c["a0"] == act
            ok &= c["mgpu"] == 16 * 2 ** 30 - 60 * act
            # each flag alone: --bytes 2 keeps the default times, --paper-times the default bytes
            ok &= [(x["uf"], x["ub"]) for x in by2[name]["layers"]] == [(x["uf"], x["ub"]) for x in base[name]["layers"]]
            ok &= [(x["w"], x["a"]) for x in pt[name]["layers"]] == [(x["w"], x["a"]) for x in base[name]["layers"]]
            ok &= pt[name]["mgpu"] == base[name]["mgpu"] and [x["w"] for x in by2[name]["layers"]] == [x["w"] for x in c["layers"]]
            if not ok:
                print("FAIL %s: sum %.6f s (want %.3f), layer 0 %s" % (name, s, ms / 1e3, c["layers"][0]))
                fails += 1
        # the refusals run a copy of the script whose default directory (../examples/chains) is
        # inside d, so a refusal that broke would write there, not into the source tree
        sd = os.path.join(d, "scripts")
        os.mkdir(sd)
        for f in ("gen_chains.py", "atomic_write.py"):
            shutil.copy(os.path.join(src, "scripts", f), sd)
        copy = os.path.join(sd, "gen_chains.py")
        for flags in (["--bytes", "3", "--out", os.path.join(d, "bad")], ["--bytes", "2"], ["--paper-times"],
                      ["--paper", "--bytes", "2", "--out", os.path.join(d, "bad")],
                      ["--paper", "--paper-times", "--out", os.path.join(d, "bad")]):
            p = subprocess.run([sys.executable, copy] + flags, capture_output=True, text=True, timeout=60,
                               cwd=d)
            if p.returncode != 2 or os.path.exists(os.path.join(d, "bad")) or os.path.exists(os.path.join(d, "examples")):
                print("FAIL: %s exited %d" % (" ".join(flags), p.returncode))
                fails += 1
        p = subprocess.run([sys.executable, copy, "--paper"], capture_output=True, text=True, timeout=60, cwd=d)
        if p.returncode != 0 or sorted(os.listdir(os.path.join(d, "examples", "chains-paper"))) != sorted(
                n + ".json" for n in SUM_U):
            print("FAIL: --paper without --out exited %d or did not write examples/chains-paper" % p.returncode)
            fails += 1
    print("chains_variant: %d chains, %d failures" % (len(SUM_U), fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
