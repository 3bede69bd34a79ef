"""The host attacks of tests/adversarial/host_profiles on this host, as a user's evaluator runs
them (device mode on a chip; interpret mode elsewhere), with what the seal is here:

    python scripts/seal_check.py OUT_DIR [--mode device] [--size small]

Plants a stand-in run secret where the attack kernel looks for it, listens on the loopback for
the gRPC attack (where sockets can be made), evaluates each attack kernel and the honest
control, and checks that nothing was read (no reading attack `correct`), written (no XLA dump
files; that kernel's honest part may still be `correct`) or connected to. Writes
OUT_DIR/seal_check.json (the probe, doctor's seal line, one entry per kernel) and prints a
table; exits 1 when any check fails.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ROOT / "tests" / "adversarial" / "host_profiles" / "kernels"
CHEATS = ROOT / "tests" / "adversarial" / "kernels"
KERNELS = [PROFILES / "run_secret_obfuscated.py", PROFILES / "ancestor_cmdline_obfuscated.py",
           CHEATS / "read_expert_exec_obfuscated.py", CHEATS / "proc_cmdlines_obfuscated.py",
           PROFILES / "xla_dump_outside_obfuscated.py", PROFILES / "distributed_tcp_obfuscated.py",
           PROFILES / "honest_control.py"]
SECRET = Path("/tmp/jaxbench_adversarial_run/.secret")
DUMP = Path("/tmp/jaxbench_adversarial_xla_dump")


def _listener() -> tuple[socket.socket | None, list[int]]:
    """A loopback TCP listener counting connections (None where this host makes no socket)."""
    accepted = [0]
    try:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        sock.settimeout(0.1)
    except OSError:
        return None, accepted

    def accept() -> None:
        while sock.fileno() >= 0:
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            accepted[0] += 1
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    return sock, accepted


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mode", default="interpret")
    parser.add_argument("--size", default="small")
    args = parser.parse_args()
    from jaxbench.evaluator import Evaluator
    from jaxbench.evaluator.doctor import seal_text
    from jaxbench.evaluator.sandbox import seal

    args.out.mkdir(parents=True, exist_ok=True)
    SECRET.parent.mkdir(parents=True, exist_ok=True)
    SECRET.write_text("00" * 32)
    shutil.rmtree(DUMP, ignore_errors=True)
    sock, accepted = _listener()
    report = {"probe": seal.probe(), "doctor_seal": seal_text(), "kernels": []}
    failed = []
    with Evaluator(spares=0) as evaluator:
        for path in KERNELS:
            source = path.read_text().replace("PORT", str(sock.getsockname()[1] if sock else 9))
            begun = time.monotonic()
            result = evaluator.evaluate(source, "8p_gemm", target="tpu", mode=args.mode,
                                        size=args.size, timeout_s=120)
            honest = path.name == "honest_control.py"
            # XLA's dump fails silently where nothing can be written and the kernel's honest
            # part goes on: what is checked there is that nothing was written (below)
            ok = (result.status == "correct") == honest or path.name.startswith("xla_dump")
            row = {"kernel": path.name, "status": result.status, "stage": result.stage,
                   "sealed": result.sealed, "message": result.message[:300],
                   "wall_s": round(time.monotonic() - begun, 1), "as_expected": ok}
            report["kernels"].append(row)
            if not ok:
                failed.append(path.name)
            print(f"{path.name:40} {result.status:14} {result.stage or '':8} sealed="
                  f"{result.sealed} {'ok' if ok else 'FAILED'}", flush=True)
    report["xla_dump_written"] = sorted(p.name for p in DUMP.iterdir()) if DUMP.exists() else []
    report["tcp_connections"] = accepted[0] if sock else "no sockets on this host"
    if report["xla_dump_written"]:
        failed.append("xla dump written")
    if sock and accepted[0]:
        failed.append("tcp connection made")
    report["failed"] = failed
    (args.out / "seal_check.json").write_text(json.dumps(report, indent=1))
    print(f"seal: {report['doctor_seal'][:200]}")
    print(f"{len(KERNELS) - len([f for f in failed if f.endswith('.py')])} of {len(KERNELS)} "
          f"kernels as expected; dump files {len(report['xla_dump_written'])}; connections "
          f"{report['tcp_connections']}; {'FAILED: ' + ', '.join(failed) if failed else 'ok'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
