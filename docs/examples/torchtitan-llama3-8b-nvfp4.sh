# torchtitan's NVFP4 recipe for Llama 3 8B on one node of 4 GB200s, as its nvfp4.md runs it
# (torchtitan b5bcd76c, August 2026), with the CUDA graphs its trainer captures by default turned
# off, which trainmem does not model, and without nvfp4.md's --dataloader.dataset, which that
# torchtitan's CLI no longer takes (GrainDataLoader.Config suppresses it since 1b04fc1c):
#   trainmem --launch docs/examples/torchtitan-llama3-8b-nvfp4.sh --device gb200
torchrun --standalone --nproc_per_node 4 \
  -m torchtitan.train \
  --module llama3 \
  --config llama3_8b_first_85_pct_layers_nvfp4 \
  --parallelism.tensor_parallel_degree 1 \
  --parallelism.data_parallel_shard_degree 4 \
  --training.num_tokens_per_microbatch_per_dp_rank 65536 \
  --training.max_context_length 2048 \
  --training.steps 763 \
  --training.disable_cuda_graphs \
  --metrics.log_freq 10 \
  --optimizer.param-groups.0.optimizer-kwargs.lr 0.0003
