#!/bin/bash
# The verifier's GPU job, as one bounded pass: run it on a machine with a CUDA device, a CUDA
# build of torch and repro-lint's dependencies (this checkout is put on PYTHONPATH).
#
#   bash benchmarks/gpu_job.sh OUT_DIR [PYTHON]
#
# Each step has its own time limit, writes its output into OUT_DIR as it finishes and logs its
# exit status in OUT_DIR/log.txt, so a step that stalls loses only itself. The steps: the
# CUDA-marked tests, the catalog (JSON), the examples' RPL401/RPL402 findings probed on the GPU,
# and `verify --run --twice` on tests/fixtures/verify/cuda_atomics.py with and without
# deterministic mode. On an H200 the steps should take about 7 minutes together (estimated from
# the runs of each that docs/verify.md reports; the script has not yet run end to end): most of it
# is torchvision's roi_align, which deterministic mode compiles in each process (about 70 s).
set -u
out=$(realpath -m "${1:?usage: bash benchmarks/gpu_job.sh OUT_DIR [PYTHON]}")
python=${2:-python3}
case $python in */*) python=$(cd "$(dirname "$python")" && pwd)/$(basename "$python") ;; esac
cd "$(dirname "$0")/.." || exit 1
mkdir -p "$out"
log=$out/log.txt
# The tests and the traced runs start `python -m repro_lint` in other directories.
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 REPRO_LINT_NO_DAEMON=1
step() { echo "=== $(date -u +%T) $*" | tee -a "$log"; }
bounded() {  # bounded SECONDS COMMAND...: run, log the output and the exit status
    local seconds=$1
    shift
    timeout "$seconds" "$@" >> "$log" 2>&1
    echo "exit status $?" >> "$log"
}

step environment
{
    nvidia-smi
    "$python" -c "import sys, torch; print(sys.version); print(torch.__version__, \
torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.get_device_name(0))"
} >> "$log" 2>&1
step CUDA-marked tests
bounded 300 "$python" -m pytest -q -p no:cacheprovider -m cuda tests/test_verify_runner.py \
    tests/test_verify_twice.py
step catalog, JSON
# (Stopped by its time limit, it still writes the entries probed: SIGTERM exits 143.)
bounded 400 "$python" -m repro_lint verify --catalog --device cuda --runs 10 \
    --output-format json -q -o "$out/verify-catalog-cuda.json"
step the examples\' findings
bounded 120 "$python" -m repro_lint verify examples --device cuda --runs 10 \
    --output-format json -q -o "$out/verify-examples-cuda.json"
work=$(mktemp -d)
cp tests/fixtures/verify/cuda_atomics.py "$work"
printf '[project]\nname = "demo"\n' > "$work/pyproject.toml"
step twice, atomics
(cd "$work" && bounded 180 "$python" -m repro_lint verify --run cuda_atomics.py --twice \
    --output-format json -o "$out/verify-twice-atomics.json" -- 4)
step twice, deterministic mode
(cd "$work" && bounded 180 "$python" -m repro_lint verify --run cuda_atomics.py --twice \
    -o "$out/verify-twice-deterministic.txt" -- 4 --deterministic)
rm -rf "$work"
step done
