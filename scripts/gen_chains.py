#!/usr/bin/python3
"""gen_chains.py - writes the GPT-2 and BERT training chains of the weight-offload paper's
section 7 (shared/papers/weight-offloading-strategies.txt, Table 1) as turnip.chain/1 JSON
files (docs/weight-offload.md, "Lower bound" / "Chains").

The paper's measured V100 times are not available; the numbers here come from a stated cost
model (docs/weight-offload.md):
  - one layer is one transformer block, hidden h = 3072, 24 heads, sequence length s
    (GPT-2: 128, BERT: 48), batch B in {16, 32, 64};
  - forward flops of a block (Megatron-LM, Narayanan et al. 2021): 24 B s h^2 + 4 B s^2 h;
    backward = 2x forward plus the forward recomputed (the paper recomputes the intermediate
    activations in the backward): ub = 3 uf; throughput 11.8 TFLOP/s (fp32 on a V100,
    calibrated on GPT-2: the compute sums fall within 4% of Table 1's sum u_j column for
    GPT-2, 6.3% for BERT, whose s = 48 is calibrated the same way);
  - weights 12 h^2 + 13 h parameters in fp32 per block (36-144 blocks: 4.1-16.3 B parameters,
    the paper's 4.2-16.4 B with the embedding);
  - activations: the block's input, B s h fp32 values kept from F_i to B_i (25 MB at B 16,
    s 128: the paper's "about 20 MB"); a^0 the same size (the embedding's output);
  - M_GPU = 16 GiB minus the recomputation workspace of one block, 60 B s h x 4 bytes
    (1.5 GB at B 16, s 128: the paper's "1 GB to 2 GB");
  - beta = 12 GB/s (Table 1) unless --beta.
A sensitivity variant (docs/weight-offload.md "How the instances decide"): --bytes 2 counts
weights, activations and the workspace at 2 bytes per value (fp16, Megatron-LM's mixed
precision) instead of 4; --paper-times scales each chain's times so that its compute sum is
Table 1's sum u_j exactly (uf : ub stays 1 : 3).
--paper (docs/weight-offload.md "The paper's own instances, calibrated") writes the instances
calibrated on Table 1's own columns instead, into examples/chains-paper/ by default: each
chain's times from its sum u_j (uf : ub 1 : 3), and each family's weight from its L2L column.
The paper's L2L is "a synchronous parameter-server": every F and B on a new weight waits for
it, so L2L - sum u_j is 2 (L - 1) transfers (w_L stays from F_L to B_L, w_1 from B_1 to F_1:
`turnip offload-plan --algo l2l-sync`); t = the mean over the family's rows of
(L2L - sum u_j) / (2 (L - 1)) (GPT-2 36.29 ms, BERT 13.68 ms; every row within 0.6% of it) and
|w| = t x 12 GB/s (435 MB and 164 MB). Activations and M_GPU are the cost model's (at 4 bytes).
usage: scripts/gen_chains.py [--out DIR] [--beta BYTES_PER_S] [--bytes 2|4] [--paper-times] [--paper] [--check]
  --check: also print each chain's compute sum next to Table 1's and exit 1 if a chain cannot
  run at all (an op over M_GPU with no other weight) or needs no offload."""
import json
import math
import os
import sys

from atomic_write import write_atomic

H = 3072
HEADS = 24
THROUGHPUT = 11.8e12
GIB16 = 16 * 1024 ** 3
WORKSPACE_FACTOR = 60
SEQ = {"gpt2": 128, "bert": 48}
# Table 1: (family, depth, batch) -> (sum u_j, L2L) in ms (sum u_j for --check, --paper-times and
# --paper; L2L for --paper: each family's transfer time per layer)
TABLE1 = {("gpt2", 74, 64): (47421, 52707), ("gpt2", 56, 64): (35553, 39542), ("gpt2", 38, 64): (23694, 26387),
          ("gpt2", 74, 32): (23697, 28983), ("gpt2", 56, 32): (17762, 21751), ("gpt2", 38, 32): (11840, 14533),
          ("gpt2", 74, 16): (11612, 16898), ("gpt2", 56, 16): (8697, 12686), ("gpt2", 38, 16): (5794, 8487),
          ("bert", 144, 64): (34486, 38379), ("bert", 96, 64): (22965, 25577), ("bert", 144, 32): (17443, 21336),
          ("bert", 96, 32): (11617, 14230), ("bert", 144, 16): (9090, 12983), ("bert", 96, 16): (6058, 8670)}
TABLE1_BETA = 12e9


def paper_transfer_s(family):
    """the paper's time to move one layer's weight, seconds: its L2L waits for every transfer but
    the two of the turns (F_L -> B_L, B_1 -> F_1), so L2L - sum u_j = 2 (L - 1) t; the mean of t
    over the family's rows"""
    ts = [(l2l - su) / 1e3 / (2 * (k[1] - 1)) for k, (su, l2l) in TABLE1.items() if k[0] == family]
    return sum(ts) / len(ts)


def chain(family, depth, batch, beta, nbytes=4, sum_u=None, w=None):
    s = SEQ[family]
    fwd_flops = 24 * batch * s * H * H + 4 * batch * s * s * H
    uf = fwd_flops / THROUGHPUT
    if sum_u is not None:  # Table 1's compute sum, in seconds, over the depth's 4 uf per layer
        uf = sum_u / (4 * depth)
    ub = 3 * uf
    if w is None:
        w = nbytes * (12 * H * H + 13 * H)
    act = nbytes * batch * s * H
    mgpu = GIB16 - WORKSPACE_FACTOR * act
    layers = [{"uf": uf, "ub": ub, "w": w, "a": act} for _ in range(depth)]
    return {"format": "turnip.chain/1", "mgpu": mgpu, "beta": beta, "a0": act, "layers": layers}


def main(argv):
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "chains")
    beta = 12e9
    check = False
    nbytes = 4
    paper_times = False
    paper = False
    out_default = True
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--out" and i + 1 < len(argv):
            out = argv[i + 1]
            out_default = False
            i += 2
        elif a == "--beta" and i + 1 < len(argv):
            try:
                beta = float(argv[i + 1])
            except ValueError:
                beta = float("nan")
            if not (math.isfinite(beta) and 1 <= beta <= 1e18):  # the range turnip.chain/1 accepts
                print("gen_chains.py: --beta wants bytes per second in [1, 1e18]", file=sys.stderr)
                return 2
            i += 2
        elif a == "--bytes" and i + 1 < len(argv) and argv[i + 1] in ("2", "4"):
            nbytes = int(argv[i + 1])
            i += 2
        elif a == "--paper-times":
            paper_times = True
            i += 1
        elif a == "--paper":
            paper = True
            i += 1
        elif a == "--check":
            check = True
            i += 1
        else:
            print("usage: scripts/gen_chains.py [--out DIR] [--beta BYTES_PER_S] [--bytes 2|4] [--paper-times] [--paper] [--check]",
                  file=sys.stderr)
            return 2
    if paper and (nbytes != 4 or paper_times):
        print("gen_chains.py: --paper takes its times from Table 1 and its weights from the L2L column: "
              "not with --bytes or --paper-times", file=sys.stderr)
        return 2
    if paper and out_default:
        out = os.path.join(os.path.dirname(out), "chains-paper")
    if out_default and (nbytes != 4 or paper_times):
        print("gen_chains.py: --bytes 2 and --paper-times write a variant: give --out (the default is examples/chains/)",
              file=sys.stderr)
        return 2
    os.makedirs(out, exist_ok=True)
    bad = 0
    for (family, depth, batch), (ms, _) in sorted(TABLE1.items()):
        if paper:  # bytes fixed by Table 1's bandwidth; --beta changes only the link
            c = chain(family, depth, batch, beta, 4, ms / 1e3, int(round(paper_transfer_s(family) * TABLE1_BETA)))
        else:
            c = chain(family, depth, batch, beta, nbytes, ms / 1e3 if paper_times else None)
        name = "%s-%d-b%d.json" % (family, depth, batch)
        path = os.path.join(out, name)
        write_atomic(path, lambda f: f.write(json.dumps(c, indent=None, separators=(",", ":")) + "\n"))
        if check:
            L = c["layers"]
            sum_u = sum(x["uf"] + x["ub"] for x in L)
            acc = c["a0"]
            alone = 0
            everything = 0
            sw = sum(x["w"] for x in L)
            for x in L:
                acc += x["a"]
                alone = max(alone, 2 * x["w"] + acc)
                everything = max(everything, 2 * x["w"] + acc + sw - x["w"])
            ok = alone <= c["mgpu"] < everything
            bad += not ok
            print("%-22s sum_u %8.0f ms (Table 1: %5d, %+5.1f%%)  mgpu %5.2f GB  alone %5.2f GB  all %6.2f GB %s" % (
                name, 1e3 * sum_u, ms, 100 * (1e3 * sum_u / ms - 1), c["mgpu"] / 1e9, alone / 1e9,
                everything / 1e9, "" if ok else "BAD"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
