"""What a benchmark reads of running processes from /proc (Linux): a process tree, its
members' memory and CPU time, and the sandbox server among this process's children."""

from __future__ import annotations

import os

__all__ = ["cpu_seconds", "process_tree", "pss_mb", "sandbox_pid"]


def pss_mb(pid: int) -> float:
    """A process's proportional set size: its RSS with each page shared by n processes (a
    forked figure worker and its parent) counted 1/n, so that a tree's sum is honest."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0.0


def process_tree(root: int) -> list[int]:
    """`root` and its descendants, from every process's parent in /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(parents.get(pid, []))
    return found


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds `pid` has used so far."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sandbox_pid() -> int:
    """The sandbox server: this process's child running `labmgr.sandbox`."""
    for pid in process_tree(os.getpid())[1:]:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            if b"labmgr.sandbox" in cmdline.read():
                return pid
    raise RuntimeError("no sandbox process found")
