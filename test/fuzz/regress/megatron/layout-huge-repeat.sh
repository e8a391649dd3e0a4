
N=2
ARGS=(
  --pipeline-model-parallel-size $N
  --pipeline-model-parallel-layout "Et|(t|)*2147483648,tL"

  --use-distributed-optimizer --bf2147483648
)
torchrun --nnodes 1 --nproc_per_node 8 x.py ${ARGS[@]}
