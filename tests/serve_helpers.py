"""Starting and stopping a real ``jaxbench serve`` on loopback for the serve tests."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TASKS = REPO / "src/jaxbench/tasks/jaxbench"
NORM_SEED = TASKS / "12p_rmsnorm/seed_tpu.py"
GEMM_SEED = TASKS / "8p_gemm/seed_tpu.py"
ADVERSARIAL = REPO / "tests/adversarial/kernels"


class Server:
    """A ``jaxbench serve --port 0`` in its own process group, its stderr collected."""

    def __init__(self, out: Path, *args: str, env: dict[str, str] | None = None,
                 start_timeout_s: float = 180.0) -> None:
        self.out = out
        command = [sys.executable, "-m", "jaxbench.cli", "serve", "--port", "0", "--out", str(out),
                   *args]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True,
                                     env={**os.environ, "JAX_PLATFORMS": "cpu", **(env or {})})
        self.lines: list[str] = []
        self._listening = threading.Event()
        self.url = ""
        threading.Thread(target=self._drain, daemon=True).start()
        if not self._listening.wait(start_timeout_s) or not self.url:
            self.kill()
            raise RuntimeError("jaxbench serve did not start:\n" + "".join(self.lines[-40:]))
        self.wait_healthy(start_timeout_s)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            found = re.search(r"listening on (http://\S+?)[ ,]", line)
            if found:
                self.url = found.group(1)
                self._listening.set()
        self._listening.set()  # exited: no need to wait any longer

    def wait_healthy(self, timeout_s: float) -> None:
        import httpx

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("jaxbench serve exited:\n" + "".join(self.lines[-40:]))
            try:
                if httpx.get(self.url + "/v1/health", timeout=5, trust_env=False).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("jaxbench serve never became healthy:\n" + "".join(self.lines[-40:]))

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM, as an operator stops it; its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL to its whole process group (as the OOM killer or a crash would end it)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(30)

    def log(self) -> str:
        return "".join(self.lines)


def events(out: Path) -> list[dict]:
    import json

    path = out / "events.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines if line.strip()]


def evaluations_of(out: Path, digest: str) -> int:
    """Evaluation events of the source with this SHA-256."""
    return sum(1 for e in events(out) if e.get("type") == "evaluation" and e.get("source_sha256") == digest)


def variant(path: Path, tag: str) -> str:
    """A seed's source with a comment added: another kernel to the cache, the same verdict."""
    return path.read_text() + f"\n# variant {tag}\n"
