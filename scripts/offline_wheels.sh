#!/usr/bin/env bash
# The pure-Python packages jaxbench needs beside JAX, as wheels in DIR (default wheels/), for a
# host where JAX is preinstalled and no package index can be reached (a TPU VM behind a
# firewall). Run where pip reaches an index; copy DIR and the checkout to the host; install
# there as the README says ("On a TPU or GPU host"). JAX, jaxlib, numpy and ml_dtypes come
# from the host; setuptools is the build backend (`pip install --no-build-isolation -e .`
# builds with the venv's own, and before 70.1 it needs the `wheel` package too).
#
#     bash scripts/offline_wheels.sh [DIR] [tokamax]
#
# With `tokamax`, also the optional Tokamax extra and what it imports beside JAX into
# DIR/tokamax (binary wheels for this machine's Python and platform: fetch them on one like
# the host's); install those with `pip install --no-index --no-deps DIR/tokamax/*.whl`.
set -euo pipefail
dir="${1:-wheels}"
mkdir -p "$dir"
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$dir" \
  'click>=8.1' 'rich>=13' 'markdown-it-py>=2.2' 'mdurl~=0.1' 'pygments>=2.13' \
  'flatbuffers>=24' 'absl-py>=1.0' 'einops>=0.7' 'setuptools>=70.1'
if [ "${2:-}" = tokamax ]; then
  mkdir -p "$dir/tokamax"
  # what `import tokamax` loads beyond JAX, numpy, scipy and ml_dtypes (pip resolves the rest
  # of its declared dependencies, which it does not import, on a host with an index)
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$dir/tokamax" \
    'tokamax==0.0.12' einshape immutabledict jaxtyping wadler-lindig 'typeguard==2.13.3' \
    pydantic pydantic-core annotated-types typing-inspection typing-extensions tqdm qwix \
    flax optax chex toolz msgpack pyyaml treescope etils fsspec zipp filelock
fi
ls "$dir"
