#!/usr/bin/env python3
"""Measure what LoRA and QLoRA hold per token and per layer in transformers + PEFT (+ bitsandbytes).

Builds a Mistral-7B-shaped decoder (hidden 4096, MLP 14336, 32 heads, 8 key/value heads, vocabulary
32000) with 2 and 4 layers and random weights, saves it, and loads it back through
`from_pretrained` as a trainer would: in BF16 for LoRA, or through `BitsAndBytesConfig` (NF4, double
quantisation, BF16 compute) for QLoRA. PEFT's LoRA (r 16, dropout 0.1, q/k/v/o) goes on top, with
gradient checkpointing, SDPA attention, BF16 autocast, transformers' own loss (labels passed to the
model) and torch's AdamW over the adapters: the loop that transformers' Trainer runs, without the
Trainer.

Each case runs three steps on one sequence batch of random tokens and reports the third:
- `base`: allocated bytes before the step (weights, adapters, AdamW's moments);
- `after_forward`: allocated bytes after the forward pass and the loss;
- `peak`: torch.cuda.max_memory_allocated over the step (forward, backward, optimizer step);
- `reserved_peak`: torch.cuda.max_memory_reserved over the step.

Two layer counts and two micro-batch sizes per setup give, by differences, the bytes a token holds
per layer (what the checkpointed layers keep) and the bytes a token holds outside the layers (the
logits and the loss), which is what trainmem's estimate is set against. Prints one JSON line per
case and writes them all to --out.
"""

import argparse
import json
import os
import sys
import tempfile
import time
import traceback

import torch

SHAPE = dict(
    vocab_size=32000,
    hidden_size=4096,
    intermediate_size=14336,
    num_attention_heads=32,
    num_key_value_heads=8,
    max_position_embeddings=32768,
    rope_theta=1e6,
    sliding_window=None,
    tie_word_embeddings=False,
)


def log(*args):
    print(f"[{time.strftime('%H:%M:%S')}]", *args, flush=True)


def save_model(layers, folder):
    from transformers import MistralConfig, MistralForCausalLM

    config = MistralConfig(num_hidden_layers=layers, **SHAPE)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = MistralForCausalLM(config)
    torch.set_default_dtype(torch.float32)
    model.save_pretrained(folder)
    del model
    torch.cuda.empty_cache()


def load_model(folder, qlora):
    from transformers import AutoModelForCausalLM

    kwargs = dict(attn_implementation="sdpa", device_map={"": 0})
    if qlora:
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_use_double_quant=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_compute_dtype=torch.bfloat16,
        )
    try:
        return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16, **kwargs)
    except TypeError:
        return AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.bfloat16, **kwargs)


def run_case(folder, layers, batch, seq, qlora, kbit_prep, reentrant, steps=3):
    from peft import LoraConfig, get_peft_model

    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model = load_model(folder, qlora)
    gc_kwargs = {"use_reentrant": reentrant}
    if kbit_prep:
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=True, gradient_checkpointing_kwargs=gc_kwargs
        )
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=gc_kwargs)
        if reentrant:
            model.enable_input_require_grads()
    model.config.use_cache = False
    lora = LoraConfig(
        r=16,
        lora_alpha=32,
        lora_dropout=0.1,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(model, lora)
    model.train()
    trained = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trained, lr=1e-5)
    tokens = torch.randint(0, SHAPE["vocab_size"], (batch, seq), device="cuda")
    dtypes = {}
    for name, p in model.named_parameters():
        key = f"{'trained' if p.requires_grad else 'frozen'}:{p.dtype}"
        dtypes[key] = dtypes.get(key, 0) + p.numel()
    record = {}
    for step in range(steps):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(input_ids=tokens, labels=tokens)
        after_forward = torch.cuda.memory_allocated()
        logits_dtype = str(out.logits.dtype)
        loss = out.loss
        del out
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        del loss
        torch.cuda.synchronize()
        record = dict(
            base=base,
            after_forward=after_forward,
            peak=torch.cuda.max_memory_allocated(),
            reserved_peak=torch.cuda.max_memory_reserved(),
            logits_dtype=logits_dtype,
        )
    del model, optimizer, trained
    torch.cuda.empty_cache()
    record.update(params=dtypes)
    return record


def trl_021_casting(model):
    """TRL 0.13-0.21's peft_module_casting_to_bf16 (trl/trainer/utils.py), which SFTTrainer ran after
    prepare_model_for_kbit_training for a 4-bit model on one GPU with bf16=True: norms back to or
    kept in FP32, the embedding and the head back to BF16."""
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.LayerNorm) or "norm" in name:
            module.to(torch.float32)
        elif any(x in name for x in ["lm_head", "embed_tokens", "wte", "wpe"]):
            if hasattr(module, "weight") and module.weight.dtype == torch.float32:
                module.to(torch.bfloat16)


def run_trainer_case(folder, batch, seq, qlora, kbit_prep, steps=3, trl_021=False):
    """The same setup through transformers' Trainer (bf16=True, adamw_torch, gradient checkpointing
    with use_reentrant=True as transformers 4.x defaulted to): its own autocast, loss and step."""
    from peft import LoraConfig, get_peft_model
    from transformers import Trainer, TrainingArguments

    torch.cuda.empty_cache()
    model = load_model(folder, qlora)
    gc_kwargs = {"use_reentrant": True}
    if kbit_prep:
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=True, gradient_checkpointing_kwargs=gc_kwargs
        )
    else:
        model.enable_input_require_grads()
    model = get_peft_model(
        model,
        LoraConfig(r=16, lora_alpha=32, lora_dropout=0.1,
                   target_modules=["q_proj", "k_proj", "v_proj", "o_proj"], task_type="CAUSAL_LM"),
    )
    if trl_021:
        trl_021_casting(model)
    tokens = torch.randint(0, SHAPE["vocab_size"], (batch * steps, seq))
    rows = [{"input_ids": t, "labels": t} for t in tokens]
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(), per_device_train_batch_size=batch, max_steps=steps,
        bf16=True, gradient_checkpointing=True, gradient_checkpointing_kwargs=gc_kwargs,
        optim="adamw_torch", learning_rate=1e-5, lr_scheduler_type="constant",
        save_strategy="no", logging_strategy="no", report_to="none",
        skip_memory_metrics=False, dataloader_pin_memory=False,
    )
    trainer = Trainer(model=model, args=args, train_dataset=rows)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    result = trainer.train()
    torch.cuda.synchronize()
    record = dict(base=base, peak=torch.cuda.max_memory_allocated(),
                  reserved_peak=torch.cuda.max_memory_reserved(),
                  end=torch.cuda.memory_allocated(),
                  metrics={k: v for k, v in result.metrics.items() if "mem" in k})
    del trainer, model
    torch.cuda.empty_cache()
    return record


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="peft_peak.jsonl")
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--layers", default="2,4")
    parser.add_argument("--batches", default="1,2")
    parser.add_argument("--models", help="folder to keep the saved models in, reused if there")
    parser.add_argument("--trainer", action="store_true", help="run through transformers' Trainer")
    parser.add_argument(
        "--setups",
        default="lora,qlora,qlora-kbit,lora-nonreentrant,qlora-nonreentrant",
        help="comma-separated: lora, qlora, qlora-kbit, each optionally -nonreentrant; with "
        "--trainer also qlora-kbit-trl021 (TRL 0.13-0.21's preparation of a 4-bit model)",
    )
    args = parser.parse_args()
    versions = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}
    for name in ("transformers", "peft", "bitsandbytes", "accelerate"):
        try:
            versions[name] = __import__(name).__version__
        except Exception as error:  # noqa: BLE001 - a missing package is reported, not fatal
            versions[name] = f"missing: {error}"
    log(json.dumps(versions))
    layer_counts = [int(n) for n in args.layers.split(",")]
    batches = [int(n) for n in args.batches.split(",")]
    folders = {}
    root = args.models or tempfile.mkdtemp()
    for layers in layer_counts:
        folders[layers] = os.path.join(root, f"mistral-{layers}")
        if not os.path.isdir(folders[layers]):
            save_model(layers, folders[layers])
    log("saved", folders)
    with open(args.out, "a") as out:
        out.write(json.dumps({"versions": versions}) + "\n")
        for setup in args.setups.split(","):
            qlora = setup.startswith("qlora")
            kbit_prep = "kbit" in setup
            reentrant = not setup.endswith("nonreentrant")
            for layers in layer_counts:
                for batch in batches:
                    case = dict(setup=setup, layers=layers, batch=batch, seq=args.seq)
                    try:
                        if args.trainer:
                            case["trainer"] = True
                            case.update(run_trainer_case(folders[layers], batch, args.seq, qlora,
                                                         kbit_prep, trl_021="trl021" in setup))
                        else:
                            case.update(run_case(folders[layers], layers, batch, args.seq, qlora,
                                                 kbit_prep, reentrant))
                    except Exception:  # noqa: BLE001 - one failed case must not stop the rest
                        case["error"] = traceback.format_exc(limit=4)
                        torch.cuda.empty_cache()
                    log(json.dumps(case))
                    out.write(json.dumps(case) + "\n")
                    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
