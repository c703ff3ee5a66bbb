#!/usr/bin/env bash
# What a session runs on a lent GPU machine (the `device` tool), from the repo root:
#   bash benchmarks/gpu_session.sh tests|gputests|digits|fashion|cnspeed|issue23|issue32 OUTDIR
# issue23 is the one script of issue 23's GPU checks, sized for a 15-minute lease:
# the GPU tests, then the three GPU benchmarks against their arithmetic floors
# (NeuralTS and NeuralUCB on digits, T = 1,797; a CN round with a full Z), each
# printing its table; a summary of the tables' last lines closes the log.
# issue32 (about 12 minutes, 14 at its timeouts, no step over 4): the GPU tests (the device-memory test
# over 60 trainings, its growth printed, and the replay rows and diagonal U kept on the GPU, among
# them), NeuralTS digits T = 1,797 and a full-Z CN round against their floors,
# NeuralTS on the flat-cost defaults (mini-batches, the replay kept on the GPU),
# then benchmarks/speed/gpu_round_profile.py's per-round counts of syncs, copies
# (pageable or pinned) and allocations from torch.profiler for NeuralTS on the
# papers' schedule and on the defaults, and CN-UCB; the summary prints each
# benchmark's ratio to its floor and the counts. Expected after the second step of
# the issue (CPU counts, tests/networks/test_host_traffic.py): a NeuralTS update
# reads back once (was 5 times), no read in a mini-batch step, one pinned
# host-to-device copy of the new rows per training instead of the whole buffer.
# Expected after the J-step form (issue 32, third step; CPU tests in
# tests/networks/test_jstep.py): a NeuralTS training, full-batch or mini-batch,
# is ONE cudaGraphLaunch (the papers' schedule: ~1 a round, was ~100) and one
# pinned host-to-device copy of its layouts; the profile's "J-step" rows count
# replays (one a training once its shapes were seen), captures (one per row
# capacity: eight per doubling of the rows on the papers' schedule) and eager
# runs (none expected on the GPU); test_cuda_j_step_graph_replays_equal_eager_steps
# prints its counts (2 captures, 21 replays); neural_ts.py prints its trainings'
# (digits T = 1,797: about 40 captures, one per row capacity, the rest replays).
# The machine has torch with CUDA but not skorch: the skorch wheel travels in .whl/
# (pip download --no-deps skorch==1.4.0 -d .whl), Fashion-MNIST's four files in
# .fmnist/ (Debian's dataset-fashion-mnist). Logs go to OUTDIR.
set -uo pipefail
what=$1 out=${2:-/tmp}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c "import torch, skorch, sklearn; print('torch', torch.__version__, \
'skorch', skorch.__version__, 'sklearn', sklearn.__version__)"
bench="python3 benchmarks/speed/neural_ts.py --device cuda"
case $what in
tests)  # the whole suite, the GPU tests included
    python3 -m pytest -n 8 -q -rs 2>&1 | tee "$out/tests.log" | tail -40 ;;
gputests)  # only the CUDA-against-CPU tests
    python3 -m pytest -q -rs tests/test_gpu.py 2>&1 | tee "$out/gputests.log" ;;
digits)  # the CPU runs' settings on the GPU
    $bench --n-rounds 10000 --max-train-rounds 1000 2>&1 | tee "$out/digits_10k.log"
    $bench --n-rounds 10000 --max-train-rounds 1000 --policy ucb 2>&1 \
        | tee "$out/digits_10k_ucb.log"
    $bench --n-rounds 1797 2>&1 | tee "$out/digits_1797.log"
    $bench --n-rounds 1797 --mirror 2>&1 | tee "$out/digits_1797_mirror.log" ;;
fashion)  # PERFORMANCE.md's GPU target: 10,000 rounds, d = 784, K = 10
    $bench --dataset fashion_mnist --data-home .fmnist --n-rounds 10000 \
        "${@:3}" 2>&1 | tee "$out/fashion_10k.log" ;;
cnspeed)  # combinatorial neural bandits: a round with a full Z (p = 8,100) on the GPU
    python3 benchmarks/speed/cn_full_z.py --device cuda 2>&1 \
        | tee "$out/cn_speed.log" ;;
issue23)  # GPU tests, then NeuralTS/NeuralUCB digits T = 1,797 and a full-Z CN round
    timeout 240 python3 -m pytest -q -rs tests/test_gpu.py 2>&1 \
        | tee "$out/gputests.log" | tail -25
    timeout 200 $bench --n-rounds 1797 2>&1 | tee "$out/digits_1797_ts.log"
    timeout 200 $bench --n-rounds 1797 --policy ucb 2>&1 \
        | tee "$out/digits_1797_ucb.log"
    timeout 120 python3 benchmarks/speed/cn_full_z.py --device cuda \
        --contexts standardised 2>&1 | tee "$out/cn_full_z.log"
    echo "== summary (each table's closing lines) =="
    for log in gputests digits_1797_ts digits_1797_ucb cn_full_z; do
        echo "-- $log"; tail -6 "$out/$log.log"
    done ;;
issue32)  # GPU tests, NeuralTS and a full-Z CN round against their floors, counts
    timeout 240 python3 -m pytest -q -rsP tests/test_gpu.py 2>&1 \
        | tee "$out/gputests.log" | tail -25
    timeout 200 $bench --n-rounds 1797 2>&1 | tee "$out/digits_1797_ts.log"
    timeout 120 python3 benchmarks/speed/cn_full_z.py --device cuda --repeats 10 \
        --contexts standardised 2>&1 | tee "$out/cn_full_z.log"
    timeout 120 python3 benchmarks/speed/neural_ts.py --device cuda --n-rounds 1797 \
        --defaults 2>&1 | tee "$out/digits_1797_ts_defaults.log"
    timeout 150 python3 benchmarks/speed/gpu_round_profile.py --device cuda \
        2>&1 | tee "$out/round_profile.log"
    echo "== summary: ratios to the floors, then per-round counts =="
    tail -3 "$out/gputests.log"
    grep -h "device memory grown" "$out/gputests.log"
    grep -h "J-step trainings" "$out/gputests.log"
    grep -h "capture" "$out/gputests.log" | grep -i "warn" | head -3
    grep -i "floor\|J-step" "$out/digits_1797_ts.log" | tail -5
    grep -i "wall time\|round ms\|all rounds\|J-step" "$out/digits_1797_ts_defaults.log"
    grep -E "CNUCB|CNTS|beside" "$out/cn_full_z.log"
    tail -17 "$out/round_profile.log" ;;
esac
