"""Where run cgroups go (v2 and v1 layouts, built as directory trees), and reading the kernel's counts.

The live path (a cgroup per run bounding memory the kernel holds) is in ``tests/test_code_hostile.py``;
these cover the layouts a machine may have, including the one this machine lacks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gdpo.tasks.code.cgroups import CgroupUnavailable, Place, find_place, oom_kills


def cgroup_dir(path: Path, controllers: str = "", enabled: str = "") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "cgroup.controllers").write_text(controllers + "\n")
    (path / "cgroup.subtree_control").write_text(enabled + "\n")
    (path / "cgroup.procs").write_text("")
    return path


def v2_mountinfo(point: Path, root: str = "/") -> str:
    return (
        "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
        f"41 31 0:38 {root} {point} rw,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
    )


def test_v2_takes_the_nearest_ancestor_with_memory_enabled(tmp_path):
    unified = cgroup_dir(tmp_path / "unified", "cpu memory pids", "cpu memory pids")
    cgroup_dir(unified / "user.slice", "cpu memory pids", "memory pids")
    cgroup_dir(unified / "user.slice" / "job.scope", "memory pids")  # ours: it holds processes
    place = find_place("cgroup-v2", v2_mountinfo(unified), "0::/user.slice/job.scope\n")
    assert place == Place("cgroup-v2", str(unified / "user.slice"), str(unified / "user.slice"))


def test_v2_without_pids_bounds_memory_only(tmp_path):
    unified = cgroup_dir(tmp_path / "unified", "memory pids", "memory")
    cgroup_dir(unified / "job", "memory")
    assert find_place("cgroup-v2", v2_mountinfo(unified), "0::/job\n") == Place(
        "cgroup-v2", str(unified), None
    )


def test_v2_in_a_cgroup_namespace_reads_paths_below_the_mount(tmp_path):
    # a container with its own cgroup namespace sees itself at "/" of a mount of its subtree
    unified = cgroup_dir(tmp_path / "unified", "memory pids", "memory pids")
    assert find_place("cgroup-v2", v2_mountinfo(unified), "0::/\n") == Place(
        "cgroup-v2", str(unified), str(unified)
    )


def test_v2_without_a_usable_ancestor_says_how_to_get_one(tmp_path):
    unified = cgroup_dir(tmp_path / "unified", "memory pids", "")
    cgroup_dir(unified / "job", "")
    with pytest.raises(CgroupUnavailable, match="memory controller in its cgroup.subtree_control.*Delegate"):
        find_place("cgroup-v2", v2_mountinfo(unified), "0::/job\n")


def test_v2_on_a_hybrid_machine_has_no_memory_controller(tmp_path):
    # this machine's layout: memory is bound to the v1 hierarchy, cgroup2 holds hugetlb only
    unified = cgroup_dir(tmp_path / "unified", "hugetlb", "")
    with pytest.raises(CgroupUnavailable, match="no cgroup v2 hierarchy with the memory controller"):
        find_place("cgroup-v2", v2_mountinfo(unified), "4:memory:/job\n0::/\n")


def v1_mountinfo(memory: Path, pids: Path | None, root: str = "/") -> str:
    lines = [f"35 31 0:32 {root} {memory} rw,relatime - cgroup cgroup rw,memory"]
    if pids is not None:
        lines.append(f"39 31 0:36 / {pids} rw,relatime - cgroup cgroup rw,pids")
    lines.append("41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw")
    return "\n".join(lines) + "\n"


def test_v1_makes_runs_below_our_own_cgroups(tmp_path):
    memory, pids = tmp_path / "memory", tmp_path / "pids"
    cgroup_dir(memory / "session" / "abc")
    cgroup_dir(pids)
    self_cgroup = "8:pids:/\n4:memory:/session/abc\n0::/\n"
    place = find_place("cgroup-v1", v1_mountinfo(memory, pids), self_cgroup)
    assert place == Place("cgroup-v1", str(memory / "session" / "abc"), str(pids))


def test_v1_with_a_subtree_mounted_and_without_pids(tmp_path):
    memory = tmp_path / "memory"
    cgroup_dir(memory / "inner")
    place = find_place("cgroup-v1", v1_mountinfo(memory, None, root="/outer"), "4:memory:/outer/inner\n")
    assert place == Place("cgroup-v1", str(memory / "inner"), None)


def test_v1_without_a_memory_hierarchy_says_so(tmp_path):
    with pytest.raises(CgroupUnavailable, match="no cgroup v1 memory hierarchy"):
        find_place("cgroup-v1", v2_mountinfo(cgroup_dir(tmp_path / "u", "memory")), "0::/\n")


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="cgroup-v2, cgroup-v1"):
        find_place("cgroup-v3", "", "")


def test_oom_kills_from_either_version():
    assert oom_kills("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n") == 3  # v1 memory.oom_control
    assert oom_kills("low 0\nhigh 0\nmax 12\noom 1\noom_kill 2\noom_group_kill 1\n") == 2  # v2 memory.events
    assert oom_kills("low 0\nhigh 0\n") == 0


def test_mount_points_with_spaces_are_read():
    from gdpo.tasks.code.cgroups import _mounts

    line = "41 31 0:38 / /mnt/cgroup\\040two rw - cgroup2 cgroup2 rw\n"
    assert _mounts(line) == [("/", "/mnt/cgroup two", "cgroup2", {"rw"})]
