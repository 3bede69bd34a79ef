"""A fork server for tracers: imports the harness once, then forks one fresh tracer per request.

Starting a tracer from scratch costs about a second of CPU, most of it importing JAX, Pallas
and the task modules; on a small host that competes with the evaluation in flight. The pool
(:mod:`jaxbench.evaluator.parent.pool`) starts this process once, with the tracers' environment, and
asks it for each tracer over a Unix socket; the child of each fork runs
:func:`jaxbench.evaluator.sandbox.tracer.main` from its isolation step on (namespaces, hiding
the host, Landlock), exactly as a tracer started as a command does after its imports.

What it never does: run candidate code, hold a job, a token or a secret (jobs go to each
tracer over its own stdin pipe), or start a thread (it forks, and a fresh user namespace
needs a single-threaded process; it checks before every fork). A tracer cannot reach it: the
socket is closed in the child before anything else, Landlock's scopes stop signals and ptrace
outside the tracer's domain, the server is not dumpable (no process of the user may ptrace it or
read its /proc; each child makes itself dumpable again before it becomes a tracer), and memory
after the fork is the child's own copy.

Protocol (``SOCK_SEQPACKET``, one message per datagram): the pool sends the tracer's private
directory with two file descriptors attached (the read end of the tracer's stdin pipe, its
log file for stdout and stderr) and gets ``pid <n>`` back; when a tracer exits, the server
sends ``exit <pid> <code>`` (negative: killed by that signal, as ``subprocess`` reports it).
When the pool's end closes, the server exits; its tracers get SIGKILL (parent-death signal).
"""

from __future__ import annotations

import array
import os
import select
import signal
import socket
import sys

from jaxbench.evaluator.sandbox import isolation

_MAX_FDS = 2


def _receive(sock: socket.socket) -> tuple[bytes, list[int]]:
    fds = array.array("i")
    message, ancillary, _flags, _addr = sock.recvmsg(4096, socket.CMSG_SPACE(_MAX_FDS * fds.itemsize))
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
    return message, list(fds)


def _child(sock: socket.socket, wake: tuple[int, int], fds: list[int], directory: str,
           server: int, grouped: int) -> None:
    """In the fork: drop everything of the server's, become the tracer. Never returns."""
    try:
        # Dumpable again, as a tracer started as a command is: the parent checks its /proc (its
        # namespaces, its mounts), and it writes its own uid_map, neither possible for a
        # non-dumpable process of an unprivileged user. Nothing of the server's is secret.
        isolation.make_non_dumpable(undo=True)
        sock.close()
        for fd in wake:
            os.close(fd)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()  # a process group of its own, killed whole by the pool
        os.close(grouped)  # the server may name this pid now: its group exists
        stdin_fd, log_fd = fds
        os.dup2(stdin_fd, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        for fd in fds:
            os.close(fd)
        if not isolation.set_parent_death_signal() or os.getppid() != server:
            os._exit(70)  # the server died already, or no parent-death signal: no tracer
        os.chdir(directory)
        sys.argv = [sys.argv[0], directory]  # as a tracer started as a command sees it
        from jaxbench.evaluator.sandbox import tracer

        isolation.expect_parent(server)  # re-armed after the namespaces: checked again then
        tracer.main(directory)
    except BaseException:  # noqa: BLE001 - nothing may return into the server's loop
        import traceback

        traceback.print_exc()
    finally:
        os._exit(71)


def _reap(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        sock.send(f"exit {pid} {code}".encode())


def serve(sock: socket.socket) -> None:
    from jaxbench.evaluator.sandbox import tracer

    # The ancestor of every tracer: no other process of the user may ptrace it or read its
    # /proc (each fork undoes this for itself, see _child).
    isolation.make_non_dumpable()
    tracer.import_harness()
    wake = os.pipe()
    for fd in wake:
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake[1])
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes select through the pipe
    server = os.getpid()
    while True:
        ready, _, _ = select.select([sock, wake[0]], [], [])
        if wake[0] in ready:
            while True:
                try:
                    if not os.read(wake[0], 512):
                        break
                except BlockingIOError:
                    break
            _reap(sock)
        if sock not in ready:
            continue
        message, fds = _receive(sock)
        if not message:  # the pool closed its end
            return
        if len(fds) != _MAX_FDS or isolation.thread_count() != 1:
            for fd in fds:
                os.close(fd)
            sock.send(b"error " + (b"expected two descriptors" if len(fds) != _MAX_FDS
                                   else b"the server is not single-threaded"))
            continue
        # The pid goes to the pool only once the child leads its own process group: a pool
        # that closes at once kills the group, and before setsid there is none (the kill
        # found nothing and the spare lived on, its pool waiting for it forever).
        grouped_read, grouped = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(grouped_read)
            _child(sock, wake, fds, message.decode(), server, grouped)
        os.close(grouped)
        os.read(grouped_read, 1)  # end of file: the child closed its end (or died)
        os.close(grouped_read)
        for fd in fds:
            os.close(fd)
        sock.send(f"pid {pid}".encode())
        _reap(sock)


def main() -> None:
    """``python -P -m jaxbench.evaluator.sandbox.zygote SOCKET_FD PARENT_PID`` (``-P``: the
    working directory is never on its path; the pool starts it in ``/``)"""
    sock = socket.socket(fileno=int(sys.argv[1]))
    if not isolation.set_parent_death_signal() or os.getppid() != int(sys.argv[2]):
        sys.exit(1)  # no parent-death signal, or the pool is gone already
    try:
        serve(sock)
    finally:
        os._exit(0)


if __name__ == "__main__":
    main()
