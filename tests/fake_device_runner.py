"""A stand-in for the trusted runner on a device, for tests/test_device_lease.py.

It speaks the runner's protocol (with ``--probe`` a probe line first, as the first owner;
``ready``, one JSON request per line, lease lines
answered ``go``) and pretends to use one device: each request "compiles" for
``compile_s``, asks for the exclusive lease, "times" for ``time_s``, asks for the shared
lease back and "rechecks" for ``recheck_s``. Every use of the device is appended to the
file named by ``FAKE_DEVICE_LOG`` as ``phase start end name`` (CLOCK_MONOTONIC, which all
processes share), so a test can check from the device's side that no timing overlapped
anything else.
"""

import json
import os
import sys
import time

LOG = os.environ["FAKE_DEVICE_LOG"]


def use(phase: str, seconds: float, name: str) -> None:
    start = time.monotonic()
    time.sleep(seconds)
    line = f"{phase} {start:.6f} {time.monotonic():.6f} {name}\n".encode()
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def lease(request: dict, kind: str) -> None:
    if request.get("lease"):
        print(json.dumps({"lease": kind}), flush=True)
        assert sys.stdin.readline().strip() == "go"


def main() -> None:
    if "--probe" in sys.argv[1:]:  # started as the first owner: the probe's line first
        print("probe " + json.dumps({"platform": os.environ.get("FAKE_PLATFORM", "tpu"),
                                     "device_kind": "TPU v5 lite",
                                     "count": int(os.environ.get("FAKE_CHIPS", "1")),
                                     "memory_bytes": None}), flush=True)
        if os.environ.get("FAKE_PLATFORM") == "cpu":
            return
    print("ready", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        name = request["name"]
        use("compile", request.get("compile_s", 0.2), name)
        lease(request, "exclusive")
        if request.get("die_while_timing"):
            os._exit(3)
        use("time", request.get("time_s", 0.3), name)
        lease(request, "shared")
        use("recheck", request.get("recheck_s", 0.05), name)
        print(json.dumps({"status": "ran", "name": name,
                          **({"pid": os.getpid()} if request.get("pid") else {}),
                          **({"retire": True} if request.get("retire") else {})}), flush=True)


if __name__ == "__main__":
    main()
