#!/usr/bin/env python3
"""Measure the memory of training a Llama-3-shaped decoder, to set against trainmem's estimate.

Trains a small stack of Llama blocks (RMSNorm, grouped-query attention with RoPE, SwiGLU MLP,
untied embedding and head) for a few steps with the plate's recipe as near as plain PyTorch
allows: BF16 weights and gradients for the forward and backward passes, FP32 master copies of the
parameters, torch.optim.Adam over the masters (its two FP32 moments), gradients copied BF16 -> FP32
before each step and weights copied back after it.

For every case (layers x micro-batch) it records the model-state bytes, the allocator's peak over
the forward and backward passes minus those states, and the bytes of every tensor autograd saves
for the backward pass (torch.autograd.graph.saved_tensors_hooks, on any device). It then fits the
activation cost per token per layer across the cases and divides it by the hidden size to compare
with Korthikanti et al.'s 34.

Only dependency: torch (1.13 or 2.x). See README.md beside this file.
"""

import argparse
import datetime
import gc
import inspect
import json
import math
import platform
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

KORTHIKANTI = 34  # bytes per token per layer per hidden unit (MLSys 2023, eq. 1, no scores)

PRESETS = {
    # Llama 3 8B's block; the layer count is chosen per case.
    "8b": dict(hidden=4096, ffn=14336, heads=32, kv_heads=8, vocab=128256, seq=8192),
    # A shape that runs in seconds on a CPU.
    "tiny": dict(hidden=64, ffn=224, heads=4, kv_heads=2, vocab=512, seq=128),
}

HAS_SDPA = hasattr(F, "scaled_dot_product_attention")
try:
    SDPA_HAS_GQA = HAS_SDPA and "enable_gqa" in inspect.signature(F.scaled_dot_product_attention).parameters
except (TypeError, ValueError):
    SDPA_HAS_GQA = False


# ----------------------------------------------------------------------------------------------
# The model


class FusedRMSNormFunction(torch.autograd.Function):
    """RMSNorm as the fused kernels do it (Apex, Transformer Engine, Liger, Megatron-LM): one
    operation that saves its input and the FP32 1/RMS per token for the backward pass, nothing
    else. Written in plain PyTorch, so the arithmetic is not fused, but what autograd keeps is."""

    @staticmethod
    def forward(ctx, x, weight, eps):
        xf = x.float()
        rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, weight, rstd)
        return weight * (xf * rstd).to(weight.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, rstd = ctx.saved_tensors
        xf = x.float()
        xhat = xf * rstd
        g = grad_out.float() * weight.float()
        grad_x = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True))
        grad_w = (grad_out.float() * xhat).reshape(-1, x.shape[-1]).sum(0)
        return grad_x.to(x.dtype), grad_w.to(weight.dtype), None


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5, fused=True):
        super().__init__()
        self.eps = eps
        self.fused = fused
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        if self.fused:
            return FusedRMSNormFunction.apply(x, self.weight, self.eps)
        # As in Llama's reference code: normalise in FP32, scale in the weights' type. Autograd
        # keeps the FP32 copy of the input, 1/RMS and the BF16 normalised input.
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.to(self.weight.dtype)


def rope_tables(seq, head_dim, theta, device, dtype):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
    t = torch.arange(seq, device=device, dtype=torch.float32)
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)  # (seq, head_dim)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, cos, sin):
    # x: (b, heads, s, head_dim); cos, sin: (s, head_dim)
    return x * cos + rotate_half(x) * sin


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, nh, nkv = cfg["hidden"], cfg["heads"], cfg["kv_heads"]
        self.nh, self.nkv, self.hd = nh, nkv, cfg["head_dim"]
        self.q_proj = nn.Linear(h, nh * self.hd, bias=False)
        self.k_proj = nn.Linear(h, nkv * self.hd, bias=False)
        self.v_proj = nn.Linear(h, nkv * self.hd, bias=False)
        self.o_proj = nn.Linear(nh * self.hd, h, bias=False)
        self.attention = cfg["attention"]  # "sdpa" or "explicit"
        self.gqa = cfg["gqa"]  # "repeat" or "native"

    def forward(self, x, cos, sin, causal_mask):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.nkv, self.hd).transpose(1, 2)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)
        rep = self.nh // self.nkv
        if self.attention == "sdpa" and self.gqa == "native":
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            if rep > 1:  # repeat the key/value heads, as Llama's reference code does
                k = k[:, :, None].expand(b, self.nkv, rep, s, self.hd).reshape(b, self.nh, s, self.hd)
                v = v[:, :, None].expand(b, self.nkv, rep, s, self.hd).reshape(b, self.nh, s, self.hd)
            if self.attention == "sdpa":
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:  # materialise the scores (torch 1.13 has no SDPA)
                scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(self.hd))
                scores = scores.masked_fill(causal_mask, float("-inf"))
                # The BF16 softmax output, as Megatron-LM's fused scale-mask-softmax keeps it.
                p = torch.softmax(scores, dim=-1)
                o = torch.matmul(p, v)
        o = o.transpose(1, 2).reshape(b, s, self.nh * self.hd)
        return self.o_proj(o)


class FusedSwiGLUFunction(torch.autograd.Function):
    """SiLU(gate) * up as the fused kernels do it (Megatron-LM's bias-SwiGLU fusion, Transformer
    Engine, Liger): it saves the gate's and up's outputs and recomputes the activation and the
    product in the backward pass. Plain PyTorch inside; what autograd keeps is the kernels'."""

    @staticmethod
    def forward(ctx, gate, up):
        ctx.save_for_backward(gate, up)
        return F.silu(gate) * up

    @staticmethod
    def backward(ctx, grad_out):
        gate, up = ctx.saved_tensors
        g = gate.float()
        sig = torch.sigmoid(g)
        silu = g * sig
        grad_up = grad_out.float() * silu
        grad_gate = grad_out.float() * up.float() * sig * (1 + g * (1 - sig))
        return grad_gate.to(gate.dtype), grad_up.to(up.dtype)


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, f = cfg["hidden"], cfg["ffn"]
        self.gate_proj = nn.Linear(h, f, bias=False)
        self.up_proj = nn.Linear(h, f, bias=False)
        self.down_proj = nn.Linear(f, h, bias=False)
        self.fused = cfg["mlp"] == "fused"

    def forward(self, x):
        if self.fused:
            return self.down_proj(FusedSwiGLUFunction.apply(self.gate_proj(x), self.up_proj(x)))
        # Op by op, as Llama's reference code: autograd also keeps SiLU's output for the product.
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, cfg, index):
        super().__init__()
        self.index = index
        fused = cfg["norm"] == "fused"
        self.attn_norm = RMSNorm(cfg["hidden"], cfg["norm_eps"], fused)
        self.attn = Attention(cfg)
        self.mlp_norm = RMSNorm(cfg["hidden"], cfg["norm_eps"], fused)
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin, causal_mask):
        x = x + self.attn(self.attn_norm(x), cos, sin, causal_mask)
        return x + self.mlp(self.mlp_norm(x))


class Llama(nn.Module):
    def __init__(self, cfg, layers):
        super().__init__()
        self.embed = nn.Embedding(cfg["vocab"], cfg["hidden"])
        self.blocks = nn.ModuleList([Block(cfg, i) for i in range(layers)])
        self.norm = RMSNorm(cfg["hidden"], cfg["norm_eps"], cfg["norm"] == "fused")
        self.head = nn.Linear(cfg["hidden"], cfg["vocab"], bias=False)  # untied

    def forward(self, tokens, targets, cos, sin, causal_mask, scope=None):
        def enter(name):
            if scope is not None:
                scope[0] = name

        enter("embedding")
        x = self.embed(tokens)
        for blk in self.blocks:
            enter("layer%d" % blk.index)
            x = blk(x, cos, sin, causal_mask)
        enter("head")
        logits = self.head(self.norm(x))
        loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))
        enter("backward")
        return loss


# ----------------------------------------------------------------------------------------------
# Measuring


def tensor_bytes(t):
    return t.numel() * t.element_size()


def storage_key_and_bytes(t):
    """(key, bytes) of the storage under t, so that views of one buffer are counted once."""
    try:
        st = t.untyped_storage()  # torch >= 2.0
        return st.data_ptr(), st.nbytes()
    except (AttributeError, RuntimeError):
        pass
    try:
        st = t.storage()
        return st.data_ptr(), st.nbytes()
    except (AttributeError, RuntimeError, NotImplementedError):
        return t.data_ptr(), tensor_bytes(t)


class SavedTensorMeter:
    """Sums the bytes of the tensors autograd saves for backward, once per storage, excluding the
    parameters (they are model states), attributed to the scope (embedding, layerN, head) that
    first saved them. Holds no reference to any tensor."""

    def __init__(self, param_keys, scope):
        self.param_keys = param_keys
        self.scope = scope
        self.seen = {}
        self.by_scope = {}
        self.params_saved = 0

    def pack(self, t):
        if isinstance(t, torch.Tensor):
            key, nbytes = storage_key_and_bytes(t)
            if key in self.param_keys:
                self.params_saved += 1
            elif key not in self.seen and nbytes > 0:
                self.seen[key] = nbytes
                s = self.scope[0]
                self.by_scope[s] = self.by_scope.get(s, 0) + nbytes
        return t

    @staticmethod
    def unpack(t):
        return t

    def total(self):
        return sum(self.by_scope.values())


def cuda_sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def allocated(device):
    return torch.cuda.memory_allocated(device) if device.type == "cuda" else None


def reset_peak(device):
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak(device):
    return torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None


def is_oom(err):
    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(err, oom_type):
        return True
    return "out of memory" in str(err).lower()


def sdpa_context(backend):
    """A context manager that restricts scaled_dot_product_attention to one backend."""
    import contextlib

    if backend == "auto":
        return contextlib.nullcontext()
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel  # torch >= 2.3

        which = {
            "flash": SDPBackend.FLASH_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION,
            "math": SDPBackend.MATH,
        }[backend]
        return sdpa_kernel(which)
    except ImportError:
        if backend == "cudnn":
            raise SystemExit("--sdpa-backend cudnn needs torch >= 2.3")
        return torch.backends.cuda.sdp_kernel(
            enable_flash=backend == "flash",
            enable_mem_efficient=backend == "efficient",
            enable_math=backend == "math",
        )


def state_bytes(model, masters, opt):
    """Model states counted from the tensors themselves (works on any device)."""
    weights = sum(tensor_bytes(p) for p in model.parameters())
    grads = sum(tensor_bytes(p.grad) for p in model.parameters() if p.grad is not None)
    master = sum(tensor_bytes(m) for m in masters)
    moments = 0
    other_opt = 0
    for m in masters:
        st = opt.state.get(m, {})
        for k, v in st.items():
            if not isinstance(v, torch.Tensor):
                continue
            if k in ("exp_avg", "exp_avg_sq"):
                moments += tensor_bytes(v)
            else:
                other_opt += tensor_bytes(v)  # "step", possibly on the CPU
    return dict(
        weights=weights,
        grads=grads,
        master=master,
        moments=moments,
        optimizer_other=other_opt,
        total=weights + grads + master + moments,
    )


def run_case(cfg, args, device, layers, micro_batch):
    seq = cfg["seq"]
    tokens_per_step = micro_batch * seq
    case = dict(layers=layers, micro_batch=micro_batch, seq=seq, tokens=tokens_per_step)

    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        reset_peak(device)
    base = allocated(device)
    case["allocated_before_case"] = base

    torch.manual_seed(args.seed)
    dtype = torch.bfloat16
    model = Llama(cfg, layers)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.02)
    model = model.to(device=device, dtype=dtype)
    params = list(model.parameters())
    masters = [p.detach().float().clone().requires_grad_(True) for p in params]
    opt_kwargs = dict(lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    if "foreach" in inspect.signature(torch.optim.Adam).parameters:
        opt_kwargs["foreach"] = args.adam_foreach
    opt = torch.optim.Adam(masters, **opt_kwargs)
    cos, sin = rope_tables(seq, cfg["head_dim"], cfg["rope_theta"], device, dtype)
    # One causal mask for every layer, as the RoPE tables (used by explicit attention only).
    causal_mask = torch.ones(seq, seq, dtype=torch.bool, device=device).triu(1)

    n_params = sum(p.numel() for p in params)
    case["parameters"] = n_params
    case["parameters_per_layer"] = sum(p.numel() for p in model.blocks[0].parameters()) if layers else 0
    cuda_sync(device)
    after_setup = allocated(device)
    case["allocated_after_setup"] = None if base is None else after_setup - base

    gen = torch.Generator(device="cpu")
    gen.manual_seed(args.seed + 1)
    data = torch.randint(0, cfg["vocab"], (micro_batch, seq + 1), generator=gen).to(device)
    inputs, targets = data[:, :-1].contiguous(), data[:, 1:].contiguous()

    # Parameters and the RoPE tables persist: autograd saves them, but they are not activations.
    param_keys = set(storage_key_and_bytes(t)[0] for t in params + [cos, sin, causal_mask])
    steps = []
    scope = [None]
    for step in range(args.steps):
        rec = dict(step=step + 1)
        cuda_sync(device)
        before = allocated(device)
        rec["allocated_before_step"] = None if base is None else before - base
        reset_peak(device)
        meter = SavedTensorMeter(param_keys, scope)
        t0 = time.perf_counter()
        with sdpa_context(args.sdpa_backend):
            with torch.autograd.graph.saved_tensors_hooks(meter.pack, meter.unpack):
                loss = model(inputs, targets, cos, sin, causal_mask, scope)
            cuda_sync(device)
            after_forward = allocated(device)
            peak_forward = peak(device)
            loss.backward()
        cuda_sync(device)
        t1 = time.perf_counter()
        peak_fb = peak(device)
        if device.type == "cuda":
            rec["peak_reserved_forward_backward_minus_before"] = torch.cuda.max_memory_reserved(device) - before
        rec["loss"] = float(loss.item())
        del loss
        rec["saved_tensors_bytes"] = meter.total()
        rec["saved_tensors_by_scope"] = dict(sorted(meter.by_scope.items()))
        if before is not None:
            rec["allocated_after_forward_minus_before"] = after_forward - before
            rec["peak_forward_minus_before"] = peak_forward - before
            rec["peak_forward_backward_minus_before"] = peak_fb - before

        # Optimizer step: BF16 grads -> FP32 master grads, Adam, FP32 masters -> BF16 weights.
        reset_peak(device)
        t2 = time.perf_counter()
        with torch.no_grad():
            for p, m in zip(params, masters):
                m.grad = p.grad.float()
        opt.step()
        with torch.no_grad():
            for p, m in zip(params, masters):
                m.grad = None
                p.copy_(m)
                p.grad.zero_()  # BF16 gradients stay allocated, as a model state
        cuda_sync(device)
        t3 = time.perf_counter()
        after_step = allocated(device)
        if before is not None:
            rec["peak_optimizer_minus_before"] = peak(device) - before
            rec["allocated_after_step"] = after_step - base
        rec["seconds_forward_backward"] = round(t1 - t0, 4)
        rec["seconds_optimizer"] = round(t3 - t2, 4)
        steps.append(rec)
        if step == 0:
            states = state_bytes(model, masters, opt)
            case["states_counted"] = states
            case["states_counted_bytes_per_parameter"] = states["total"] / n_params
            if base is not None:
                case["allocated_after_first_step"] = after_step - base
                case["allocated_after_first_step_minus_states_counted"] = after_step - base - states["total"]

    case["steps"] = steps
    # The figures of record come from the last step (states settled, grads already allocated).
    last = steps[-1]
    case["saved_tensors_bytes"] = last["saved_tensors_bytes"]
    per_layer = [v for k, v in last["saved_tensors_by_scope"].items() if k.startswith("layer")]
    case["saved_tensors_per_layer_mean"] = sum(per_layer) / len(per_layer) if per_layer else None
    if base is not None:
        case["states_allocated"] = last["allocated_before_step"]
        case["activations_allocator"] = last["peak_forward_backward_minus_before"]
        case["activations_after_forward"] = last["allocated_after_forward_minus_before"]
        case["peak_optimizer_minus_states"] = last["peak_optimizer_minus_before"]
        case["peak_reserved_minus_states"] = last["peak_reserved_forward_backward_minus_before"]
        case["reserved_at_end"] = torch.cuda.memory_reserved(device)
        try:
            free, total = torch.cuda.mem_get_info(device)
            # What the device holds beyond PyTorch's allocator: the CUDA context, cuBLAS/cuDNN
            # workspaces, anything of other processes.
            case["device_used_outside_allocator"] = (total - free) - case["reserved_at_end"]
        except (AttributeError, RuntimeError):
            pass
    else:
        case["states_allocated"] = None
        case["activations_allocator"] = None
    del model, masters, opt, params, data, inputs, targets, cos, sin, causal_mask
    return case


# ----------------------------------------------------------------------------------------------
# Fitting


def solve(a, b):
    """Solve the small linear system a x = b (Gaussian elimination); None if singular."""
    n = len(b)
    m = [list(map(float, row)) + [float(v)] for row, v in zip(a, b)]
    for c in range(n):
        piv = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[piv][c]) < 1e-9 * max(1.0, max(abs(x) for row in m for x in row[:n])):
            return None
        m[c], m[piv] = m[piv], m[c]
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c])]
    return [m[i][n] / m[i][i] for i in range(n)]


def least_squares(rows, ys):
    k = len(rows[0])
    ata = [[sum(r[i] * r[j] for r in rows) for j in range(k)] for i in range(k)]
    aty = [sum(r[i] * y for r, y in zip(rows, ys)) for i in range(k)]
    return solve(ata, aty)


def fit(cases, key, hidden):
    """Fit A = c0 + c1*T + c2*T*L over the cases (T tokens per micro-batch, L layers); c2 is the
    activation cost in bytes per token per layer. Also, per micro-batch, the slope of A against L
    divided by T."""
    pts = [(c["layers"], c["tokens"], c[key]) for c in cases if c.get(key) is not None]
    out = dict(quantity=key, points=len(pts))
    ls = sorted(set(p[0] for p in pts))
    ts = sorted(set(p[1] for p in pts))
    if len(ls) >= 2 and len(ts) >= 2 and len(pts) >= 3:
        coef = least_squares([[1.0, t, t * l] for l, t, _ in pts], [a for _, _, a in pts])
        if coef is not None:
            resid = [a - (coef[0] + coef[1] * t + coef[2] * t * l) for l, t, a in pts]
            out["joint"] = dict(
                model="A = c0 + c1*tokens + c2*tokens*layers",
                c0_bytes=coef[0],
                c1_bytes_per_token_outside_layers=coef[1],
                bytes_per_token_per_layer=coef[2],
                bytes_per_token_per_layer_per_hidden=coef[2] / hidden,
                max_abs_residual_bytes=max(abs(r) for r in resid),
            )
    per_mb = []
    for t in ts:
        sub = [(l, a) for l, tt, a in pts if tt == t]
        if len(set(l for l, _ in sub)) >= 2:
            coef = least_squares([[1.0, l] for l, _ in sub], [a for _, a in sub])
            if coef is not None:
                per_mb.append(
                    dict(
                        tokens=t,
                        bytes_per_layer=coef[1],
                        bytes_per_token_per_layer=coef[1] / t,
                        bytes_per_token_per_layer_per_hidden=coef[1] / t / hidden,
                    )
                )
    out["per_micro_batch"] = per_mb
    if "joint" not in out and not per_mb:
        out["unavailable"] = "needs at least two layer counts (and two micro-batch sizes for the joint fit)"
    return out


# ----------------------------------------------------------------------------------------------
# Main


def int_list(s):
    return [int(x) for x in s.split(",") if x.strip()]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="8b", help="shape to start from")
    ap.add_argument("--tiny", action="store_true", help="same as --preset tiny (for a CPU)")
    ap.add_argument("--hidden", type=int, help="model dimension h (overrides the preset)")
    ap.add_argument("--ffn", type=int, help="MLP width f")
    ap.add_argument("--heads", type=int, help="attention heads a")
    ap.add_argument("--kv-heads", type=int, help="key/value heads")
    ap.add_argument("--head-dim", type=int, help="head dimension (default hidden/heads)")
    ap.add_argument("--vocab", type=int, help="vocabulary size")
    ap.add_argument("--seq", type=int, help="sequence length s (8192 for 8b, 128 for tiny)")
    ap.add_argument("--rope-theta", type=float, default=500000.0)
    ap.add_argument("--norm-eps", type=float, default=1e-5)
    ap.add_argument("--layers", type=int_list, default=[1, 2, 4], help="layer counts, comma-separated")
    ap.add_argument("--micro-batches", type=int_list, default=[1, 2, 4], help="micro-batch sizes b, comma-separated")
    ap.add_argument("--steps", type=int, default=3, help="training steps per case (the last is reported)")
    ap.add_argument("--device", default=None, help="cuda, cuda:N or cpu (default: cuda if available)")
    ap.add_argument("--attention", choices=["auto", "sdpa", "explicit"], default="auto",
                    help="sdpa: F.scaled_dot_product_attention (torch >= 2.0); explicit: materialised scores")
    ap.add_argument("--sdpa-backend", choices=["auto", "flash", "efficient", "cudnn", "math"], default="auto",
                    help="restrict scaled_dot_product_attention to one backend")
    ap.add_argument("--gqa", choices=["auto", "repeat", "native"], default="auto",
                    help="repeat: expand the key/value heads before attention (Llama's reference code); "
                         "native: enable_gqa=True (torch >= 2.5); auto: native where SDPA has it")
    ap.add_argument("--norm", choices=["fused", "eager"], default="fused",
                    help="fused: RMSNorm saves its input and FP32 1/RMS (fused kernels, trainmem's "
                         "llama-block model); eager: Llama's reference code, op by op")
    ap.add_argument("--mlp", choices=["fused", "eager"], default="fused",
                    help="fused: SwiGLU saves gate's and up's outputs (fused kernels, trainmem's "
                         "llama-block model); eager: Llama's reference code, which also keeps SiLU's output")
    ap.add_argument("--adam-foreach", action="store_true", help="torch.optim.Adam(foreach=True) (more temporaries)")
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="write the JSON table to this file")
    args = ap.parse_args(argv)
    if args.tiny:
        args.preset = "tiny"
    if args.steps < 2:
        ap.error("--steps must be at least 2 (the first step allocates the gradients and Adam's moments)")
    return args


def main(argv=None):
    args = parse_args(argv)
    cfg = dict(PRESETS[args.preset])
    for k in ("hidden", "ffn", "heads", "kv_heads", "vocab", "seq"):
        v = getattr(args, k)
        if v is not None:
            cfg[k] = v
    cfg["head_dim"] = args.head_dim or cfg["hidden"] // cfg["heads"]
    cfg["rope_theta"] = args.rope_theta
    cfg["norm_eps"] = args.norm_eps
    if cfg["heads"] % cfg["kv_heads"]:
        raise SystemExit("heads (%d) must be a multiple of kv-heads (%d)" % (cfg["heads"], cfg["kv_heads"]))
    if cfg["head_dim"] % 2:
        raise SystemExit("head dimension must be even for RoPE")

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("CUDA is not available; use --device cpu --tiny")
    if device.type == "cuda" and device.index is not None:
        torch.cuda.set_device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())

    if args.attention == "auto":
        cfg["attention"] = "sdpa" if HAS_SDPA else "explicit"
    else:
        cfg["attention"] = args.attention
    if cfg["attention"] == "sdpa" and not HAS_SDPA:
        raise SystemExit("torch %s has no scaled_dot_product_attention; use --attention explicit" % torch.__version__)
    cfg["gqa"] = args.gqa
    if args.gqa == "auto":
        cfg["gqa"] = "native" if cfg["attention"] == "sdpa" and SDPA_HAS_GQA else "repeat"
    cfg["norm"] = args.norm
    cfg["mlp"] = args.mlp
    if args.gqa == "native" and not (cfg["attention"] == "sdpa" and SDPA_HAS_GQA):
        raise SystemExit("--gqa native needs scaled_dot_product_attention with enable_gqa (torch >= 2.5)")
    if args.sdpa_backend != "auto" and cfg["attention"] != "sdpa":
        raise SystemExit("--sdpa-backend needs --attention sdpa")
    if device.type == "cpu" and args.preset != "tiny" and cfg["hidden"] >= 1024:
        print("warning: a full-size shape on the CPU is slow and large; --tiny is the CPU check", file=sys.stderr)

    env = dict(
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        host_python=platform.python_version(),
        platform=platform.platform(),
        torch=torch.__version__,
        cuda=torch.version.cuda,
        cudnn=torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        device=str(device),
        device_name=torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        command=" ".join([sys.executable] + sys.argv),
    )
    if device.type == "cuda":
        prop = torch.cuda.get_device_properties(device)
        env["device_total_memory"] = prop.total_memory
        env["device_capability"] = "%d.%d" % (prop.major, prop.minor)

    settings = dict(
        preset=args.preset,
        shape=dict((k, cfg[k]) for k in ("hidden", "ffn", "heads", "kv_heads", "head_dim", "vocab")),
        seq=cfg["seq"],
        layers=args.layers,
        micro_batches=args.micro_batches,
        steps=args.steps,
        attention=cfg["attention"],
        sdpa_backend=args.sdpa_backend,
        gqa=cfg["gqa"],
        tied_embeddings=False,
        recipe=dict(
            weights="bf16",
            gradients="bf16 (kept allocated between steps, zeroed in place)",
            master_weights="fp32",
            optimizer="torch.optim.Adam over the fp32 masters, betas (0.9, 0.95), eps 1e-8",
            adam_foreach=args.adam_foreach,
            moments="fp32 exp_avg, exp_avg_sq",
            grad_copy="bf16 grads -> fp32 master .grad before each step, freed after; fp32 masters -> bf16 weights",
            loss="cross-entropy over fp32-upcast logits",
            rmsnorm="fused: saves its bf16 input and fp32 1/RMS" if cfg["norm"] == "fused"
            else "eager: normalised in fp32, scaled in bf16, op by op",
            swiglu="fused: saves gate's and up's outputs" if cfg["mlp"] == "fused"
            else "eager: silu(gate) * up, op by op",
            activation_recomputation=False,
        ),
        lr=args.lr,
        seed=args.seed,
        rope_theta=cfg["rope_theta"],
        norm_eps=cfg["norm_eps"],
    )

    print("# trainmem measure: %s, torch %s, CUDA %s" % (env["device_name"], env["torch"], env["cuda"]))
    print("# shape %s, seq %d, attention %s (gqa %s), RMSNorm %s, SwiGLU %s" % (settings["shape"], cfg["seq"], cfg["attention"], cfg["gqa"], cfg["norm"], cfg["mlp"]))
    if device.type == "cuda":
        hdr = "%6s %3s %8s %14s %7s %14s %14s %8s %14s %8s" % (
            "layers", "b", "tokens", "states", "B/param", "act(alloc)", "act/tok", "/tok/h", "saved", "saved/h")
    else:
        hdr = "%6s %3s %8s %14s %7s %14s %14s %8s" % ("layers", "b", "tokens", "states", "B/param", "saved", "saved/tok", "/tok/h")
    print(hdr)

    cases = []
    for layers in args.layers:
        for mb in args.micro_batches:
            try:
                case = run_case(cfg, args, device, layers, mb)
            except RuntimeError as err:
                if device.type == "cuda" and is_oom(err):
                    case = dict(layers=layers, micro_batch=mb, seq=cfg["seq"], tokens=mb * cfg["seq"],
                                error="out of memory", detail=str(err).splitlines()[0])
                    print("%6d %3d %8d  out of memory" % (layers, mb, mb * cfg["seq"]))
                    cases.append(case)
                    gc.collect()
                    torch.cuda.empty_cache()
                    continue
                raise
            cases.append(case)
            t = case["tokens"]
            st = case["states_counted"]["total"]
            if device.type == "cuda":
                act = case["activations_allocator"]
                sv = case["saved_tensors_bytes"]
                print("%6d %3d %8d %14d %7.2f %14d %14.1f %8.2f %14d %8.2f" % (
                    layers, mb, t, st, case["states_counted_bytes_per_parameter"], act, act / t,
                    act / t / layers / cfg["hidden"], sv, sv / t / layers / cfg["hidden"]))
            else:
                sv = case["saved_tensors_bytes"]
                print("%6d %3d %8d %14d %7.2f %14d %14.1f %8.2f" % (
                    layers, mb, t, st, case["states_counted_bytes_per_parameter"], sv, sv / t,
                    sv / t / layers / cfg["hidden"]))
            sys.stdout.flush()

    ok = [c for c in cases if "error" not in c]
    fits = dict(
        saved_tensors=fit(ok, "saved_tensors_bytes", cfg["hidden"]),
        allocator_peak=fit(ok, "activations_allocator", cfg["hidden"]) if device.type == "cuda" else dict(
            unavailable="no allocator statistics on %s; see saved_tensors" % device.type),
    )
    per_layer_direct = [c["saved_tensors_per_layer_mean"] / c["tokens"] for c in ok if c.get("saved_tensors_per_layer_mean")]
    if per_layer_direct:
        mean = sum(per_layer_direct) / len(per_layer_direct)
        fits["saved_tensors_attributed_to_layers"] = dict(
            note="bytes saved inside each block (first saver of a storage), per token, mean over cases",
            bytes_per_token_per_layer=mean,
            bytes_per_token_per_layer_per_hidden=mean / cfg["hidden"],
        )
    fits["korthikanti_bytes_per_token_per_layer_per_hidden"] = KORTHIKANTI
    fits["korthikanti_bytes_per_token_per_layer"] = KORTHIKANTI * cfg["hidden"]

    print("# activation cost per token per layer (Korthikanti, FlashAttention: %d h = %d bytes)" % (
        KORTHIKANTI, KORTHIKANTI * cfg["hidden"]))
    for name in ("allocator_peak", "saved_tensors"):
        f = fits[name]
        if "unavailable" in f:
            print("  %-16s unavailable: %s" % (name, f["unavailable"]))
            continue
        if "joint" in f:
            j = f["joint"]
            print("  %-16s joint fit: %.1f bytes/token/layer = %.2f per hidden unit (max residual %.0f bytes)" % (
                name, j["bytes_per_token_per_layer"], j["bytes_per_token_per_layer_per_hidden"], j["max_abs_residual_bytes"]))
        for p in f["per_micro_batch"]:
            print("  %-16s tokens %d: %.1f bytes/token/layer = %.2f per hidden unit" % (
                name, p["tokens"], p["bytes_per_token_per_layer"], p["bytes_per_token_per_layer_per_hidden"]))
    if "saved_tensors_attributed_to_layers" in fits:
        d = fits["saved_tensors_attributed_to_layers"]
        print("  %-16s inside the blocks: %.1f bytes/token/layer = %.2f per hidden unit" % (
            "saved_tensors", d["bytes_per_token_per_layer"], d["bytes_per_token_per_layer_per_hidden"]))

    result = dict(
        tool="trainmem scripts/measure/measure.py",
        environment=env,
        settings=settings,
        fits=fits,
        cases=cases,
        notes=[
            "states_counted: bytes of the parameters (bf16), their grads (bf16), the fp32 masters and Adam's "
            "moments, counted from the tensors; states_allocated: torch.cuda.memory_allocated before the last "
            "step, which adds the RoPE tables and anything else that persists.",
            "activations_allocator: torch.cuda.max_memory_allocated over the last step's forward and backward "
            "(peak reset before it) minus the memory allocated before it; it includes the logits, their fp32 "
            "copy and gradient, and backward temporaries, which the fit across layer counts separates out.",
            "saved_tensors_bytes: bytes of the tensors autograd saved for backward (saved_tensors_hooks), once "
            "per storage, parameters excluded.",
            "Not included anywhere: the CUDA context, the caching allocator's reserve beyond allocations "
            "(peak_reserved_minus_states shows it), communication buffers (no parallelism here), fragmentation.",
        ],
    )
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=2)
            fh.write("\n")
        print("# wrote %s" % args.out)
    return result


if __name__ == "__main__":
    main()
