"""Per-run control groups: the kernel bounds a sandbox's memory (kernel memory included) and processes.

The caller of the sandbox (outside every namespace) makes one cgroup per run below a parent it may write,
sets its limits, and the supervisor moves every runner into it before model code starts. The kernel then
charges the run with every page it causes, wherever it ends up: anonymous and shared pages, page cache,
pipe buffers, memfds sent into sockets and closed (descriptors in flight), huge pages pinned by
``vmsplice``, inodes, dentries and mappings. Over the limit the kernel reclaims, then kills a process of the
run (an OOM kill, which the supervisor reads and reports as ``memory``); a polling watchdog sees none of
the kernel's references. Two kinds, chosen by :func:`find_place`:

- ``cgroup-v2``: a directory below the nearest ancestor of this process's cgroup that has the memory
  controller in its ``cgroup.subtree_control`` and whose ``cgroup.procs`` this process may write (root, or
  a delegated subtree as systemd gives with ``Delegate=yes``): ``memory.max``, ``memory.swap.max`` = 0,
  ``memory.oom.group`` = 1 (an OOM kill takes the whole run) and ``pids.max`` when the pids controller is
  enabled there; peak from ``memory.peak`` (Linux ≥ 5.19).
- ``cgroup-v1``: a child of this process's own cgroup in the v1 memory hierarchy (and in the pids
  hierarchy when mounted): ``memory.limit_in_bytes`` (kernel memory is charged to it too: the kmem
  counter feeds the memory counter), ``memory.memsw.limit_in_bytes`` the same where swap is accounted,
  ``pids.max``; peak from ``memory.max_usage_in_bytes``.

Written against the kernel's cgroup files directly (a few writes per run, ~0.5 ms): libcgroup's tools and
systemd-run scopes do the same writes through a daemon or a subprocess, tens of ms per run and absent in
most CI containers. Standard library only.
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from dataclasses import dataclass

KINDS = ("cgroup-v2", "cgroup-v1")
#: Directory names of run cgroups: ``<prefix>-<pid of the process that made it>-<random>``.
PREFIX = "gdpo-sandbox"


class CgroupUnavailable(Exception):
    """No cgroup of the wanted kind can be made here; the message says why and how to get one."""


@dataclass(frozen=True)
class Place:
    """Where run cgroups go: ``memory`` and ``pids`` parent directories (the same one for v2; ``pids`` is
    None without a pids controller there)."""

    kind: str
    memory: str
    pids: str | None


def _unescape(path: str) -> str:
    """mountinfo escapes spaces, tabs, newlines and backslashes as octal."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        path = path.replace(code, char)
    return path


def _mounts(mountinfo: str) -> list[tuple[str, str, str, set[str]]]:
    """(root, mount point, file system type, super options) of each line of /proc/self/mountinfo."""
    mounts = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        separator = fields.index("-")
        if len(fields) < separator + 4 or len(fields) < 5:
            continue
        fstype, options = fields[separator + 1], set(fields[separator + 3].split(","))
        mounts.append((_unescape(fields[3]), _unescape(fields[4]), fstype, options))
    return mounts


def _membership(self_cgroup: str) -> dict[str, str]:
    """Controller (``""`` for v2) → this process's path in its hierarchy, from /proc/self/cgroup."""
    paths = {}
    for line in self_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                paths[controller] = parts[2]
    return paths


def _directory(mount_root: str, mount_point: str, path: str) -> str | None:
    """The directory of cgroup ``path`` under a mount of the hierarchy's ``mount_root``."""
    root = mount_root.rstrip("/")
    if root and path != root and not path.startswith(root + "/"):
        return None  # our cgroup is outside the mounted subtree
    return os.path.normpath(mount_point + "/" + path[len(root) :])


def _read(path: str) -> str:
    with open(path, encoding="ascii") as handle:
        return handle.read()


def _writable(directory: str) -> bool:
    return os.access(directory, os.W_OK) and os.access(f"{directory}/cgroup.procs", os.W_OK)


def find_place(kind: str, mountinfo: str, self_cgroup: str) -> Place:
    """Where this process can make run cgroups of ``kind`` (see the module docstring). ``mountinfo`` and
    ``self_cgroup``: the text of /proc/self/mountinfo and /proc/self/cgroup. Raises
    :class:`CgroupUnavailable` naming what is missing and the fix."""
    mounts, member = _mounts(mountinfo), _membership(self_cgroup)
    if kind == "cgroup-v2":
        for root, point, fstype, _ in mounts:
            if fstype != "cgroup2" or "" not in member:
                continue
            own = _directory(root, point, member[""])
            if own is None or "memory" not in _read(f"{point}/cgroup.controllers").split():
                continue
            directory = own
            while True:  # the nearest ancestor (or our own cgroup, if it is the root) that can hold runs
                enabled = _read(f"{directory}/cgroup.subtree_control").split()
                if "memory" in enabled and _writable(directory):
                    return Place(kind, directory, directory if "pids" in enabled else None)
                if os.path.normpath(directory) == os.path.normpath(point):
                    break
                directory = os.path.dirname(directory)
            raise CgroupUnavailable(
                f"no cgroup v2 directory from {own} up to {point} both has the memory controller in its "
                "cgroup.subtree_control and is writable by this process; run as root, or in a delegated "
                "cgroup (systemd-run --user -p Delegate=yes ..., or a service with Delegate=yes)"
            )
        raise CgroupUnavailable(
            "no cgroup v2 hierarchy with the memory controller is mounted (on a hybrid or v1 system the "
            "memory controller is in v1; boot with systemd.unified_cgroup_hierarchy=1 for v2)"
        )
    if kind == "cgroup-v1":
        found = {}
        for controller in ("memory", "pids"):
            for root, point, fstype, options in mounts:
                if fstype == "cgroup" and controller in options and controller in member:
                    directory = _directory(root, point, member[controller])
                    if directory is not None and os.path.isdir(directory):
                        found[controller] = directory
                        break
        if "memory" not in found:
            raise CgroupUnavailable(
                "no cgroup v1 memory hierarchy is mounted for this process (mount -t cgroup -o memory "
                "cgroup /sys/fs/cgroup/memory, as root)"
            )
        if not _writable(found["memory"]):
            raise CgroupUnavailable(
                f"this process may not make cgroups in {found['memory']} (v1 needs root, or that directory "
                "and its cgroup.procs owned by this user)"
            )
        pids = found.get("pids")
        return Place(kind, found["memory"], pids if pids and _writable(pids) else None)
    raise ValueError(f"cgroup kind must be one of {', '.join(KINDS)}, got {kind!r}.")


def this_place(kind: str) -> Place:
    """:func:`find_place` for this process."""
    try:
        mountinfo, self_cgroup = _read("/proc/self/mountinfo"), _read("/proc/self/cgroup")
    except OSError as error:
        raise CgroupUnavailable(f"cannot read /proc/self ({error}); mount /proc") from None
    return find_place(kind, mountinfo, self_cgroup)


def _write(path: str, value) -> None:
    with open(path, "w", encoding="ascii") as handle:
        handle.write(str(value))


class RunCgroup:
    """The cgroup of one run: made with its limits at construction, removed by :meth:`remove`.

    ``procs`` are the ``cgroup.procs`` files a runner's pid is written to (one per hierarchy), ``events``
    the file whose ``oom_kill`` line counts the kernel's OOM kills in the run."""

    def __init__(self, place: Place, memory_bytes: int, max_processes: int):
        self.place = place
        name = f"{PREFIX}-{os.getpid()}-{secrets.token_hex(6)}"
        self.directories = [f"{place.memory}/{name}"]
        if place.pids and place.pids != place.memory:
            self.directories.append(f"{place.pids}/{name}")
        made = []
        try:
            for directory in self.directories:
                os.mkdir(directory, 0o755)
                made.append(directory)
            memory = self.directories[0]
            if place.kind == "cgroup-v2":
                _write(f"{memory}/memory.max", memory_bytes)
                for setting, value in (("memory.swap.max", 0), ("memory.oom.group", 1)):
                    if os.path.exists(f"{memory}/{setting}"):
                        _write(f"{memory}/{setting}", value)
                if place.pids:
                    _write(f"{memory}/pids.max", max_processes)
                self.events = f"{memory}/memory.events"
                self._peak = f"{memory}/memory.peak"
            else:
                _write(f"{memory}/memory.limit_in_bytes", memory_bytes)
                if os.path.exists(f"{memory}/memory.memsw.limit_in_bytes"):  # swap accounting is on
                    _write(f"{memory}/memory.memsw.limit_in_bytes", memory_bytes)
                if place.pids:
                    _write(f"{self.directories[-1]}/pids.max", max_processes)
                self.events = f"{memory}/memory.oom_control"
                self._peak = f"{memory}/memory.max_usage_in_bytes"
        except OSError:
            for directory in reversed(made):
                try:
                    os.rmdir(directory)
                except OSError:
                    pass
            raise
        self.procs = [f"{directory}/cgroup.procs" for directory in self.directories]

    def peak(self) -> int | None:
        """Bytes: the most the run held at once, by the kernel's count (None where it keeps none)."""
        try:
            return int(_read(self._peak))
        except (OSError, ValueError):
            return None

    def oom_kills(self) -> int:
        return oom_kills(_read(self.events))

    def remove(self, patience: float = 5.0) -> bool:
        """Kill what is left in the run's cgroups and remove them; False if one could not be removed
        within ``patience`` seconds (a process stuck in the kernel)."""
        deadline = time.monotonic() + patience
        remaining = list(reversed(self.directories))
        while remaining:
            directory = remaining[-1]
            try:
                os.rmdir(directory)
                remaining.pop()
                continue
            except FileNotFoundError:
                remaining.pop()
                continue
            except OSError:
                if time.monotonic() >= deadline:
                    return False
            for pid in _pids(directory):
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.01)
        return True


def oom_kills(events: str) -> int:
    """The ``oom_kill`` count of a ``memory.events`` (v2) or ``memory.oom_control`` (v1) text."""
    for line in events.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == "oom_kill":
            return int(fields[1])
    return 0


def _pids(directory: str) -> list[int]:
    try:
        return [int(line) for line in _read(f"{directory}/cgroup.procs").split()]
    except (OSError, ValueError):
        return []


def run_cgroups(place: Place, owner: int | None = None) -> list[str]:
    """Run cgroups under ``place`` (made by process ``owner``, or by anyone): for leak checks."""
    prefix = f"{PREFIX}-{owner}-" if owner is not None else f"{PREFIX}-"
    found = []
    for parent in dict.fromkeys(p for p in (place.memory, place.pids) if p):
        try:
            found += [f"{parent}/{entry}" for entry in os.listdir(parent) if entry.startswith(prefix)]
        except OSError:
            continue
    return sorted(found)


def remove_stale(place: Place) -> None:
    """Remove empty run cgroups left by processes that no longer exist (a caller killed mid-run)."""
    for directory in run_cgroups(place):
        owner = os.path.basename(directory)[len(PREFIX) + 1 :].split("-", 1)[0]
        if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
            try:
                os.rmdir(directory)
            except OSError:
                pass
