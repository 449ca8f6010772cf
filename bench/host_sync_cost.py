#!/usr/bin/env python3
"""What host-built boolean masks cost a ring device's forward, on one GPU: the rounds of a zigzag
ring over packed documents, as ring-flash-attention's varlen zigzag function runs them, timed twice
with the same GPU work. Once with each document's halves picked by a boolean mask built on the host
(the function's way when a device holds several documents: every gather `x[mask]` and write-back
`x[mask] = y` on a GPU tensor first copies the mask's indices to the GPU and waits for the stream,
so the GPU runs dry while Python issues what follows), once with the same gathers and write-backs
through index tensors already on the GPU (no wait). The difference, per round and per masked
operation, is the host's share stripesim does not price (README, "Predicted against published
measurements": the varlen zigzag rows).

Per round r of device `rank` (0 <= rank < N): r = 0 attends all its queries to its own block
(causal); 1 <= r <= rank all queries to the keys' early halves (k and v gathered: 2 masked
operations); r > rank the queries' late halves (gathered once before the rounds) to the whole
block, merged into the gathered late halves of the output and its log-sum-exp, written back (4).
No communication: the K/V block stays the same, as it would be while the next one is in flight.
The attention is PyTorch's SDPA on the call's shape, unmasked across documents (a varlen kernel
attends within each document; the GPU work per round is larger, the host's the same); its
log-sum-exp a tensor made once per shape. The merge is the standard one in fp32:
out - sigmoid(block_lse - lse) * (out - block_out), lse - logsigmoid(lse - block_lse).

Usage: python3 bench/host_sync_cost.py --devices 8 --documents 2048,59136,4352 [--heads 32]
       [--kv-heads 8] [--head-dim 128] [--dtype bf16|fp16] [--warmup 3] [--iters 20] [--out FILE]
  --documents: the packed sequence's document lengths (all devices' tokens); each must divide by
  2N, and a device holds 1/N of each. Prints a line per rank; --out writes them as JSON.
       python3 bench/host_sync_cost.py --self-test   (no PyTorch needed; also run by CI)
"""
import json
import os
import statistics
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure_kernels  # noqa: E402  (the harness beside this file: its sizes and timing)

SCHEMA = "stripesim.host-sync/1"
DTYPES = ("bf16", "fp16")


# --------------------------------------------------------------------------------------------
# The rounds (pure Python)
# --------------------------------------------------------------------------------------------

def local_lengths(documents, devices):
    """Each document's tokens on one device of a zigzag ring (its chunk i and chunk 2N - 1 - i)."""
    for length in documents:
        if length % (2 * devices) != 0:
            raise measure_kernels.UsageError(
                f"--documents {length}: must divide by 2N = {2 * devices} (zigzag's chunks)")
    return [length // devices for length in documents]


def half_rows(lengths, *, late):
    """The local rows of every document's early (late=False) or late half, in order."""
    rows, start = [], 0
    for length in lengths:
        middle = start + length // 2
        rows.extend(range(middle, start + length) if late else range(start, middle))
        start += length
    return rows


def round_kinds(rank, devices):
    """'diagonal', 'early' (keys' early halves) or 'late' (queries' late halves), a round each."""
    return ["diagonal" if r == 0 else "early" if r <= rank else "late" for r in range(devices)]


# Masked operations a round of each kind makes: gathers of k and v; gathers of the output and its
# log-sum-exp and their write-backs. One more before the rounds: the queries' late halves.
MASKED_OPS = {"diagonal": 0, "early": 2, "late": 4}


def masked_ops(rank, devices, documents):
    """How many gathers and write-backs go through a host-built mask on device `rank`: none when it
    holds a single document (its halves are slices then)."""
    if len(documents) == 1:
        return 0
    kinds = round_kinds(rank, devices)
    return (1 if "late" in kinds else 0) + sum(MASKED_OPS[k] for k in kinds)


def build_document(device, torch_version, workload, ranks):
    """The --out file: the workload, a line per rank and the median over ranks of the time a round
    loses to the host's masks."""
    return {"schema": SCHEMA, "device": device, "torch": torch_version, "workload": workload,
            "per_round_us_median": statistics.median(r["per_round_us"] for r in ranks),
            "method": ("One GPU runs one device's forward rounds of a zigzag ring over packed documents, twice with "
                       "the same GPU work: halves picked through boolean masks built on the host (x[mask], "
                       "x[mask] = y) and through index tensors on the GPU; the whole sequence of rounds between "
                       "CUDA events, median of the iterations after the warm-up ones. SDPA stands in for the "
                       "varlen kernel; no communication."),
            "ranks": ranks}


def rank_entry(rank, devices, documents, host_us, device_us):
    ops = masked_ops(rank, devices, documents)
    entry = {"rank": rank, "masked_ops": ops, "host_masks_us": host_us, "device_indices_us": device_us,
             "per_round_us": (host_us - device_us) / devices}
    entry["per_masked_op_us"] = (host_us - device_us) / ops if ops else None
    return entry


def parse_args(argv):
    parser = measure_kernels.OneLineParser(prog="host_sync_cost.py", description=__doc__.splitlines()[0])
    parser.add_argument("--devices", required=True)
    parser.add_argument("--documents", required=True)
    parser.add_argument("--heads", default="32")
    parser.add_argument("--kv-heads", default="8")
    parser.add_argument("--head-dim", default="128")
    parser.add_argument("--dtype", default="bf16", choices=DTYPES)
    parser.add_argument("--warmup", default="3")
    parser.add_argument("--iters", default="20")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    positive = measure_kernels.parse_positive
    devices, heads = positive(args.devices, "--devices"), positive(args.heads, "--heads")
    kv_heads, head_dim = positive(args.kv_heads, "--kv-heads"), positive(args.head_dim, "--head-dim")
    warmup, iters = positive(args.warmup, "--warmup"), positive(args.iters, "--iters")
    if heads % kv_heads != 0:
        raise measure_kernels.UsageError(f"--heads {heads}: must be a multiple of --kv-heads {kv_heads}")
    documents = [positive(x, "--documents") for x in args.documents.split(",")]
    lengths = local_lengths(documents, devices)
    if args.out is not None and not os.path.isdir(os.path.dirname(os.path.abspath(args.out))):
        raise measure_kernels.UsageError(f"--out {args.out}: its directory does not exist")
    return {"devices": devices, "documents": documents, "lengths": lengths, "heads": heads, "kv_heads": kv_heads,
            "head_dim": head_dim, "dtype": args.dtype, "warmup": warmup, "iters": iters, "out": args.out}


def self_test():
    failures = []
    lengths = local_lengths([32, 16], 4)  # 8 and 4 tokens a device
    if lengths != [8, 4]:
        failures.append(f"local_lengths: {lengths}")
    if half_rows(lengths, late=False) != [0, 1, 2, 3, 8, 9] or half_rows(lengths, late=True) != [4, 5, 6, 7, 10, 11]:
        failures.append("half_rows: not each document's halves")
    if round_kinds(2, 4) != ["diagonal", "early", "early", "late"]:
        failures.append(f"round_kinds(2, 4): {round_kinds(2, 4)}")
    # Rank 2 of 4: the late halves once, two early rounds (2 each), one late round (4).
    if masked_ops(2, 4, [32, 16]) != 9 or masked_ops(3, 4, [32, 16]) != 6 or masked_ops(0, 4, [64]) != 0:
        failures.append("masked_ops")
    entry = rank_entry(2, 4, [32, 16], 1900.0, 1000.0)
    if entry["per_round_us"] != 225.0 or entry["per_masked_op_us"] != 100.0:
        failures.append(f"rank_entry: {entry}")
    return failures


# --------------------------------------------------------------------------------------------
# Timing (torch is imported here only)
# --------------------------------------------------------------------------------------------

def measure(config):
    import torch
    import torch.nn.functional as F

    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device is visible to PyTorch")
    cuda = torch.device("cuda", 0)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[config["dtype"]]
    c, h, hk, d = sum(config["lengths"]), config["heads"], config["kv_heads"], config["head_dim"]
    q = torch.randn(c, h, d, device=cuda, dtype=dtype)
    k = torch.randn(c, hk, d, device=cuda, dtype=dtype)
    v = torch.randn(c, hk, d, device=cuda, dtype=dtype)
    early, late = half_rows(config["lengths"], late=False), half_rows(config["lengths"], late=True)
    # The function's masks: boolean, on the host.
    host = {}
    for name, rows in (("early", early), ("late", late)):
        mask = torch.zeros(c, dtype=torch.bool)
        mask[rows] = True
        host[name] = mask
    gpu = {name: torch.tensor(rows, device=cuda, dtype=torch.long) for name, rows in (("early", early), ("late", late))}
    lse_of = {}
    gqa = {"enable_gqa": True} if h != hk else {}  # PyTorch >= 2.5

    def attend(q_, k_, v_, causal):
        out = F.scaled_dot_product_attention(q_.transpose(0, 1).unsqueeze(0), k_.transpose(0, 1).unsqueeze(0),
                                             v_.transpose(0, 1).unsqueeze(0), is_causal=causal, **gqa)
        rows = q_.shape[0]
        if rows not in lse_of:
            lse_of[rows] = torch.randn(rows, h, 1, device=cuda, dtype=torch.float32)
        return out.squeeze(0).transpose(0, 1), lse_of[rows]

    def merge(out, lse, block_out, block_lse):
        block_out = block_out.to(torch.float32)
        if out is None:
            return block_out, block_lse.clone()
        out = out - torch.sigmoid(block_lse - lse) * (out - block_out)
        lse = lse - F.logsigmoid(lse - block_lse)
        return out, lse

    def rounds(rank, gather, write_back):
        kinds = round_kinds(rank, config["devices"])
        q1 = gather(q, "late") if "late" in kinds else None
        out = lse = None
        for kind in kinds:
            if kind == "diagonal":
                out, lse = merge(out, lse, *attend(q, k, v, True))
            elif kind == "early":
                out, lse = merge(out, lse, *attend(q, gather(k, "early"), gather(v, "early"), False))
            else:
                part_out, part_lse = merge(gather(out, "late"), gather(lse, "late"), *attend(q1, k, v, False))
                write_back(out, "late", part_out)
                write_back(lse, "late", part_lse)
        return out

    def host_gather(x, half):
        return x[host[half]]

    def host_write_back(x, half, value):
        x[host[half]] = value

    def gpu_gather(x, half):
        return x.index_select(0, gpu[half])

    def gpu_write_back(x, half, value):
        x.index_copy_(0, gpu[half], value)

    if len(config["documents"]) == 1:  # one document: the function slices, as the GPU indices do
        host_gather, host_write_back = gpu_gather, gpu_write_back
    ranks = []
    with torch.no_grad():
        for rank in range(config["devices"]):
            samples = {}
            for name, gather, write_back in (("host", host_gather, host_write_back),
                                             ("gpu", gpu_gather, gpu_write_back)):
                samples[name] = measure_kernels.time_call(torch, lambda g=gather, w=write_back: rounds(rank, g, w),
                                                          config["warmup"], config["iters"])
            entry = rank_entry(rank, config["devices"], config["documents"], samples["host"], samples["gpu"])
            ranks.append(entry)
            print(f"rank {rank}: {entry['masked_ops']} masked operations, host masks {entry['host_masks_us']:.0f} us, "
                  f"GPU indices {entry['device_indices_us']:.0f} us: {entry['per_round_us']:.0f} us a round"
                  + (f", {entry['per_masked_op_us']:.0f} us an operation" if entry["per_masked_op_us"] else ""))
    return torch.__version__, torch.cuda.get_device_name(cuda), ranks


def main(argv):
    return measure_kernels.harness_main("host_sync_cost.py", argv, self_test, parse_args, time_and_write)


def time_and_write(config):
    torch_version, device, ranks = measure(config)
    workload = {key: config[key] for key in ("devices", "documents", "heads", "kv_heads", "head_dim", "dtype")}
    if config["out"]:
        with open(config["out"], "w", encoding="utf-8") as f:
            json.dump(build_document(device, torch_version, workload, ranks), f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
