#!/usr/bin/env python3
"""Measure the peak memory of an unfused cross-entropy over FP32-upcast logits, per logit.

    pred = x @ w.T                               # BF16 logits, as the output layer makes them
    loss = F.cross_entropy(pred.float(), targets)
    del pred                                     # freed before the backward pass, as torchtitan does
    loss.backward()

On a CPU, PyTorch's large tensors come from mmap and go back to the system when freed, so the
process's resident memory follows the live tensors. Each case runs in a fresh process (with glibc's
mmap threshold pinned low, so that no freed buffer stays in the heap); just before the loss it
resets the kernel's high-water mark (/proc/self/clear_refs) and reads the resident memory, and the
peak is the high-water mark (VmHWM) above that baseline. Linux only.
Expect about 10 bytes per logit at the forward pass's peak (BF16 logits, their FP32 copy and the
FP32 log-softmax) and 12 in the backward pass (the saved log-softmax, its gradient and its input's
gradient); trainmem's "fp32-upcast" loss counts 12. Only dependency: torch.
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

import torch
import torch.nn.functional as F


MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc raises its threshold after frees; pin it


def status_bytes(field):
    """VmRSS or VmHWM of this process, in bytes, from /proc/self/status (reported in kB)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise SystemExit("no %s in /proc/self/status: this needs Linux" % field)


def reset_peak():
    """Resets VmHWM to the current resident memory (Linux >= 4.0)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def one_case(tokens, vocab, hidden, keep_logits):
    """Runs in its own process: prints one JSON line with the case's peaks above the baseline."""
    torch.manual_seed(0)
    x = torch.randn(tokens, hidden, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(vocab, hidden, dtype=torch.bfloat16, requires_grad=True)
    targets = torch.randint(0, vocab, (tokens,))
    # Warm the kernels up on a small problem, so that their code and workspaces are resident.
    F.cross_entropy((x[:8] @ w[:64].t()).float(), targets[:8] % 64).backward()
    x.grad = None
    w.grad = None
    reset_peak()
    base = status_bytes("VmRSS")
    pred = x @ w.t()
    loss = F.cross_entropy(pred.float(), targets)
    if not keep_logits:
        del pred
    forward = status_bytes("VmHWM")
    loss.backward()
    overall = status_bytes("VmHWM")
    logits = tokens * vocab
    print(json.dumps(dict(
        tokens=tokens, vocab=vocab, hidden=hidden, logits=logits,
        bf16_logits_kept_through_backward=keep_logits,
        forward_peak_bytes=forward - base, peak_bytes=overall - base,
        forward_peak_bytes_per_logit=(forward - base) / logits,
        peak_bytes_per_logit=(overall - base) / logits,
    )))


def fresh_process_case(argv):
    """Runs a case's script (argv) in a fresh process, glibc's mmap threshold pinned: its JSON line."""
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_=str(MMAP_THRESHOLD_BYTES))
    out = subprocess.run([sys.executable] + argv, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def write_table(path, tool, settings, cases):
    """The committed JSON table: the tool, where it ran, its settings and its cases (to `path`, if any)."""
    table = dict(
        tool=tool,
        environment=dict(
            date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            torch=torch.__version__, host_python=platform.python_version(), platform=platform.platform(),
            device="cpu", command=" ".join([sys.executable] + sys.argv),
        ),
        settings=dict(settings,
                      statistic="peak resident memory (VmHWM, reset just before) above the resident memory then (VmRSS)",
                      malloc_mmap_threshold_bytes=MMAP_THRESHOLD_BYTES),
        cases=cases,
    )
    if path:
        with open(path, "w") as f:
            json.dump(table, f, indent=2)
            f.write("\n")
        print("# wrote %s" % path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--hidden", type=int, default=64, help="the output layer's input width (small: its memory is not the point)")
    ap.add_argument("--out", help="write the JSON table to this file")
    ap.add_argument("--one-case", choices=["del", "keep"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one_case:
        one_case(args.tokens, args.vocab, args.hidden, args.one_case == "keep")
        return
    cases = []
    for mode in ("del", "keep"):
        cases.append(fresh_process_case(
            [__file__, "--tokens", str(args.tokens), "--vocab", str(args.vocab), "--hidden", str(args.hidden),
             "--one-case", mode]))
        c = cases[-1]
        print("BF16 logits %s: forward peak %.2f B/logit, peak %.2f B/logit" % (
            "kept" if c["bf16_logits_kept_through_backward"] else "freed", c["forward_peak_bytes_per_logit"],
            c["peak_bytes_per_logit"]))
    write_table(args.out, "trainmem scripts/measure/loss_peak.py",
                dict(tokens=args.tokens, vocab=args.vocab, hidden=args.hidden,
                     loss="F.cross_entropy(pred.float(), targets)"),
                cases)


if __name__ == "__main__":
    main()
