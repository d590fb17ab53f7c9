"""Where a batch's CPU time goes, by kind of process: the judge itself,
its workers (`python -m judge.worker`), the compilers Triton calls (ptxas,
the C compiler building launchers), and the rest; with how many workers
were running, sleeping or stopped at each moment. A sampler of /proc for
bench scripts (bench/batch_gpu.py --profile), Linux only.

    with ProcProfile() as prof:
        ...
    prof.summary()   # {"cpu_seconds": {kind: s}, "workers": {...}, "timeline": [...]}
"""

from __future__ import annotations

import os
import threading
import time

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
COMPILERS = {"cc", "gcc", "cc1", "as", "ld", "collect2", "x86_64-linux-gnu-gcc", "clang"}


def _read(pid: str) -> tuple[str, str, int, int, int] | None:
    """(comm, state, ppid, own cpu ticks, waited-for children's ticks) of
    one process, None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            raw = f.read()
    except OSError:
        return None
    head, _, rest = raw.rpartition(")")
    comm = head.partition("(")[2]
    fields = rest.split()
    return comm, fields[0], int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class ProcProfile:
    def __init__(self, interval: float = 0.5):
        self.interval = interval
        self.me = os.getpid()
        self.kinds: dict[str, str] = {}
        self.last: dict[str, int] = {}
        self.last_children: dict[str, int] = {}
        self.totals: dict[str, float] = {}
        self.timeline: list[dict] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._began = 0.0

    def _kind(self, pid: str, comm: str) -> str:
        kind = self.kinds.get(pid)
        if kind is None:
            line = _cmdline(pid)
            if int(pid) == self.me:
                kind = "judge"
            elif "judge.worker" in line:
                kind = "worker"
            elif comm == "ptxas":
                kind = "ptxas"
            elif comm in COMPILERS:
                kind = "c_compiler"
            else:
                kind = "other"
            self.kinds[pid] = kind
        return kind

    def _sample(self) -> None:
        row = {"t": round(time.monotonic() - self._began, 2), "cpu": {}, "worker_states": {}}
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            got = _read(pid)
            if got is None:
                continue
            comm, state, _, ticks, children = got
            kind = self._kind(pid, comm)
            if kind in ("ptxas", "c_compiler"):
                # Counted when their worker waits for them (its children's
                # time below): most live for less than a sample.
                row[kind] = row.get(kind, 0) + 1
                continue
            self._add(row, kind, ticks - self.last.get(pid, 0))
            self.last[pid] = ticks
            if kind == "worker":
                row["worker_states"][state] = row["worker_states"].get(state, 0) + 1
                self._add(row, "worker_compilers", children - self.last_children.get(pid, 0))
                self.last_children[pid] = children
        self.timeline.append(row)

    def _add(self, row: dict, kind: str, ticks: int) -> None:
        if ticks > 0:
            seconds = ticks / TICK
            self.totals[kind] = self.totals.get(kind, 0.0) + seconds
            row["cpu"][kind] = round(row["cpu"].get(kind, 0.0) + seconds, 2)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> "ProcProfile":
        self._began = time.monotonic()
        # Processes alive now count from now on, not from their start.
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                got = _read(pid)
                if got is not None:
                    self.last[pid], self.last_children[pid] = got[3], got[4]
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def summary(self) -> dict:
        wall = max(1e-9, time.monotonic() - self._began)
        states: dict[str, float] = {}
        for row in self.timeline:
            for state, n in row["worker_states"].items():
                states[state] = states.get(state, 0.0) + n
        n = max(1, len(self.timeline))
        return {"wall_s": round(wall, 2),
                "cpu_seconds": {k: round(v, 1) for k, v in sorted(self.totals.items(), key=lambda kv: -kv[1])},
                "mean_cores_busy": round(sum(self.totals.values()) / wall, 2),
                "mean_workers_by_state": {k: round(v / n, 2) for k, v in sorted(states.items())},
                "timeline": self.timeline}
