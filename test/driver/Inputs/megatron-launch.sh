#!/bin/bash
# A Megatron-LM launch script in the style of examples/gpt3/train_gpt3_175b_distributed.sh,
# for test/driver/export-trainers.test: variables, arrays, torchrun's world size.

GPUS_PER_NODE=8
NUM_NODES=1
MBS=1

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --master_addr localhost
    --master_port 6000
)

GPT_MODEL_ARGS=(
    --num-layers 8
    --hidden-size 1024
    --num-attention-heads 16
    --seq-length 1024
    --max-position-embeddings 1024
    --attention-backend flash  # FlashAttention
)

TRAINING_ARGS=(
    --micro-batch-size ${MBS}
    --global-batch-size 64
    --lr 6.0e-5
    --bf16
    --recompute-activations
    --use-distributed-optimizer
    --overlap-grad-reduce
)

MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size 2
    --pipeline-model-parallel-size 2
    --num-layers-per-virtual-pipeline-stage 2
    --sequence-parallel
)

torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${GPT_MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]} \
    --data-path my-corpus_text_document \
    --log-interval 100
