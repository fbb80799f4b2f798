"""Start-up cost of one isolated interpreter: the code sandbox's own launcher against bubblewrap.

Each round starts, in turn: a plain interpreter; the sandbox's launcher (``unshare`` with network, PID,
mount and IPC namespaces) importing the supervisor; the same plus the supervisor's private root
(``_seal_filesystem``: read-only binds of the interpreter, its standard library and shared libraries,
/dev nodes, /proc, /dev/shm, the job's tmpfs, then ``pivot_root``); ``bwrap`` (Debian's bubblewrap, if
installed) and ``nsjail`` (if on PATH or given) with the same namespaces and an equivalent view, importing
the supervisor. Prints medians and ratios to the launcher without the private root.

    python benchmarks/sandbox_launchers.py --rounds 40 [--nsjail /path/to/nsjail]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CODE_DIR = Path(__file__).resolve().parents[1] / "gdpo" / "tasks" / "code"
IMPORT = f"import sys; sys.path.insert(0, {str(CODE_DIR)!r}); import _supervisor as s; s._load_libc()"
# the job's directory in the (scratch) working directory, as the sandbox's own is made before the launch
SEAL = IMPORT + (
    "; import os; job = f'{os.getcwd()}/job-{os.urandom(6).hex()}'; os.mkdir(job)"
    "; s._seal_filesystem({'tmpfs_bytes': 32 << 20, 'host_ipc_namespace': None}, job, 0)"
)


def bwrap_command(python: str, view: list[str]) -> list[str]:
    """bwrap with the sandbox's namespaces and the same read-only view (plus the supervisor's directory)."""
    command = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent"]
    command.append("--new-session")
    for link in ("/bin", "/sbin", "/lib", "/lib64"):
        if os.path.islink(link):
            command += ["--symlink", os.readlink(link), link]
    for path in [*view, str(CODE_DIR)]:
        command += ["--ro-bind", path, path]
    if os.path.realpath(python) != python:
        command += ["--symlink", os.path.realpath(python), python]
    for device in ("null", "zero", "random", "urandom"):
        command += ["--dev-bind", f"/dev/{device}", f"/dev/{device}"]
    command += ["--proc", "/proc", "--tmpfs", "/dev/shm", "--tmpfs", "/job", "--chdir", "/job"]
    return [*command, "--remount-ro", "/", python, "-I", "-S", "-B", "-c", IMPORT]


def nsjail_command(nsjail: str, python: str, view: list[str]) -> list[str]:
    """nsjail (standalone mode, its default namespaces: network, PID, mount, IPC, UTS, cgroup) with the same
    read-only view, importing the supervisor."""
    command = [nsjail, "-Mo", "--quiet"]
    for link in ("/bin", "/sbin", "/lib", "/lib64"):
        if os.path.islink(link):
            command += ["-s", f"{os.readlink(link)}:{link}"]
    for path in [*view, str(CODE_DIR), *(f"/dev/{d}" for d in ("null", "zero", "random", "urandom"))]:
        command += ["-R", path]
    if os.path.realpath(python) != python:
        command += ["-s", f"{os.path.realpath(python)}:{python}"]
    command += ["-T", "/dev/shm", "-T", "/job", "-D", "/job"]
    return [*command, "--", python, "-I", "-S", "-B", "-c", IMPORT]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=40, help="starts of each launcher (median reported)")
    parser.add_argument(
        "--nsjail", default=shutil.which("nsjail"), help="an nsjail binary to compare too (default: on PATH)"
    )
    args = parser.parse_args()

    sys.path.insert(0, str(CODE_DIR))
    import _supervisor

    from gdpo.tasks.code.sandbox import isolation_mode, sandbox_python

    mode = isolation_mode()
    if mode == "none":
        sys.exit("no namespaces here (isolation_mode() == 'none'): nothing to compare")
    python = sandbox_python()[0]
    unshare = ["unshare", "--net", "--pid", "--mount", "--ipc", "--fork", "--kill-child"]
    if mode == "user-namespaces":
        unshare[1:1] = ["--user", "--map-root-user"]
    cases = {
        "plain interpreter": [python, "-I", "-S", "-B", "-c", "pass"],
        "unshare launcher + supervisor import": [*unshare, python, "-I", "-S", "-B", "-c", IMPORT],
        "... + private root (the sandbox today)": [*unshare, python, "-I", "-S", "-B", "-c", SEAL],
    }
    view = subprocess.run(
        [python, "-I", "-S", "-B", "-c", IMPORT + "; print('\\n'.join(s._view_paths()))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    loader = _supervisor._elf_interpreter(os.path.realpath(python))
    real_loader_dir = os.path.realpath(os.path.dirname(loader)) if loader else None
    if real_loader_dir and not any(real_loader_dir.startswith(p) for p in view):
        view.append(real_loader_dir)
    if shutil.which("bwrap"):
        cases["bwrap, same namespaces and view"] = bwrap_command(python, view)
    else:
        print("bwrap is not installed (apt-get install bubblewrap): its row is skipped")
    if args.nsjail:
        cases["nsjail, same view"] = nsjail_command(args.nsjail, python, view)
    else:
        print("no nsjail (give --nsjail PATH): its row is skipped")
    times = {name: [] for name in cases}
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(args.rounds):
            for name, command in cases.items():
                start = time.perf_counter()
                done = subprocess.run(command, capture_output=True, cwd=scratch)
                times[name].append(time.perf_counter() - start)
                if done.returncode != 0:
                    sys.exit(f"{name} failed: {done.stderr.decode(errors='replace')[-800:]}")
    reference = statistics.median(times["unshare launcher + supervisor import"])
    print(f"mode {mode}, {python}, {args.rounds} rounds, load average {os.getloadavg()[0]:.1f}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:42s} median {1000 * median:6.1f} ms   {median / reference:.2f} x launcher")


if __name__ == "__main__":
    main()
