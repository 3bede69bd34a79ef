#!/usr/bin/env bash
# The pure-Python packages jaxbench needs beside JAX, as wheels in DIR (default wheels/), for a
# host where JAX is preinstalled and no package index can be reached (a TPU VM behind a
# firewall). Run where pip reaches an index; copy DIR and the checkout to the host; install
# there as the README says ("On a TPU or GPU host"). JAX, jaxlib, numpy and ml_dtypes come
# from the host; setuptools is the build backend (`pip install --no-build-isolation -e .`
# builds with the venv's own, and before 70.1 it needs the `wheel` package too).
set -euo pipefail
dir="${1:-wheels}"
mkdir -p "$dir"
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$dir" \
  'click>=8.1' 'rich>=13' 'markdown-it-py>=2.2' 'mdurl~=0.1' 'pygments>=2.13' \
  'flatbuffers>=24' 'absl-py>=1.0' 'einops>=0.7' 'setuptools>=70.1'
ls "$dir"
