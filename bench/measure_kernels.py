#!/usr/bin/env python3
"""Times every (round, device) attention call of causal Ring Attention with a real PyTorch kernel on
one GPU and writes a stripesim.measurements/1 file (reports/schema/measurements.schema.json), the
input of `stripesim validate --calibrate/--compare --measurements`.

One GPU plays every ring device in turn: for round r and device d it runs device d's queries against
the K/V block that started on device (d - r) mod N, the mask evaluated on ORIGINAL positions, alone
(no communication). Kernels:
  flex  torch.nn.attention.flex_attention under torch.compile, one BlockMask per call (BLOCK_SIZE =
        --tile); also records active_blocks[r][d], the blocks the BlockMask keeps (full + partial).
  sdpa  torch.nn.functional.scaled_dot_product_attention called the way ring-flash-attention calls
        FlashAttention (causal mask; contiguous, striped and zigzag only); no call where a pair has
        no work (0 us).
  flash_attn, fa3
        the same calls on the FlashAttention package itself: flash_attn.flash_attn_func (FlashAttention-2,
        what ring-flash-attention calls) or flash_attn_interface.flash_attn_func (FlashAttention-3, the
        package's Hopper build); bf16 or fp16.

Usage: python3 bench/measure_kernels.py --kernel flex|sdpa|flash_attn|fa3 --seq-len 32768 --devices 4 --out FILE
       [--heads 16] [--kv-heads 16] [--head-dim 128] [--batch 1] [--dtype bf16|fp16|fp32]
       [--mask causal|bidirectional|window:W|prefix:P|documents:L1,L2,...[:window=W]] [--pass fwd|fwdbwd]
       [--layouts contiguous,striped,zigzag,block-striped:S] [--tile 128|TQxTK] [--warmup 3]
       [--iters 10] [--seed 0] [--sdpa-backend auto|flash|cudnn|efficient|math] [--notes TEXT]
       python3 bench/measure_kernels.py --self-test

Everything but the timing is plain Python that never imports torch at module level, so CI machines
without PyTorch can import this file and test the layouts, masks, call plans and JSON it writes
(tests/test_measurements_format.py). Bad input: one line on stderr naming the flag, exit 2, no file.
"""
import argparse
import bisect
import collections
import json
import os
import statistics
import sys
import tempfile

SCHEMA = "stripesim.measurements/1"
KERNELS = ("flex", "sdpa", "flash_attn", "fa3")
# The kernels timed on ring-flash-attention's causal call plan (sdpa_call_plan) rather than per BlockMask.
CALL_PLAN_KERNELS = ("sdpa", "flash_attn", "fa3")
# What each of those calls, for the file's "kernel" and "method" text.
CALL_PLAN_FUNCTIONS = {"sdpa": "PyTorch's scaled_dot_product_attention",
                       "flash_attn": "flash_attn.flash_attn_func (FlashAttention-2)",
                       "fa3": "flash_attn_interface.flash_attn_func (FlashAttention-3)"}
# The module each FlashAttention-package kernel is imported from.
FLASH_PACKAGE_MODULES = {"flash_attn": "flash_attn", "fa3": "flash_attn_interface"}
PASSES = ("fwd", "fwdbwd")
DTYPES = ("bf16", "fp16", "fp32")
SDPA_BACKENDS = ("auto", "flash", "cudnn", "efficient", "math")
SDPA_LAYOUTS = ("contiguous", "striped", "zigzag")
# flex_attention first shipped in PyTorch 2.5, and enable_gqa arrived in both kernels with it.
MIN_TORCH = (2, 5)


class UsageError(Exception):
    """Bad command-line input: the message names the flag and the constraint; exit status 2."""


# --------------------------------------------------------------------------------------------
# Sizes, tiles and masks (pure Python)
# --------------------------------------------------------------------------------------------

def parse_count(text, flag):
    """A non-negative integer with an optional k/M/G (binary) suffix, as stripesim's CLI reads sizes."""
    multiplier = 1
    digits = text
    suffixes = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    if text and text[-1].lower() in suffixes:
        multiplier = suffixes[text[-1].lower()]
        digits = text[:-1]
    if not digits.isdigit() or not digits.isascii():
        raise UsageError(f"{flag} '{text}': expected a non-negative integer, optionally with a k, M or G suffix")
    return int(digits) * multiplier


def parse_tile(text):
    """'128' (square) or 'TQxTK'; returns (TQ, TK)."""
    parts = text.lower().split("x")
    if len(parts) == 1:
        parts = parts * 2
    if len(parts) != 2:
        raise UsageError(f"--tile '{text}': expected TQxTK or one size for a square tile")
    tq, tk = (parse_count(part, "--tile") for part in parts)
    if tq < 1 or tk < 1:
        raise UsageError(f"--tile '{text}': both sides must be at least 1")
    return tq, tk


class Mask:
    """A predicate on ORIGINAL positions (q, k), the vocabulary of stripesim's --mask. Every mask
    here lets query q see one interval of keys [lo, hi] (empty when lo > hi), which is what makes the
    block counter below exact without enumerating pairs."""

    def __init__(self, kind, seq_len, window=None, lengths=None, prefix=None):
        self.kind = kind
        self.seq_len = seq_len
        self.window = window
        self.lengths = lengths
        self.prefix = prefix
        self.starts = []
        if kind == "documents":
            start = 0
            for length in lengths:
                self.starts.append(start)
                start += length

    def spec(self):
        """The canonical --mask text written into workload.mask (integers, no suffixes)."""
        if self.kind == "window":
            return f"window:{self.window}"
        if self.kind == "prefix":
            return f"prefix:{self.prefix}"
        if self.kind == "documents":
            lengths = "documents:" + ",".join(str(length) for length in self.lengths)
            return lengths + (f":window={self.window}" if self.window else "")
        return self.kind

    def key_interval(self, q):
        """The inclusive range of original key positions query q may attend to."""
        if self.kind == "causal":
            return 0, q
        if self.kind == "bidirectional":
            return 0, self.seq_len - 1
        if self.kind == "window":
            return max(0, q - self.window + 1), q
        if self.kind == "prefix":  # the first P tokens see each other both ways
            return 0, max(q, self.prefix - 1)
        start = self.starts[bisect.bisect_right(self.starts, q) - 1]
        return (max(start, q - self.window + 1) if self.window else start), q

    def allows(self, q, k):
        lo, hi = self.key_interval(q)
        return lo <= k <= hi


def parse_mask(text, seq_len):
    if text in ("causal", "bidirectional"):
        return Mask(text, seq_len)
    if text.startswith("window:"):
        width = parse_count(text[len("window:"):], "--mask window:W")
        if width < 1:
            raise UsageError(f"--mask '{text}': the window must be at least 1 token")
        return Mask("window", seq_len, window=width)
    if text.startswith("prefix:"):
        length = parse_count(text[len("prefix:"):], "--mask prefix:P")
        if not 1 <= length <= seq_len:
            raise UsageError(f"--mask '{text}': the prefix must hold 1 to --seq-len {seq_len} tokens")
        return Mask("prefix", seq_len, prefix=length)
    if text.startswith("documents:"):
        body, window = text[len("documents:"):], None
        if ":window=" in body:  # a sliding window inside every document
            body, width = body.rsplit(":window=", 1)
            window = parse_count(width, "--mask documents:L1,L2,...:window=W")
            if window < 1:
                raise UsageError(f"--mask '{text}': the window must be at least 1 token")
        lengths = [parse_count(item, "--mask documents:L1,L2,...") for item in body.split(",")]
        if any(length < 1 for length in lengths):
            raise UsageError(f"--mask '{text}': every document must hold at least 1 token")
        if sum(lengths) != seq_len:
            raise UsageError(f"--mask '{text}': the lengths add up to {sum(lengths)}, they must add up to "
                             f"--seq-len {seq_len}")
        return Mask("documents", seq_len, window=window, lengths=lengths)
    raise UsageError(f"--mask '{text}': unknown mask, expected causal, bidirectional, window:W, prefix:P, "
                     "documents:L1,L2,... or documents:L1,L2,...:window=W")


# --------------------------------------------------------------------------------------------
# Layouts: positions[d][local] = original position (pure Python)
# --------------------------------------------------------------------------------------------

def contiguous_positions(n, devices):
    c = n // devices
    return [list(range(d * c, (d + 1) * c)) for d in range(devices)]


def striped_positions(n, devices):
    return [list(range(d, n, devices)) for d in range(devices)]


def zigzag_positions(n, devices):
    # 2N chunks of h = c/2; device d holds chunk d then chunk 2N-1-d, so every device gets one early
    # and one late chunk (Megatron DualChunkSwap, ring-flash-attention's zigzag).
    h = n // (2 * devices)
    return [list(range(d * h, (d + 1) * h)) + list(range((2 * devices - 1 - d) * h, (2 * devices - d) * h))
            for d in range(devices)]


def block_striped_positions(n, devices, stripe):
    blocks = [[] for _ in range(devices)]
    for t in range(n // stripe):
        blocks[t % devices].extend(range(t * stripe, (t + 1) * stripe))
    return blocks


def layout_positions(spec, n, devices):
    """Checks that the layout spec fits (n, N) and returns its positions; UsageError otherwise."""
    if n % devices != 0:
        raise UsageError(f"--seq-len {n}: must be divisible by --devices {devices}")
    c = n // devices
    if spec == "contiguous":
        return contiguous_positions(n, devices)
    if spec == "striped":
        return striped_positions(n, devices)
    if spec == "zigzag":
        if c % 2 != 0:
            raise UsageError(f"--layouts zigzag: c = n/N = {c} tokens per device must be even "
                             "(each device holds two chunks of c/2)")
        return zigzag_positions(n, devices)
    if spec.startswith("block-striped:"):
        stripe = parse_count(spec[len("block-striped:"):], "--layouts block-striped:S")
        if stripe < 1 or stripe > c or n % (stripe * devices) != 0:
            raise UsageError(f"--layouts {spec}: the stripe S must be between 1 and c = {c} and S*N must divide "
                             f"--seq-len {n}")
        return block_striped_positions(n, devices, stripe)
    raise UsageError(f"--layouts '{spec}': unknown layout, expected contiguous, striped, zigzag or block-striped:S")


def canonical_layout(spec):
    """block-striped:4k and block-striped:4096 are the same layout; files carry the integer form."""
    if spec.startswith("block-striped:"):
        return f"block-striped:{parse_count(spec[len('block-striped:'):], '--layouts block-striped:S')}"
    return spec


def ring_source(device, round_, devices):
    """At round r device d holds the K/V block that started on device (d - r) mod N."""
    return (device - round_) % devices


# --------------------------------------------------------------------------------------------
# Active blocks, counted in pure Python for cross-checking flex's BlockMask
# --------------------------------------------------------------------------------------------

def _blocks(positions, size):
    return [positions[i:i + size] for i in range(0, len(positions), size)]


def count_active_blocks(mask, q_positions, k_positions, tq, tk):
    """(query block, key block) pairs of a TQ x TK tiling of the local orders holding at least one
    allowed (q, k): what flex_attention's BlockMask keeps (full + partial) for one head."""
    q_blocks = _blocks(q_positions, tq)
    k_blocks = _blocks(k_positions, tk)
    if mask.kind == "bidirectional":
        return len(q_blocks) * len(k_blocks)
    if mask.kind == "causal":
        # A block holds an allowed pair iff its earliest key is not after its latest query.
        k_mins = sorted(min(block) for block in k_blocks)
        return sum(bisect.bisect_right(k_mins, max(block)) for block in q_blocks)
    # Window, prefix and documents: the union of the block's key intervals, merged, tested against each key
    # block's sorted positions by bisection; exact, and fast because the union has few pieces.
    sorted_k = [sorted(block) for block in k_blocks]
    active = 0
    for q_block in q_blocks:
        union = []
        for lo, hi in sorted(mask.key_interval(q) for q in q_block):
            if lo > hi:
                continue
            if union and lo <= union[-1][1] + 1:
                union[-1][1] = max(union[-1][1], hi)
            else:
                union.append([lo, hi])
        if not union:
            continue
        for keys in sorted_k:
            if keys[-1] < union[0][0] or keys[0] > union[-1][1]:
                continue
            for lo, hi in union:
                i = bisect.bisect_left(keys, lo)
                if i < len(keys) and keys[i] <= hi:
                    active += 1
                    break
    return active


def active_block_table(mask, positions, tq, tk):
    """active_blocks[r][d] for one layout."""
    devices = len(positions)
    return [[count_active_blocks(mask, positions[d], positions[ring_source(d, r, devices)], tq, tk)
             for d in range(devices)] for r in range(devices)]


# --------------------------------------------------------------------------------------------
# The sdpa call plan: ring-flash-attention's calls per (round, device) (pure Python)
# --------------------------------------------------------------------------------------------

SdpaCall = collections.namedtuple("SdpaCall", "causal q_start q_stop k_start k_stop")
SdpaCall.__doc__ = ("One scaled_dot_product_attention call on local query rows [q_start, q_stop) and local key "
                    "rows [k_start, k_stop); causal = is_causal (top-left aligned, so only on square calls).")

SDPA_PLAN_TEXT = {
    "contiguous": "contiguous: own block causal, earlier blocks full, later blocks skipped (no call, 0 us)",
    "striped": "striped: source <= device causal, source > device causal on q[1:] x k[:-1]",
    "zigzag": "zigzag: own block causal, earlier source all queries x first half of the keys, later source "
              "second half of the queries x all keys",
}


def sdpa_call(layout, device, source, c):
    """The call ring-flash-attention makes for device `device` holding the K/V of `source` under the
    causal mask, or None when the pair has no work (then no call at all)."""
    if layout == "contiguous":
        if source == device:
            return SdpaCall(True, 0, c, 0, c)
        return SdpaCall(False, 0, c, 0, c) if source < device else None
    if layout == "striped":
        if source <= device:
            return SdpaCall(True, 0, c, 0, c)
        # Key j sits at j*N + source > j*N + device, so query i sees keys j < i only: drop the first
        # query and the last key and the diagonal lines up again.
        return SdpaCall(True, 1, c, 0, c - 1) if c > 1 else None
    if layout == "zigzag":
        h = c // 2
        if source == device:
            return SdpaCall(True, 0, c, 0, c)
        if source < device:
            return SdpaCall(False, 0, c, 0, h)
        return SdpaCall(False, h, c, 0, c)
    raise UsageError(f"--layouts {layout}: --kernel sdpa supports only {', '.join(SDPA_LAYOUTS)}")


def sdpa_call_plan(layout, n, devices):
    """plan[r][d]: the SdpaCall of round r on device d, or None."""
    c = n // devices
    return [[sdpa_call(layout, d, ring_source(d, r, devices), c) for d in range(devices)] for r in range(devices)]


def sdpa_call_key(call):
    """What decides a call's time: causal or not, query and key lengths (not which rows it reads)."""
    return (call.causal, call.q_stop - call.q_start, call.k_stop - call.k_start)


def distinct_sdpa_calls(layouts, n, devices):
    """The distinct calls of every layout's plan, in first-seen order: timed once for the whole file,
    so that a call two layouts share gets one time in both and their speedup carries no
    run-to-run drift."""
    keys = []
    for layout in layouts:
        for row in sdpa_call_plan(layout, n, devices):
            for call in row:
                if call is not None and sdpa_call_key(call) not in keys:
                    keys.append(sdpa_call_key(call))
    return keys


# --------------------------------------------------------------------------------------------
# The document (pure Python)
# --------------------------------------------------------------------------------------------

def build_workload(seq_len, devices, heads, kv_heads, head_dim, batch, dtype, tile, mask, pass_):
    """workload in the key order of the files stripesim ships; tile is 'TQxTK' or None (sdpa picks
    its own tiles, so its files carry none)."""
    workload = {"seq_len": seq_len, "devices": devices, "heads": heads, "kv_heads": kv_heads,
                "head_dim": head_dim, "batch": batch, "dtype": dtype}
    if tile is not None:
        workload["tile"] = tile
    workload["pass"] = pass_
    workload["mask"] = mask
    return workload


def build_document(device, kernel, method, workload, layouts, torch_version=None, notes=None):
    """layouts: {name: {"us": [r][d], "active_blocks": [r][d] or absent/None}}. Checks that every
    table is N x N, so a half-filled run can never be written."""
    devices = workload["devices"]
    out_layouts = {}
    for name, tables in layouts.items():
        entry = {}
        for key in ("us", "active_blocks"):
            table = tables.get(key)
            if table is None:
                continue
            if len(table) != devices or any(len(row) != devices for row in table):
                raise ValueError(f"layout {name}: {key} must be {devices} rounds x {devices} devices")
            entry[key] = [[float(x) if key == "us" else int(x) for x in row] for row in table]
        if "us" not in entry:
            raise ValueError(f"layout {name}: no us table")
        out_layouts[name] = entry
    doc = {"schema": SCHEMA, "device": device, "kernel": kernel, "method": method}
    if torch_version is not None:
        doc["torch"] = torch_version
    doc["workload"] = workload
    doc["layouts"] = out_layouts
    if notes:
        doc["notes"] = notes
    return doc


def write_document(doc, path):
    """Written to a temporary file beside `path` and renamed, so a crash leaves no partial file."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".measure_kernels.", suffix=".tmp", dir=directory)
    # mkstemp makes the file private (0600); the measurements are data to share, so they get the
    # mode any new file would (0644 under the usual umask).
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(doc, out, indent=1)
            out.write("\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def timing_text(warmup, iters, passes=1, what="every distinct call"):
    timing = f"{warmup} warm-up calls, then the median of {iters} calls between CUDA events"
    if passes > 1:
        timing = f"{passes} passes over {what} in turn, each pass {timing}; the median of the passes"
    return timing


def flex_method(warmup, iters, tile, seed, passes=1):
    return ("One GPU plays every ring device in turn: each (round, device) attention call of the ring (queries of "
            "device d against the K/V block that started on device (d - r) mod N, mask on original positions) is "
            f"run alone; {timing_text(warmup, iters, passes, 'every call of every layout')}. fwdbwd times the "
            "forward plus the backward of that call "
            "(backward with a random output gradient). No communication is timed. flex_attention is compiled with "
            f"torch.compile; each call gets a BlockMask from create_block_mask with BLOCK_SIZE {tile} whose "
            "mask_mod reads the original positions of the queries and keys; active_blocks counts the blocks that "
            f"BlockMask keeps (full + partial) for one head. Random normal inputs, seed {seed}.")


def sdpa_method(warmup, iters, backend, layouts, seed, passes=1, kernel="sdpa"):
    plan = "; ".join(SDPA_PLAN_TEXT[name] for name in layouts)
    timing = timing_text(warmup, iters, passes)
    called = CALL_PLAN_FUNCTIONS[kernel] + (f" (backend {backend})" if kernel == "sdpa" else "")
    return (f"One GPU plays every ring device in turn, calling {called} the way ring-flash-attention drives "
            f"FlashAttention: {plan}. Each distinct call (causal "
            f"or not, query and key lengths) timed once for every layout of the file: {timing}; fwdbwd = forward + "
            "backward of that call (backward with a random output gradient). No communication is timed. Random "
            f"normal inputs, seed {seed}.")


# --------------------------------------------------------------------------------------------
# Command line (pure Python)
# --------------------------------------------------------------------------------------------

class OneLineParser(argparse.ArgumentParser):
    """argparse prints its usage and exits; the harnesses promise one line naming the flag instead
    (this file, host_sync_cost.py, retime_measurements.py)."""

    def error(self, message):
        raise UsageError(message)


def parse_positive(text, flag):
    """A count of at least 1 (parse_count's form)."""
    value = parse_count(text, flag)
    if value < 1:
        raise UsageError(f"{flag} {text}: must be at least 1")
    return value


def make_parser():
    parser = OneLineParser(prog="measure_kernels.py", description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", choices=KERNELS)
    parser.add_argument("--seq-len")
    parser.add_argument("--devices")
    parser.add_argument("--heads", default="16")
    parser.add_argument("--kv-heads", help="default: --heads")
    parser.add_argument("--head-dim", default="128")
    parser.add_argument("--batch", default="1")
    parser.add_argument("--dtype", default="bf16", choices=DTYPES)
    parser.add_argument("--mask", default="causal")
    parser.add_argument("--pass", dest="pass_", default="fwd", choices=PASSES)
    parser.add_argument("--layouts", default="contiguous,striped,zigzag")
    parser.add_argument("--tile", help="flex BlockMask BLOCK_SIZE, default 128 (128x128)")
    parser.add_argument("--warmup", default="3")
    parser.add_argument("--iters", default="10")
    parser.add_argument("--passes", default="3",
                        help="passes over every call in turn (flex: every call of every layout; sdpa, flash_attn, "
                             "fa3: the distinct calls), the median of the passes")
    parser.add_argument("--seed", default="0")
    parser.add_argument("--sdpa-backend", default="auto", choices=SDPA_BACKENDS)
    parser.add_argument("--notes")
    parser.add_argument("--out")
    parser.add_argument("--self-test", action="store_true")
    return parser


Config = collections.namedtuple(
    "Config", "kernel seq_len devices heads kv_heads head_dim batch dtype mask pass_ layouts positions tile "
              "warmup iters passes seed sdpa_backend notes out")


def parse_config(argv):
    """Every check on the input, before torch is imported and before anything is written."""
    args = make_parser().parse_args(argv)
    for flag, value in (("--kernel", args.kernel), ("--seq-len", args.seq_len), ("--devices", args.devices),
                        ("--out", args.out)):
        if value is None:
            raise UsageError(f"{flag}: required")

    n = parse_positive(args.seq_len, "--seq-len")
    devices = parse_positive(args.devices, "--devices")
    if n % devices != 0:
        raise UsageError(f"--seq-len {n}: must be divisible by --devices {devices}")
    c = n // devices
    heads = parse_positive(args.heads, "--heads")
    kv_heads = parse_positive(args.kv_heads, "--kv-heads") if args.kv_heads is not None else heads
    if heads % kv_heads != 0:
        raise UsageError(f"--kv-heads {kv_heads}: must divide --heads {heads}")
    head_dim = parse_positive(args.head_dim, "--head-dim")
    batch = parse_positive(args.batch, "--batch")
    # The first call of a configuration compiles (flex) or builds a plan (cuDNN): never time it.
    warmup = parse_positive(args.warmup, "--warmup")
    iters = parse_positive(args.iters, "--iters")
    passes = parse_positive(args.passes, "--passes")
    seed = parse_count(args.seed, "--seed")
    mask = parse_mask(args.mask, n)

    names = [canonical_layout(item) for item in args.layouts.split(",")]
    if any(not name for name in names):
        raise UsageError(f"--layouts '{args.layouts}': empty item in a comma-separated list")
    if len(set(names)) != len(names):
        raise UsageError(f"--layouts '{args.layouts}': a layout is listed twice")
    positions = {name: layout_positions(name, n, devices) for name in names}

    tile = None
    if args.kernel == "flex":
        tile = parse_tile(args.tile if args.tile is not None else "128")
        if c % tile[0] != 0 or c % tile[1] != 0:
            raise UsageError(f"--tile {tile[0]}x{tile[1]}: both sides must divide c = n/N = {c} tokens per device")
    else:
        kernel = args.kernel
        if args.tile is not None:
            raise UsageError(f"--tile: --kernel {kernel} picks its own tiles; the flag is for --kernel flex")
        if mask.kind != "causal":
            raise UsageError(f"--mask {mask.spec()}: --kernel {kernel} follows ring-flash-attention's causal call "
                             "plan; use --mask causal or --kernel flex")
        for name in names:
            if name not in SDPA_LAYOUTS:
                raise UsageError(f"--layouts {name}: --kernel {kernel} has a call plan only for "
                                 f"{', '.join(SDPA_LAYOUTS)}; use --kernel flex")
        if kernel != "sdpa" and args.dtype not in ("bf16", "fp16"):
            raise UsageError(f"--dtype {args.dtype}: --kernel {kernel} (the FlashAttention package) runs bf16 or fp16")
        if kernel != "sdpa" and (head_dim > 256 or head_dim % 8 != 0):
            raise UsageError(f"--head-dim {head_dim}: --kernel {kernel} takes head sizes that are multiples of 8, "
                             "up to 256")
    if args.kernel != "sdpa" and args.sdpa_backend != "auto":
        raise UsageError("--sdpa-backend: only for --kernel sdpa")
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        raise UsageError(f"--out {args.out}: the directory {out_dir} does not exist")
    return Config(args.kernel, n, devices, heads, kv_heads, head_dim, batch, args.dtype, mask, args.pass_, names,
                  positions, tile, warmup, iters, passes, seed, args.sdpa_backend, args.notes, args.out)


# --------------------------------------------------------------------------------------------
# Self-test (pure Python)
# --------------------------------------------------------------------------------------------

def self_test():
    """Returns a list of failures: every layout a bijection onto [0, n) with c positions per device,
    and every sdpa call plan square where it is causal and in range."""
    failures = []
    for n, devices in ((16, 2), (48, 4), (64, 4), (24, 3), (8, 8), (96, 6), (15, 5)):
        c = n // devices
        specs = ["contiguous", "striped"] + (["zigzag"] if c % 2 == 0 else []) + [
            f"block-striped:{s}" for s in range(1, c + 1) if n % (s * devices) == 0]
        for spec in specs:
            positions = layout_positions(spec, n, devices)
            flat = [p for block in positions for p in block]
            if sorted(flat) != list(range(n)) or any(len(block) != c for block in positions):
                failures.append(f"{spec} n={n} N={devices}: not a bijection with {c} positions per device")
            if spec in SDPA_LAYOUTS:
                for row in sdpa_call_plan(spec, n, devices):
                    for call in row:
                        if call is None:
                            continue
                        q_len, k_len = call.q_stop - call.q_start, call.k_stop - call.k_start
                        if not (0 <= call.q_start < call.q_stop <= c and 0 <= call.k_start < call.k_stop <= c):
                            failures.append(f"{spec} n={n} N={devices}: sdpa call {call} out of range")
                        if call.causal and q_len != k_len:
                            failures.append(f"{spec} n={n} N={devices}: causal sdpa call {call} is not square")
    # Every layout's calls are timed from one table: each call of each plan has its key there, once.
    keys = distinct_sdpa_calls(SDPA_LAYOUTS, 64, 4)
    if sorted(keys) != [(False, 8, 16), (False, 16, 8), (False, 16, 16), (True, 15, 15), (True, 16, 16)]:
        failures.append(f"distinct sdpa calls n=64 N=4: {keys}")
    return failures


# --------------------------------------------------------------------------------------------
# Timing (torch is imported here only)
# --------------------------------------------------------------------------------------------

def torch_version_tuple(version):
    numbers = []
    for part in version.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in part if ch.isdigit())
        numbers.append(int(digits) if digits else 0)
    return tuple(numbers)


def time_call(torch, run, warmup, iters):
    """Median microseconds of `run` between CUDA events after `warmup` untimed calls."""
    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    samples = []
    for _ in range(iters):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(samples)


def make_runner(torch, attend, q, k, v, pass_):
    """fwd: the attention call as a training forward makes it (grad mode on, so flex_attention also
    writes the log-sum-exp a ring needs to merge rounds); fwdbwd: the call and its backward with a
    fixed random output gradient (torch.autograd.grad, so no .grad accumulates between calls)."""
    if pass_ == "fwd":
        def run():
            attend(q, k, v)
        return run
    q, k, v = (t.detach().requires_grad_(True) for t in (q, k, v))
    grad = torch.randn_like(attend(q, k, v))

    def run():
        out = attend(q, k, v)
        torch.autograd.grad(out, (q, k, v), grad)
    return run


def measure(config):
    import torch

    # The FlashAttention package brings its own kernels and GQA; flex_attention and SDPA's enable_gqa need 2.5.
    if config.kernel in ("flex", "sdpa") and torch_version_tuple(torch.__version__) < MIN_TORCH:
        raise RuntimeError(f"PyTorch {torch.__version__} is too old: flex_attention and enable_gqa need >= 2.5")
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device is visible to PyTorch")
    cuda = torch.device("cuda", 0)
    torch.manual_seed(config.seed)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[config.dtype]
    n = config.seq_len

    def full(heads):
        return torch.randn(config.batch, heads, n, config.head_dim, device=cuda, dtype=dtype)

    if config.kernel in CALL_PLAN_KERNELS:
        timed = time_sdpa_calls(torch, config, cuda, dtype)
        layouts = {}
        for name in config.layouts:
            plan = sdpa_call_plan(name, n, config.devices)
            layouts[name] = {"us": [[0.0 if call is None else timed[sdpa_call_key(call)] for call in row] for row in plan]}
        return torch.__version__, torch.cuda.get_device_name(cuda), layouts
    q_full, k_full, v_full = full(config.heads), full(config.kv_heads), full(config.kv_heads)
    flex = FlexKernel(torch, config, cuda)
    runs, active = {}, {}
    for name in config.layouts:
        index = [torch.tensor(block, device=cuda, dtype=torch.int32) for block in config.positions[name]]
        # Each device's rows in its local order: the tensors a real ring would hold.
        local_q = [q_full.index_select(2, i).contiguous() for i in index]
        local_k = [k_full.index_select(2, i).contiguous() for i in index]
        local_v = [v_full.index_select(2, i).contiguous() for i in index]
        active[name] = flex.prepare(name, index, local_q, local_k, local_v, runs)
        print(f"measure_kernels.py: {name}'s block masks built", file=sys.stderr)
    timed = time_in_passes(torch, runs, config, before=flex.select)
    layouts = {name: {"us": [[timed[(name, r, d)] for d in range(config.devices)] for r in range(config.devices)],
                      "active_blocks": active[name]} for name in config.layouts}
    return torch.__version__, torch.cuda.get_device_name(cuda), layouts


class FlexKernel:
    """flex_attention under torch.compile with one BlockMask per (round, device) call.

    One mask_mod serves every call and layout: it reads the original positions of the call's queries
    and keys from two buffers refilled in place. torch.compile guards on the mask_mod and the
    tensors it captures, so a fresh closure per call would recompile each time and, past Dynamo's
    recompile limit, silently fall back to an eager kernel."""

    def __init__(self, torch, config, cuda):
        import functools

        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        self.torch = torch
        self.config = config
        c = config.seq_len // config.devices
        self.q_pos = torch.empty(c, device=cuda, dtype=torch.int32)
        self.k_pos = torch.empty(c, device=cuda, dtype=torch.int32)
        q_pos, k_pos, mask = self.q_pos, self.k_pos, config.mask
        if mask.kind == "documents":
            doc_of = torch.repeat_interleave(torch.arange(len(mask.lengths), device=cuda, dtype=torch.int32),
                                             torch.tensor(mask.lengths, device=cuda))

            if mask.window:
                width = mask.window

                def mask_mod(b, h, q_idx, kv_idx):
                    qp, kp = q_pos[q_idx], k_pos[kv_idx]
                    return (kp <= qp) & (doc_of[kp] == doc_of[qp]) & (qp - kp < width)
            else:
                def mask_mod(b, h, q_idx, kv_idx):
                    qp, kp = q_pos[q_idx], k_pos[kv_idx]
                    return (kp <= qp) & (doc_of[kp] == doc_of[qp])
        elif mask.kind == "window":
            width = mask.window

            def mask_mod(b, h, q_idx, kv_idx):
                qp, kp = q_pos[q_idx], k_pos[kv_idx]
                return (kp <= qp) & (qp - kp < width)
        elif mask.kind == "causal":
            def mask_mod(b, h, q_idx, kv_idx):
                return k_pos[kv_idx] <= q_pos[q_idx]
        elif mask.kind == "prefix":
            length = mask.prefix

            def mask_mod(b, h, q_idx, kv_idx):
                qp, kp = q_pos[q_idx], k_pos[kv_idx]
                return (kp <= qp) | (kp < length)
        else:
            def mask_mod(b, h, q_idx, kv_idx):
                return k_pos[kv_idx] >= 0
        dynamo = torch._dynamo.config
        for limit in ("recompile_limit", "cache_size_limit"):
            if hasattr(dynamo, limit):
                setattr(dynamo, limit, max(getattr(dynamo, limit), 64))
                break
        # Compiled mask creation never materialises the c x c mask. PyTorch 2.5 needs the _compile flag
        # (it traces the mask_mod's tensor indexing itself); from 2.6 the flag is deprecated and
        # torch.compile(create_block_mask) is the supported way.
        if torch_version_tuple(torch.__version__) < (2, 6):
            build = functools.partial(create_block_mask, _compile=True)
        else:
            build = torch.compile(create_block_mask)
        tq, tk = config.tile
        self.block_mask = lambda: build(mask_mod, None, None, c, c, device=cuda, BLOCK_SIZE=(tq, tk))
        self.attention = torch.compile(flex_attention, dynamic=False)
        self.positions = {}  # (layout, round, device) -> (query positions, key positions)

    def prepare(self, layout, index, local_q, local_k, local_v, runs):
        """Adds a runner for every (round, device) call of `layout` to `runs`, keyed (layout, round,
        device), and returns the layout's active_blocks table. The call's positions are kept for
        `select`, which loads them before the call is timed: the kernel evaluates the mask_mod on
        partial blocks, and the mask_mod reads the position buffers when the kernel runs."""
        torch, config = self.torch, self.config
        gqa = config.kv_heads != config.heads
        active = [[0] * config.devices for _ in range(config.devices)]
        for r in range(config.devices):
            for d in range(config.devices):
                s = ring_source(d, r, config.devices)
                self.positions[(layout, r, d)] = (index[d], index[s])
                self.select((layout, r, d))
                block_mask = self.block_mask()
                # kv_num_blocks counts the partial blocks of each query-block row, full_kv_num_blocks the
                # full ones; one head and batch entry (the mask is the same for all).
                kept = block_mask.kv_num_blocks[0, 0].sum()
                if block_mask.full_kv_num_blocks is not None:
                    kept = kept + block_mask.full_kv_num_blocks[0, 0].sum()
                active[r][d] = int(kept.item())

                def attend(q, k, v, block_mask=block_mask):
                    if gqa:
                        return self.attention(q, k, v, block_mask=block_mask, enable_gqa=True)
                    return self.attention(q, k, v, block_mask=block_mask)

                runs[(layout, r, d)] = make_runner(torch, attend, local_q[d], local_k[s], local_v[s], config.pass_)
        return active

    def select(self, key):
        q_index, k_index = self.positions[key]
        self.q_pos.copy_(q_index)
        self.k_pos.copy_(k_index)


def sdpa_attention(config):
    """(attend(q, k, v, causal), heads_first): SDPA on (batch, heads, length, head_dim) tensors."""
    import contextlib

    import torch.nn.functional as F

    if config.sdpa_backend == "auto":
        scope = contextlib.nullcontext
    else:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        chosen = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                  "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}[config.sdpa_backend]

        def scope():
            return sdpa_kernel(chosen)

    extra = {"enable_gqa": True} if config.kv_heads != config.heads else {}

    def attend(q, k, v, causal):
        with scope():
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, **extra)
    return attend, True


def flash_package_attention(kernel):
    """(attend(q, k, v, causal), heads_first) for the FlashAttention package, which takes (batch,
    length, heads, head_dim) tensors and K/V heads that divide the query heads as they are (GQA);
    FlashAttention-3 builds return (out, lse) or out, depending on the version."""
    module = FLASH_PACKAGE_MODULES[kernel]
    try:
        package = __import__(module)
    except ImportError as error:
        raise RuntimeError(f"--kernel {kernel} needs the {module} module (the FlashAttention package"
                           f"{'' if kernel == 'flash_attn' else ', its hopper/ build'}): {error}") from error

    def attend(q, k, v, causal):
        out = package.flash_attn_func(q, k, v, causal=causal)
        return out[0] if isinstance(out, tuple) else out
    return attend, False


def package_version(kernel):
    """The timed package's name and version for the file's "kernel" text."""
    if kernel == "sdpa":
        return None
    module = FLASH_PACKAGE_MODULES[kernel]
    package = sys.modules.get(module)
    return f"{module} {getattr(package, '__version__', '(no version)')}"


def time_sdpa_calls(torch, config, cuda, dtype):
    """{call key: microseconds} for every distinct call of the file's layouts on the call-plan kernel
    (sdpa, flash_attn, fa3), timed by time_in_passes."""
    attention, heads_first = (sdpa_attention(config) if config.kernel == "sdpa"
                              else flash_package_attention(config.kernel))
    runs = {}
    for causal, q_len, k_len in distinct_sdpa_calls(config.layouts, config.seq_len, config.devices):
        # Fresh contiguous tensors of the call's shape, as a ring implementation hands the kernel its halves.
        def tensor(heads, length):
            shape = (config.batch, heads, length, config.head_dim) if heads_first else (
                config.batch, length, heads, config.head_dim)
            return torch.randn(*shape, device=cuda, dtype=dtype)

        q, k, v = tensor(config.heads, q_len), tensor(config.kv_heads, k_len), tensor(config.kv_heads, k_len)

        def attend(q, k, v, causal=causal):
            return attention(q, k, v, causal)

        runs[(causal, q_len, k_len)] = make_runner(torch, attend, q, k, v, config.pass_)
    return time_in_passes(torch, runs, config)


def time_in_passes(torch, runs, config, before=None):
    """{key: microseconds} for every runner of `runs`: --passes passes over all of them in turn, so
    clock drift or a slow stretch during the run spreads over every call alike instead of landing on
    the few timed at that moment; the median of the passes' medians. `before(key)`, if given, runs
    untimed ahead of each key's timing."""
    samples = {key: [] for key in runs}
    for p in range(config.passes):
        for key, run in runs.items():
            if before is not None:
                before(key)
            samples[key].append(time_call(torch, run, config.warmup, config.iters))
        print(f"measure_kernels.py: pass {p + 1} of {config.passes} done", file=sys.stderr)
    return {key: statistics.median(values) for key, values in samples.items()}


def harness_main(name, argv, self_test_, parse, run):
    """The timing harnesses' entry (this file, host_sync_cost.py): `--self-test` alone runs
    `self_test_` (exit 1 on a failure, without PyTorch); bad input from `parse(argv)` is one line
    naming the flag, exit 2; else `run(config)`'s exit status, 1 where PyTorch or the GPU fails."""
    if "--self-test" in argv:
        if len(argv) != 1:
            print(f"{name}: --self-test: takes no other flags", file=sys.stderr)
            return 2
        failures = self_test_()
        for failure in failures:
            print(f"{name} --self-test: {failure}", file=sys.stderr)
        return 1 if failures else 0
    try:
        config = parse(argv)
    except UsageError as error:
        print(f"{name}: {error}", file=sys.stderr)
        return 2
    try:
        return run(config)
    except ImportError as error:
        print(f"{name}: timing needs PyTorch with CUDA (>= 2.5 for flex and sdpa): {error}", file=sys.stderr)
        return 1
    except RuntimeError as error:
        print(f"{name}: {error}", file=sys.stderr)
        return 1


def main(argv):
    return harness_main("measure_kernels.py", argv, self_test, parse_config, time_and_write)


def time_and_write(config):
    torch_version, device, layouts = measure(config)
    tile = f"{config.tile[0]}x{config.tile[1]}" if config.tile else None
    if config.kernel == "flex":
        kernel = f"torch {torch_version} flex_attention (torch.compile), BlockMask {tile}"
        method = flex_method(config.warmup, config.iters, tile, config.seed, config.passes)
    elif config.kernel == "sdpa":
        kernel = (f"torch {torch_version} scaled_dot_product_attention ({config.sdpa_backend} backend), "
                  "ring-flash-attention call pattern")
        method = sdpa_method(config.warmup, config.iters, config.sdpa_backend, config.layouts, config.seed, config.passes)
    else:
        kernel = (f"{package_version(config.kernel)} flash_attn_func (torch {torch_version}), "
                  "ring-flash-attention call pattern")
        method = sdpa_method(config.warmup, config.iters, config.sdpa_backend, config.layouts, config.seed, config.passes,
                             kernel=config.kernel)
    workload = build_workload(config.seq_len, config.devices, config.heads, config.kv_heads, config.head_dim,
                              config.batch, config.dtype, tile, config.mask.spec(), config.pass_)
    doc = build_document(device, kernel, method, workload, layouts, torch_version=torch_version, notes=config.notes)
    write_document(doc, config.out)
    print(f"measure_kernels.py: wrote {config.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
