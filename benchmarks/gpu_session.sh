#!/usr/bin/env bash
# One lent GPU, one call: the Triton tests, the CRAB kernel check, then the paper-scale queue in
# the time left.
#
#   XCT_GIT_COMMIT=<commit> benchmarks/gpu_session.sh SECONDS OUT DATA [WHEELS]
#
# Run from the repository root on the device. SECONDS bounds the whole script; OUT receives the
# records to commit (gpu_check/ and the queue's results files) and log.txt; DATA holds the
# datasets; WHEELS is a folder of wheels the device image lacks (Darts, holidays, PyOD, sktime,
# scikit-base, pytest), installed into /tmp/site. XCT_KERNEL_BASELINE, if set, names a copy of
# triton_crab.py from another commit that kernel_ab.py times the kernels against (1/5 of the time)
# after the check. The kernel check gets 3/5 of the time; the queue starts
# only after the kernel passed its correctness check, and resumes from the committed records.
# The tree travels without its own .git, so the records name the commit XCT_GIT_COMMIT gives
# (read from a clean checkout where the call is made, not on the lent machine).
set -u -o pipefail
budget=${1:?seconds}
out=${2:?output folder}
data=${3:?data folder}
wheels=${4:-}
: "${XCT_GIT_COMMIT:?set XCT_GIT_COMMIT to the commit of this tree, so that no record names another}"
start=$SECONDS
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
if [ -n "$wheels" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$wheels"/*.whl || exit 2
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
gpu=$(python3 -c "import torch; print(torch.cuda.get_device_name().split()[1].lower())")  # NVIDIA H100 ... -> h100
# First the project's Triton tests, compiled for this GPU (not the interpreter) at the fixed tiling
# (XCT_TRITON_AUTOTUNE=0: one compilation per kernel and shape, no timed sweep; the autotuner's
# bookkeeping is tested on the CPU), so that the queue starts within minutes: nothing else runs on
# kernels that fail them. pytest-xdist may be missing here: the options drop it.
python3 -c "import pytest" 2>/dev/null || { echo "pytest is not installed: carry its wheel in WHEELS"; exit 2; }
tests_start=$SECONDS
if ! XCT_TRITON_AUTOTUNE=0 timeout 150 python3 -m pytest -q -p no:cacheprovider -o addopts="" \
        -k "not compile_for_a_gpu and not autotuned" tests/nn/test_triton_crab.py tests/nn/test_ops_contract.py; then
    echo "the Triton tests failed on $gpu: the kernel check and the queue do not run"
    exit 3
fi
echo "the GPU test subset took $((SECONDS - tests_start)) s (goal: under 90)"
check="benchmarks/results/gpu_check/$(date -u +%F)-$gpu"
n=2
while [ -e "$check" ]; do  # a committed record of the same day and card is never overwritten
    check="benchmarks/results/gpu_check/$(date -u +%F)-$gpu-$n"
    n=$((n + 1))
done
timeout $((budget * 3 / 5)) python -m benchmarks.gpu_check --kernel-only --output "$check"
rc=$?
cp -r "$check" "$out/gpu_check"
if [ $rc -ne 0 ] && [ $rc -ne 124 ]; then
    echo "gpu_check exited with $rc: the queue does not run on a kernel that failed its check"
    exit $rc
fi
if [ -n "${XCT_KERNEL_BASELINE:-}" ]; then  # the kernels against an older copy, on this card
    timeout $((budget / 5)) python -m benchmarks.kernel_ab --baseline "$XCT_KERNEL_BASELINE" | tee "$out/kernel_ab.txt"
fi
left=$((budget - (SECONDS - start) - 20))
timeout "$left" python -m benchmarks.paper_scale --data-dir "$data" --budget-s "$left"
for task in detect impute forecast; do
    [ -f "benchmarks/results/paper_scale/$task/results.jsonl" ] &&
        cp "benchmarks/results/paper_scale/$task/results.jsonl" "$out/$task.jsonl"
done
cp benchmarks/results/paper_scale/converged.json "$out/" 2>/dev/null
echo "done in $((SECONDS - start)) s"
