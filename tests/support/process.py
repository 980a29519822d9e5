"""Stopping the helper processes tests start (dnsmasq, redis-server, the reference service)."""

from __future__ import annotations

import signal
import subprocess

#: how long a process may take to exit after each signal
EXIT_TIMEOUT = 5.0


def end_process(proc: subprocess.Popen[bytes] | None, sig: int = signal.SIGTERM) -> None:
    """Send ``sig`` to a running ``proc`` and wait; SIGKILL it if it lingers."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout=EXIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=EXIT_TIMEOUT)
