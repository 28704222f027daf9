#!/bin/sh
# The command both CI jobs run (and tests/examples/test_ci_example.py): replay the recorded
# AI-planned housing workflow offline -- no model, no key, no network -- and leave in OUT
# the notebook, its state, a JUnit report and an HTML report.
#   sh examples/ci/run.sh [OUT]        (from the repository root; OUT defaults to ci-out)
# NOTEBOOK_BCC overrides the command (e.g. "python -m notebook_bcc").
set -eu
OUT="${1:-ci-out}"
${NOTEBOOK_BCC:-notebook-bcc} run examples/housing-ai \
    --planner replay \
    --auto-confirm \
    --notebook "$OUT/housing-ai.ipynb" \
    --junit-xml "$OUT/junit.xml" \
    --report "$OUT/report.html" \
    --log-output
