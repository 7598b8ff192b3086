#!/usr/bin/env python3
"""Measure the peak memory of TRL's DPO loss over the logits of each pair's two sequences, on a CPU.

The operations of TRL's DPOTrainer._compute_loss (the sigmoid loss, its default; no
precompute_ref_log_probs, so the reference's log-probabilities come from a forward pass inside the
loss), selective_log_softmax and entropy_from_logits (trl/trainer/dpo_trainer.py and
trl/trainer/utils.py, TRL f2cd5771), written out in the same order on the same shapes, as
transformers' Trainer runs them through accelerate, over B sequences (B / 2 pairs, chosen then
rejected) of L tokens:

    logits = F.linear(hidden, w)                           # every position (logits_to_keep unset)
    logits = logits.float()                                # accelerate's convert_outputs_to_fp32
                                                           # (bf16 autocast); not without autocast
    shift_logits = logits[..., :-1, :]
    FP32 logits: gather, and a logsumexp per sequence      # selective_log_softmax's FP32 branch
    BF16 logits: a log_softmax per sequence, gathered      # its BF16 branch (no autocast)
    under no_grad, the reference's logits the same way     # ref_outputs, held to the function's end
    the sigmoid loss over the pairs' summed log-ratios
    entropy_from_logits(shift_logits.detach()): a reshape (a copy for B > 1), chunks of 128 rows
    return (the reference's logits and the entropy's copy freed), then backward

The reference's layers are not run: its final hidden states are an input, made before the
baseline, as the policy's are. With loss_peak.py's process, peak and table: each case in a fresh
process with glibc's mmap threshold pinned low, the kernel's high-water mark reset just before the
output layer, the peak the high-water mark (VmHWM) above the resident memory then. Linux only. Only
dependency: torch. What it checks is trainmem's replay of this code (stack_loss.cpp, dpo_loss),
not TRL on a GPU.
"""

import argparse
import json

import torch
import torch.nn.functional as F

from loss_peak import fresh_process_case, reset_peak, status_bytes, write_table


ENTROPY_CHUNK_ROWS = 128  # entropy_from_logits' chunk_size
BETA = 0.1                # DPOConfig's beta


def selective_log_softmax(logits, index):
    """TRL's, both branches (trl/trainer/utils.py)."""
    index = index.unsqueeze(-1)
    if logits.dtype == torch.float32:
        selected = torch.gather(logits, dim=-1, index=index)
        lse = torch.stack([torch.logsumexp(lg, dim=-1) for lg in logits])
        return (selected - lse.unsqueeze(-1)).squeeze(-1)
    rows = [F.log_softmax(lg, dim=-1).gather(dim=-1, index=i) for lg, i in zip(logits, index)]
    return torch.stack(rows).squeeze(-1)


def entropy_from_logits(logits):
    flat = logits.reshape(-1, logits.size(-1))
    parts = []
    for chunk in flat.split(ENTROPY_CHUNK_ROWS, dim=0):
        chunk_logps = F.log_softmax(chunk, dim=-1)
        parts.append(-(torch.exp(chunk_logps) * chunk_logps).sum(-1))
    return torch.cat(parts).reshape(logits.shape[:-1])


def dpo_loss(hidden, ref_hidden, w, ids, mask, convert):
    """_compute_loss: the loss, after the entropy, as it returns (its locals then freed)."""
    logits = F.linear(hidden, w)
    if convert:
        logits = logits.float()
    shift_logits = logits[..., :-1, :]
    shift_labels = ids[..., 1:]
    shift_mask = mask[..., 1:]
    per_token_logps = selective_log_softmax(shift_logits, shift_labels)
    per_token_logps[shift_mask == 0] = 0.0
    chosen_logps, rejected_logps = per_token_logps.sum(dim=1).chunk(2, dim=0)
    with torch.no_grad():
        ref_logits = F.linear(ref_hidden, w)
        if convert:
            ref_logits = ref_logits.float()
        ref_shift_logits = ref_logits[..., :-1, :]
        ref_per_token_logps = selective_log_softmax(ref_shift_logits, shift_labels)
        ref_per_token_logps[shift_mask == 0] = 0.0
        ref_chosen, ref_rejected = ref_per_token_logps.sum(dim=1).chunk(2, dim=0)
    delta = (chosen_logps - ref_chosen) - (rejected_logps - ref_rejected)
    loss = (-F.logsigmoid(BETA * delta)).mean()
    entropy = entropy_from_logits(shift_logits.detach())
    _ = (entropy * shift_mask).sum().item()
    forward = status_bytes("VmHWM")
    return loss, forward


def one_case(sequences, length, vocab, hidden_width, convert):
    """Runs in its own process: prints one JSON line with the case's peaks above the baseline."""
    torch.manual_seed(0)
    hidden = torch.randn(sequences, length, hidden_width, dtype=torch.bfloat16, requires_grad=True)
    ref_hidden = torch.randn(sequences, length, hidden_width, dtype=torch.bfloat16)
    w = torch.randn(vocab, hidden_width, dtype=torch.bfloat16, requires_grad=True)
    ids = torch.randint(0, vocab, (sequences, length))
    mask = torch.ones(sequences, length, dtype=torch.long)
    mask[:, : length // 4] = 0  # the prompt
    # Warm the kernels up on a small problem, so that their code and workspaces are resident.
    small, _ = dpo_loss(hidden[:2, :9], ref_hidden[:2, :9], w[:64], ids[:2, :9] % 64, mask[:2, :9], convert)
    small.backward()
    hidden.grad = None
    w.grad = None
    reset_peak()
    base = status_bytes("VmRSS")
    loss, forward = dpo_loss(hidden, ref_hidden, w, ids, mask, convert)
    loss.backward()
    overall = status_bytes("VmHWM")
    print(json.dumps(dict(
        sequences=sequences, sequence_length=length, vocab=vocab, hidden=hidden_width,
        fp32_logits=convert, logits=sequences * length * vocab,
        forward_peak_bytes=forward - base, peak_bytes=overall - base,
    )))


CASES = (  # sequences (chosen and rejected), tokens each, FP32 logits (bf16 autocast) or BF16 ones
    (2, 1024, True),
    (4, 512, True),
    (8, 256, True),
    (4, 512, False),
)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--hidden", type=int, default=64, help="the output layer's input width (small: its memory is not the point)")
    ap.add_argument("--out", help="write the JSON table to this file")
    ap.add_argument("--one-case", nargs=3, type=int, metavar=("SEQUENCES", "LENGTH", "FP32"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one_case:
        sequences, length, fp32 = args.one_case
        one_case(sequences, length, args.vocab, args.hidden, bool(fp32))
        return
    cases = []
    for sequences, length, fp32 in CASES:
        cases.append(fresh_process_case(
            [__file__, "--vocab", str(args.vocab), "--hidden", str(args.hidden),
             "--one-case", str(sequences), str(length), str(int(fp32))]))
        c = cases[-1]
        print("%d sequences × %d tokens, %s logits: forward peak %d B, peak %d B (%.2f B a logit)" % (
            sequences, length, "FP32" if fp32 else "BF16", c["forward_peak_bytes"], c["peak_bytes"],
            c["peak_bytes"] / c["logits"]))
    write_table(args.out, "trainmem scripts/measure/dpo_loss_peak.py",
                dict(vocab=args.vocab, hidden=args.hidden,
                     loss="TRL's DPOTrainer._compute_loss through accelerate, the reference's logits inside it: FP32 logits (convert_outputs_to_fp32) or BF16 ones"),
                cases)


if __name__ == "__main__":
    main()
