#!/usr/bin/env bash
# A Megatron-LM launch line (megatron/training/arguments.py's flags): Llama 3 8B's shape on two
# nodes of 8 GPUs, t 2 with sequence parallelism, p 2, the distributed optimizer, full
# recomputation, BF16, Transformer Engine's layers and its fused cross-entropy.
# Its verdict: trainmem --launch docs/examples/megatron-llama3-8b.sh
torchrun --nproc_per_node 8 --nnodes 2 --node_rank 0 --master_addr node0 --master_port 6000 \
  pretrain_gpt.py \
  --use-mcore-models \
  --num-layers 32 \
  --hidden-size 4096 \
  --ffn-hidden-size 14336 \
  --num-attention-heads 32 \
  --group-query-attention \
  --num-query-groups 8 \
  --seq-length 8192 \
  --max-position-embeddings 8192 \
  --position-embedding-type rope \
  --rotary-base 500000 \
  --normalization RMSNorm \
  --swiglu \
  --disable-bias-linear \
  --untie-embeddings-and-output-weights \
  --tokenizer-type NullTokenizer \
  --vocab-size 128256 \
  --attention-dropout 0.0 \
  --hidden-dropout 0.0 \
  --tensor-model-parallel-size 2 \
  --sequence-parallel \
  --pipeline-model-parallel-size 2 \
  --micro-batch-size 1 \
  --global-batch-size 256 \
  --use-distributed-optimizer \
  --overlap-grad-reduce \
  --recompute-granularity full \
  --recompute-method uniform \
  --recompute-num-layers 1 \
  --bf16 \
  --cross-entropy-loss-fusion \
  --cross-entropy-fusion-impl te \
  --lr 3e-4 \
  --min-lr 3e-5 \
  --lr-decay-style cosine \
  --train-iters 10000 \
  --mock-data \
  --log-interval 10
