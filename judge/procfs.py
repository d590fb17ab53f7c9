"""Processes as Linux's /proc shows them: the judge finds its workers'
descendants, orphans and stopped states here (judge.gpu_pause,
judge.reaper)."""

from __future__ import annotations

import os


def pids() -> list[int]:
    """Every process id /proc lists (empty where there is no /proc)."""
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state, ppid,
    pgrp, session...), or None when the process is gone or unreadable. The
    name may hold spaces and parentheses, so it is cut at the last ")"."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode(errors="replace")
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()


def command(pid: int) -> str:
    """The process's command name (/proc/PID/comm), or "" when it is gone."""
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return ""
