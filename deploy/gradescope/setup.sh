#!/usr/bin/env bash
# Gradescope autograder image setup (runs once, when the image is built).
# Zip this folder's files with a copy of the tritonjudge source at
# ./tritonjudge/ (see docs/instructors.md) and upload the zip as the
# autograder. Gradescope's images have no GPU: grading runs on the CPU,
# under Triton's interpreter (small cases, no timing, no performance points).
set -euo pipefail
apt-get update
apt-get install -y --no-install-recommends python3 python3-venv python3-pip bubblewrap
python3 -m venv /opt/judge
/opt/judge/bin/pip install --upgrade pip
/opt/judge/bin/pip install "torch==2.13.0" -e "/autograder/source/tritonjudge[cpu]"
/opt/judge/bin/judge challenges
