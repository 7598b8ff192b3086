#!/usr/bin/env python3
"""List what one decoder layer saves for its backward pass under LoRA and QLoRA, tensor by tensor.

What a layer saves without recomputation is what the layer being rebuilt under gradient
checkpointing saves, so this is the working set of the rebuilt layer. A Mistral-7B-shaped decoder
(hidden 4096, MLP 14336, 32 heads, 8 key/value heads) with one layer and random weights is saved and
loaded back through `from_pretrained` (BF16, or NF4 with double quantisation through
bitsandbytes), PEFT's LoRA r 16 goes on q, k, v and o with dropout 0.1, and one forward pass of
`--seq` tokens runs under BF16 autocast inside torch.autograd.graph.saved_tensors_hooks. Each saved
tensor is recorded once per storage with its dtype, shape and the module that saved it; those with
a dimension of `--seq` (384 by default, which no other dimension equals) grow with the tokens.

Setups: lora, qlora, qlora-kbit (PEFT's prepare_model_for_kbit_training), qlora-kbit-trl021 (TRL
0.13-0.21's peft_module_casting_to_bf16 after it). Writes one JSON line per setup to --out.
"""

import argparse
import json
import os
import sys
import tempfile

import torch

from peft_peak import SHAPE, load_model, save_model, trl_021_casting


def saved_in_layer(folder, setup, seq):
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training

    model = load_model(folder, setup.startswith("qlora"))
    if "kbit" in setup:
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    model.enable_input_require_grads()
    model = get_peft_model(
        model,
        LoraConfig(r=16, lora_alpha=32, lora_dropout=0.1,
                   target_modules=["q_proj", "k_proj", "v_proj", "o_proj"], task_type="CAUSAL_LM"),
    )
    if "trl021" in setup:
        trl_021_casting(model)
    model.train()
    parameters = {p.data_ptr() for p in model.parameters()}
    running = []
    for name, module in model.named_modules():
        module.register_forward_pre_hook(lambda m, a, name=name: running.append(name))
        module.register_forward_hook(lambda m, a, o: running.pop() and None)
    seen = {}

    def pack(tensor):
        if tensor.data_ptr() not in parameters and tensor.data_ptr() not in seen:
            seen[tensor.data_ptr()] = dict(
                module=running[-1] if running else "", dtype=str(tensor.dtype).replace("torch.", ""),
                shape=list(tensor.shape), bytes=tensor.numel() * tensor.element_size(),
                grows=seq in tensor.shape)
        return tensor

    tokens = torch.randint(0, SHAPE["vocab_size"], (1, seq), device="cuda")
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(input_ids=tokens)
    del out
    layer = [t for t in seen.values() if ".layers.0." in t["module"] and t["grows"]]
    per_token = sum(t["bytes"] for t in layer) / seq
    return dict(setup=setup, seq=seq, layer_bytes_per_token=per_token, layer=layer,
                outside=[t for t in seen.values() if ".layers.0." not in t["module"]])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="peft_saved.jsonl")
    parser.add_argument("--seq", type=int, default=384)
    parser.add_argument("--setups", default="lora,qlora,qlora-kbit,qlora-kbit-trl021")
    args = parser.parse_args()
    folder = os.path.join(tempfile.mkdtemp(), "mistral-1")
    save_model(1, folder)
    with open(args.out, "a") as out:
        for setup in args.setups.split(","):
            record = saved_in_layer(folder, setup, args.seq)
            print(setup, record["layer_bytes_per_token"], flush=True)
            for t in record["layer"]:
                print("   ", t["module"], t["dtype"], t["shape"], flush=True)
            out.write(json.dumps(record) + "\n")
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
