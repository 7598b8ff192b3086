#!/usr/bin/env python3
"""Measure the peak memory of TRL's GRPO loss over the completions' logits, on a CPU.

The operations of TRL's GRPOTrainer._compute_loss through _get_per_token_logps_and_entropies
(compute_entropy=True, the entropy under no_grad), selective_log_softmax and entropy_from_logits
(trl/trainer/grpo_trainer.py and trl/trainer/utils.py, TRL f2cd5771, after v1.9.0), written out
in the same order on the same shapes, as transformers' Trainer runs them through accelerate:

    logits = F.linear(hidden[:, -(C + 1):, :], w)        # transformers' logits_to_keep = C + 1
    logits = logits.float()                                # accelerate's convert_outputs_to_fp32
                                                           # (bf16 autocast); not without autocast
    logits = logits[:, :-1, :][:, -C:, :]
    logits.div_(temperature)                               # in place, on a view
    FP32 logits: gather, and a logsumexp per sequence      # selective_log_softmax's FP32 branch
    BF16 logits: a log_softmax per sequence, gathered      # its BF16 branch (no autocast)
    entropy under no_grad: logits.reshape(-1, V) in chunks of 128 rows, log_softmax, exp, product
    the clipped GRPO loss over the (B, C) log-probabilities, then backward

On a CPU (with loss_peak.py's process, peak and table), PyTorch's large tensors come from mmap and go back to the system when freed, so the
process's resident memory follows the live tensors (as in loss_peak.py). Each case runs in a fresh
process with glibc's mmap threshold pinned low; just before the output layer it resets the
kernel's high-water mark (/proc/self/clear_refs) and reads the resident memory, and the peak is the
high-water mark (VmHWM) above that baseline. Linux only. Only dependency: torch. What it checks is
trainmem's replay of this code (stack_loss.cpp, grpo_loss), not TRL on a GPU.
"""

import argparse
import json

import torch
import torch.nn.functional as F

from loss_peak import fresh_process_case, reset_peak, status_bytes, write_table


ENTROPY_CHUNK_ROWS = 128           # entropy_from_logits' chunk_size


def per_token_logps_and_entropies(hidden, w, ids, completion, convert):
    """The output layer over the last C + 1 positions, the log-probabilities and the entropy."""
    logits = F.linear(hidden[:, -(completion + 1):, :], w)
    if convert:
        logits = logits.float()
    logits = logits[:, :-1, :]
    logits = logits[:, -completion:, :]
    logits.div_(0.7)
    index = ids.unsqueeze(-1)
    if logits.dtype == torch.float32:
        selected = torch.gather(logits, dim=-1, index=index)
        lse = torch.stack([torch.logsumexp(lg, dim=-1) for lg in logits])
        logps = (selected - lse.unsqueeze(-1)).squeeze(-1)
    else:
        rows = [F.log_softmax(lg, dim=-1).gather(dim=-1, index=i) for lg, i in zip(logits, index)]
        logps = torch.stack(rows).squeeze(-1)
    with torch.no_grad():
        flat = logits.reshape(-1, logits.size(-1))
        parts = []
        for chunk in flat.split(ENTROPY_CHUNK_ROWS, dim=0):
            chunk_logps = F.log_softmax(chunk, dim=-1)
            parts.append(-(torch.exp(chunk_logps) * chunk_logps).sum(-1))
        entropies = torch.cat(parts).reshape(logps.shape)
    return logps, entropies


def one_case(sequences, length, completion, vocab, hidden_width, convert):
    """Runs in its own process: prints one JSON line with the case's peaks above the baseline."""
    torch.manual_seed(0)
    hidden = torch.randn(sequences, length, hidden_width, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(vocab, hidden_width, dtype=torch.bfloat16, requires_grad=True)
    ids = torch.randint(0, vocab, (sequences, completion))
    advantages = torch.randn(sequences, 1)
    # Warm the kernels up on a small problem, so that their code and workspaces are resident.
    small = per_token_logps_and_entropies(hidden[:2, -9:], w[:64], ids[:2, :8] % 64, 8, convert)[0]
    small.sum().backward()
    hidden.grad = None
    w.grad = None
    reset_peak()
    base = status_bytes("VmRSS")
    logps, entropies = per_token_logps_and_entropies(hidden, w, ids, completion, convert)
    old = logps.detach()
    ratio = torch.exp(logps - old)
    clipped = torch.clamp(ratio, 0.8, 1.2)
    loss = -torch.min(ratio * advantages, clipped * advantages).mean()
    forward = status_bytes("VmHWM")
    loss.backward()
    overall = status_bytes("VmHWM")
    print(json.dumps(dict(
        sequences=sequences, sequence_length=length, completion_length=completion, vocab=vocab,
        hidden=hidden_width, fp32_logits=convert, completion_logits=sequences * completion * vocab,
        forward_peak_bytes=forward - base, peak_bytes=overall - base,
    )))


CASES = (  # sequences, completion tokens, FP32 logits (bf16 autocast) or BF16 ones (no autocast)
    (4, 512, True),
    (8, 256, True),
    (1, 2048, True),
    (4, 512, False),
)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--prompt", type=int, default=64, help="each sequence's prompt tokens")
    ap.add_argument("--hidden", type=int, default=64, help="the output layer's input width (small: its memory is not the point)")
    ap.add_argument("--out", help="write the JSON table to this file")
    ap.add_argument("--one-case", nargs=3, type=int, metavar=("SEQUENCES", "COMPLETION", "FP32"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one_case:
        sequences, completion, fp32 = args.one_case
        one_case(sequences, args.prompt + completion, completion, args.vocab, args.hidden, bool(fp32))
        return
    cases = []
    for sequences, completion, fp32 in CASES:
        cases.append(fresh_process_case(
            [__file__, "--vocab", str(args.vocab), "--prompt", str(args.prompt), "--hidden", str(args.hidden),
             "--one-case", str(sequences), str(completion), str(int(fp32))]))
        c = cases[-1]
        print("%d × %d completion tokens, %s logits: forward peak %d B, peak %d B (%.2f B a completion logit)" % (
            sequences, completion, "FP32" if fp32 else "BF16", c["forward_peak_bytes"], c["peak_bytes"],
            c["peak_bytes"] / c["completion_logits"]))
    write_table(args.out, "trainmem scripts/measure/grpo_loss_peak.py",
                dict(vocab=args.vocab, prompt=args.prompt, hidden=args.hidden,
                     loss="TRL's GRPOTrainer._compute_loss through accelerate: FP32 logits (convert_outputs_to_fp32) or BF16 ones"),
                cases)


if __name__ == "__main__":
    main()
