#!/usr/bin/env python3
"""Times again, on this machine's GPU, the workloads of existing stripesim.measurements/1 files:
for each FILE the same kernel (flex, sdpa with its backend, flash_attn or fa3), workload and layouts,
through bench/measure_kernels.py in this one process (torch.compile's caches carry from one file to
the next), with --passes passes over every call. A file timed once, call after call, cannot tell a
slow stretch of the GPU from the kernel; retimed in interleaved passes it can, and the two files
side by side say how far one GPU repeats itself.

Usage: python3 bench/retime_measurements.py --out-dir DIR [--passes 3] [--check] FILE...
  --check  only build and check every file's command line (no PyTorch needed): what CI runs.

Each FILE's retimed copy is DIR/<its name>. Bad input (a missing or malformed file, a kernel or
workload measure_kernels.py cannot time again, two FILEs of one name, DIR missing): one line,
exit 2, nothing timed.
"""
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure_kernels  # noqa: E402  (the harness beside this file)


def kernel_flags(text):
    """measure_kernels.py's --kernel (and --sdpa-backend) for a file's "kernel" text, as the harness
    writes it (measure_kernels.main)."""
    if " flex_attention " in f" {text} ":
        return ["--kernel", "flex"]
    marker = "scaled_dot_product_attention ("
    if marker in text:
        backend = text.split(marker, 1)[1].split(" backend)", 1)[0]
        return ["--kernel", "sdpa", "--sdpa-backend", backend]
    for kernel, module in measure_kernels.FLASH_PACKAGE_MODULES.items():
        if text.startswith(module + " "):
            return ["--kernel", kernel]
    raise measure_kernels.UsageError(f"kernel '{text}': not one measure_kernels.py writes (flex_attention, "
                                     "scaled_dot_product_attention, flash_attn, flash_attn_interface)")


def retime_argv(doc, out, passes):
    """The measure_kernels.py command line that times `doc`'s workload and layouts again into `out`."""
    if doc.get("schema") != measure_kernels.SCHEMA:
        raise measure_kernels.UsageError(f"schema '{doc.get('schema')}': expected {measure_kernels.SCHEMA}")
    w = doc["workload"]
    argv = kernel_flags(doc["kernel"]) + [
        "--seq-len", str(w["seq_len"]), "--devices", str(w["devices"]), "--heads", str(w["heads"]),
        "--kv-heads", str(w["kv_heads"]), "--head-dim", str(w["head_dim"]), "--batch", str(w["batch"]),
        "--dtype", w["dtype"], "--mask", w["mask"], "--pass", w["pass"],
        "--layouts", ",".join(doc["layouts"]), "--passes", str(passes), "--out", out]
    if w.get("tile"):
        argv += ["--tile", w["tile"]]
    return argv


def checked_argv(path, out_dir, passes):
    """retime_argv for the file at `path`, checked: measure_kernels.py parses it, and the workload it
    would write equals the file's, field for field."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as error:
        raise measure_kernels.UsageError(f"{path}: cannot be read as JSON ({error})") from error
    try:
        argv = retime_argv(doc, os.path.join(out_dir, os.path.basename(path)), passes)
        config = measure_kernels.parse_config(argv)
    except (KeyError, TypeError, AttributeError) as error:
        raise measure_kernels.UsageError(f"{path}: not a measurements file (missing {error})") from error
    except measure_kernels.UsageError as error:
        raise measure_kernels.UsageError(f"{path}: {error}") from error
    tile = f"{config.tile[0]}x{config.tile[1]}" if config.tile else None
    again = measure_kernels.build_workload(config.seq_len, config.devices, config.heads, config.kv_heads,
                                           config.head_dim, config.batch, config.dtype, tile, config.mask.spec(),
                                           config.pass_)
    if again != doc["workload"]:
        raise measure_kernels.UsageError(f"{path}: its workload would be timed as {again}, not {doc['workload']}")
    return argv


def main(argv):
    parser = measure_kernels.OneLineParser(prog="retime_measurements.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--passes", default="3")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("files", nargs="+", metavar="FILE")
    try:
        args = parser.parse_args(argv)
        if not os.path.isdir(args.out_dir):
            raise measure_kernels.UsageError(f"--out-dir {args.out_dir}: no such directory")
        names = [os.path.basename(path) for path in args.files]
        for name in names:
            if names.count(name) > 1:
                raise measure_kernels.UsageError(f"{name}: given twice (as {', '.join(p for p in args.files if os.path.basename(p) == name)}); "
                                                 "each retimed copy is --out-dir/NAME, so one would overwrite the other")
        commands = [checked_argv(path, args.out_dir, args.passes) for path in args.files]
    except measure_kernels.UsageError as error:
        print(f"retime_measurements.py: {error}", file=sys.stderr)
        return 2
    if args.check:
        for command in commands:
            print("bench/measure_kernels.py " + " ".join(command))
        return 0
    failed = 0
    for path, command in zip(args.files, commands):
        print(f"retime_measurements.py: {path}", file=sys.stderr)
        torch = sys.modules.get("torch")
        if torch is not None:
            # Each file compiles flex_attention for its own mask_mod: cleared between files, the
            # compiled variants cannot pile up to Dynamo's recompile limit, past which it would
            # fall back to the eager kernel without a word (its on-disk caches still apply).
            torch._dynamo.reset()
        if measure_kernels.main(command) != 0:
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
