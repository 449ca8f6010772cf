"""The timing harnesses' PyTorch paths (bench/measure_kernels.py, retime_measurements.py,
host_sync_cost.py) run end to end on a stand-in for torch: every torch call returns a mock and
every CUDA event pair measures 0.25 ms. Nothing is timed; what is checked is the harnesses' own
code on the way to the GPU, which CI cannot otherwise run: that each flag reaches the call it
should (flex_attention's block mask and enable_gqa, SDPA's backend and causal flag, the backward),
that every call is timed in every pass with its positions loaded first, that the files written
carry the requested workload and are readable by others, and that retimed files reproduce their
originals' workloads. Run by CTest: test_bench_stand_in_torch.py SOURCE_DIR."""
import json
import os
import shutil
import stat
import sys
import tempfile
import types
from unittest import mock

source = sys.argv[1]
sys.dont_write_bytecode = True
failures = []
checks = 0


def expect(condition, message):
    global checks
    checks += 1
    if not condition:
        failures.append(message)


def stand_in_torch():
    torch = mock.MagicMock(name="torch")
    torch.__version__ = "2.6.0+stand-in"
    torch.cuda.is_available.return_value = True
    torch.cuda.get_device_name.return_value = "Stand-in GPU"
    torch.cuda.Event.return_value.elapsed_time.return_value = 0.25  # milliseconds
    torch.compile.side_effect = lambda fn, **options: fn
    torch._dynamo.config = types.SimpleNamespace(recompile_limit=8)
    flex_module = mock.MagicMock(name="torch.nn.attention.flex_attention")
    torch.nn.attention.flex_attention = flex_module
    sys.modules.update({"torch": torch, "torch.nn": torch.nn, "torch.nn.functional": torch.nn.functional,
                        "torch.nn.attention": torch.nn.attention, "torch.nn.attention.flex_attention": flex_module})
    return torch, flex_module


torch, flex_module = stand_in_torch()
sys.path.insert(0, os.path.join(source, "bench"))
import host_sync_cost  # noqa: E402
import measure_kernels  # noqa: E402
import retime_measurements  # noqa: E402

TIMED_US = 250.0
out = tempfile.mkdtemp()
umask = os.umask(0)
os.umask(umask)


def load(name):
    path = os.path.join(out, name)
    expect(stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~umask, f"{name}: written private, not with the umask's mode")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def run(main, argv):
    torch.reset_mock()
    flex_module.reset_mock()
    rc = main(argv)
    expect(rc == 0, f"{argv}: exit {rc}")
    return rc


# (a) flex, a window on 2 devices, 2 passes of 2 timed calls: every (round, device) call timed in
# each pass, its positions loaded before it, the BlockMask at the requested tile.
run(measure_kernels.main, ["--kernel", "flex", "--seq-len", "1024", "--devices", "2", "--heads", "2",
                           "--mask", "window:256", "--tile", "64x128", "--passes", "2", "--iters", "2",
                           "--warmup", "1", "--out", os.path.join(out, "flex.json")])
doc = load("flex.json")
expect(doc["workload"] == {"seq_len": 1024, "devices": 2, "heads": 2, "kv_heads": 2, "head_dim": 128, "batch": 1,
                           "dtype": "bf16", "tile": "64x128", "pass": "fwd", "mask": "window:256"},
       f"flex workload: {doc['workload']}")
for layout in ("contiguous", "striped", "zigzag"):
    expect(doc["layouts"][layout]["us"] == [[TIMED_US] * 2] * 2, f"flex {layout}: {doc['layouts'][layout]['us']}")
calls = 3 * 2 * 2  # layouts x rounds x devices
expect(torch.cuda.Event.call_count == 2 * calls * 2 * 2, f"CUDA events: {torch.cuda.Event.call_count}")
masks = flex_module.create_block_mask.call_args_list
expect(len(masks) == calls, f"create_block_mask: {len(masks)} calls for {calls}")
expect(all(c.args[1:] == (None, None, 512, 512) and c.kwargs.get("BLOCK_SIZE") == (64, 128) for c in masks),
       f"create_block_mask arguments: {masks[:1]}")
attention = flex_module.flex_attention.call_args_list
expect(len(attention) == calls * 2 * (1 + 2), f"flex_attention: {len(attention)} calls")
expect(all("block_mask" in c.kwargs and "enable_gqa" not in c.kwargs for c in attention), "flex_attention: keywords")
# The position buffers: refilled once per call while the masks are built, then before each timing.
q_pos = torch.empty.return_value
expect(q_pos.copy_.call_count == 2 * (calls + calls * 2), f"position loads: {q_pos.copy_.call_count}")

# (b) flex forward + backward with grouped K/V heads over packed documents.
run(measure_kernels.main, ["--kernel", "flex", "--seq-len", "1024", "--devices", "2", "--heads", "4", "--kv-heads", "2",
                           "--mask", "documents:512,512", "--pass", "fwdbwd", "--layouts", "zigzag", "--passes", "1",
                           "--iters", "2", "--warmup", "1", "--out", os.path.join(out, "flex-fwdbwd.json")])
expect(load("flex-fwdbwd.json")["workload"]["mask"] == "documents:512,512", "flex fwdbwd: mask")
attention = flex_module.flex_attention.call_args_list
expect(attention and all(c.kwargs.get("enable_gqa") is True for c in attention), "flex with GQA: enable_gqa=True")
expect(torch.autograd.grad.call_count == 4 * (1 + 2), f"backward calls: {torch.autograd.grad.call_count}")

# (b') flex over packed documents with a sliding window inside each: the spec kept whole.
run(measure_kernels.main, ["--kernel", "flex", "--seq-len", "1024", "--devices", "2", "--heads", "4",
                           "--mask", "documents:512,512:window=300", "--layouts", "striped", "--passes", "1",
                           "--iters", "2", "--warmup", "1", "--out", os.path.join(out, "flex-doc-window.json")])
expect(load("flex-doc-window.json")["workload"]["mask"] == "documents:512,512:window=300", "flex windowed documents: mask")

# (b'') flex under a prefix-LM mask: the spec kept, a BlockMask built for every (round, device) call.
run(measure_kernels.main, ["--kernel", "flex", "--seq-len", "1024", "--devices", "2", "--heads", "4",
                           "--mask", "prefix:768", "--layouts", "contiguous", "--passes", "1",
                           "--iters", "2", "--warmup", "1", "--out", os.path.join(out, "flex-prefix.json")])
expect(load("flex-prefix.json")["workload"]["mask"] == "prefix:768", "flex prefix: mask")
expect(len(flex_module.create_block_mask.call_args_list) == 2 * 2, "flex prefix: a BlockMask a call")

# (c) SDPA on its flash backend, ring-flash-attention's calls: the backend chosen around each call,
# causal and full calls, no call (0 us) where contiguous skips a later block.
run(measure_kernels.main, ["--kernel", "sdpa", "--sdpa-backend", "flash", "--seq-len", "1024", "--devices", "4",
                           "--heads", "4", "--kv-heads", "2", "--iters", "2", "--warmup", "1", "--passes", "1",
                           "--out", os.path.join(out, "sdpa.json")])
doc = load("sdpa.json")
for layout in ("contiguous", "striped", "zigzag"):
    plan = measure_kernels.sdpa_call_plan(layout, 1024, 4)
    want = [[0.0 if call is None else TIMED_US for call in row] for row in plan]
    expect(doc["layouts"][layout]["us"] == want, f"sdpa {layout}: {doc['layouts'][layout]['us']}")
backends = {c.args[0] for c in torch.nn.attention.sdpa_kernel.call_args_list}
expect(backends == {torch.nn.attention.SDPBackend.FLASH_ATTENTION}, f"sdpa backends: {backends}")
sdpa = torch.nn.functional.scaled_dot_product_attention.call_args_list
expect({c.kwargs.get("is_causal") for c in sdpa} == {True, False}, "sdpa: causal and full calls")
expect(all(c.kwargs.get("enable_gqa") is True for c in sdpa), "sdpa with GQA: enable_gqa=True")

# (d) Two shipped files timed again: same workloads, Dynamo reset before each.
shipped = [os.path.join(source, "configs", "measurements", "h100", "flex", "causal-fwd-n16384-N2.json"),
           os.path.join(source, "configs", "measurements", "h100", "fa2", "causal-fwd-n32768-N4.json")]
run(retime_measurements.main, ["--out-dir", out, "--passes", "1"] + shipped)
expect(torch._dynamo.reset.call_count == len(shipped), f"Dynamo resets: {torch._dynamo.reset.call_count}")
for path in shipped:
    with open(path, encoding="utf-8") as f:
        original = json.load(f)
    again = load(os.path.basename(path))
    expect(again["workload"] == original["workload"] and list(again["layouts"]) == list(original["layouts"]),
           f"retimed {path}: {again['workload']}")

# (e) The host-mask benchmark: a line per rank, both ways of picking halves timed.
hs = os.path.join(out, "host-sync.json")
run(host_sync_cost.main, ["--devices", "4", "--documents", "512,256", "--heads", "4", "--kv-heads", "2",
                          "--iters", "2", "--warmup", "1", "--out", hs])
with open(hs, encoding="utf-8") as f:
    ranks = json.load(f)["ranks"]
expect([r["masked_ops"] for r in ranks] == [host_sync_cost.masked_ops(k, 4, [512, 256]) for k in range(4)],
       f"host sync masked operations: {ranks}")
expect(all(r["host_masks_us"] == r["device_indices_us"] == TIMED_US for r in ranks), "host sync: both ways timed")
expect(torch.zeros.call_args_list and all(c.kwargs == {"dtype": torch.bool} for c in torch.zeros.call_args_list),
       f"host sync: the masks are built on the host: {torch.zeros.call_args_list}")

shutil.rmtree(out)
for failure in failures:
    print(f"FAIL: {failure}")
print(f"{checks - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
