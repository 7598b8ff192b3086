#!/usr/bin/env bash
# A Megatron-LM launch line with Megatron-FSDP, flattened from the arrays of NVIDIA's own example
# (Megatron-LM d98e8a6, examples/megatron_fsdp/train_llama3_8b_fsdp_h100_fp8.sh, its mock data):
# Llama 3 8B's shape on 8 H100s, optim_grads_params (ZeRO 3) built on the meta device, NCCL's user
# buffers with the double buffer, FP8 parameters under delayed scaling, no recomputation.
# Its verdict: trainmem --launch docs/examples/megatron-fsdp-llama3-8b-fp8.sh
torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py \
  --use-mcore-models --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 \
  --num-attention-heads 32 --group-query-attention --num-query-groups 8 --kv-channels 128 \
  --seq-length 8192 --max-position-embeddings 8192 --position-embedding-type rope \
  --rotary-base 1000000 --rotary-percent 1.0 --attention-dropout 0.0 --hidden-dropout 0.0 \
  --swiglu --normalization RMSNorm --init-method-std 0.0134 --attention-backend fused \
  --apply-layernorm-1p --untie-embeddings-and-output-weights --disable-bias-linear \
  --micro-batch-size 1 --global-batch-size 128 --train-samples 1953125000 \
  --lr-decay-samples 1949218748 --lr-warmup-samples 3906252 --lr 0.00015 --min-lr 0.00001 \
  --decoupled-lr 5.0e-4 --decoupled-min-lr 4.5e-5 --lr-decay-style cosine --clip-grad 1.0 \
  --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.95 --bf16 --cross-entropy-loss-fusion \
  --no-check-for-nan-in-loss-and-grad --manual-gc --empty-unused-memory-level 1 \
  --exit-duration-in-mins 235 \
  --use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params \
  --no-gradient-accumulation-fusion --calculate-per-token-loss --init-model-with-meta-device \
  --ckpt-format fsdp_dtensor --use-nccl-ub --fsdp-double-buffer --fsdp-manual-registration \
  --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather \
  --fp8-format hybrid --fp8-amax-history-len 1024 --fp8-amax-compute-algo max --fp8-param-gather \
  --tensor-model-parallel-size 1 --context-parallel-size 1 --sequence-parallel \
  --mock-data --tokenizer-type NullTokenizer --vocab-size 128256 --data-cache-path /tmp/cache \
  --tiktoken-pattern v2 --split '99,1,0' --no-create-attention-mask-in-dataloader \
  --no-mmap-bin-files --num-workers 1 \
  --log-interval 1 --eval-iters 32 --eval-interval 100 --save-interval 1000 --log-throughput \
  --logging-level 20 --distributed-timeout-minutes 60 --save checkpoints/llama3_8b_fsdp_fp8 \
  --load checkpoints/llama3_8b_fsdp_fp8 --tensorboard-dir tensorboard_logs/llama3_8b_fsdp_fp8
