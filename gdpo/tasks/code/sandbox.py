"""Run model-written Python programs against tests, isolated from the machine and from each other.

Each :func:`run` starts a trusted supervisor (``_supervisor.py``, standard library only) in its own
session; the supervisor forks *runners* that execute the model's code. Isolation layers, as measured
on the project's machines (Linux 6.x, running as root; see :func:`isolation_mode`):

============================  ===============================================================================
layer                         mechanism
============================  ===============================================================================
network                       empty network namespace (``unshare --net``: no interface but a down loopback;
                              abstract unix sockets are per namespace), plus an audit hook refusing internet
                              sockets and name lookups, and a seccomp filter (every mode): runners make unix
                              sockets only (AF_VSOCK, which no namespace covers, reaches a VM's hypervisor)
IPC                           private IPC namespace (``--ipc``): System V shared memory and message queues
                              of the run are invisible to the host, capped at 8 MiB (semaphores at 4096),
                              and die with it
processes                     PID namespace whose init is the supervisor: when it ends, the kernel kills every
                              process left in it; the run's cgroup's ``pids.max`` (see memory), and a random
                              unprivileged uid per run with ``RLIMIT_NPROC`` (enforced because that uid is not
                              root), cap fork bombs
filesystem                    a private root (``pivot_root``, the host's root detached): read-only binds of
                              the interpreter, its standard library (``site-packages`` masked) and the
                              directories of its shared libraries,
                              /dev/{null,zero,random,urandom}, a read-only ``/proc`` of the PID namespace, an
                              8 MiB /dev/shm and the run's fresh size-limited tmpfs (cwd, HOME, TMPDIR), each
                              of 4096 files at most. Nothing else of the host exists in it: no sockets,
                              FIFOs, /home, /etc, /run, installed packages or benchmark data. It is a chroot
                              below the mount namespace's root, so the kernel refuses model code a nested
                              user namespace
time                          stopped once all processes of the sandbox together used ``time_limit`` s of CPU
                              (polled every 20 ms; the seccomp filter refuses a SIGCHLD handler, since
                              children the kernel reaps would leave the count), or after 3 × ``time_limit``
                              + 1 s of wall clock when sleeping or starved; ``RLIMIT_CPU`` per process as
                              a backstop
memory                        a cgroup per run (:mod:`cgroups`, v2 or v1): the kernel charges the whole tree
                              with every page it causes, kernel memory included (pipe and socket buffers,
                              descriptors in flight, pinned pages, inodes), and OOM-kills it at
                              ``memory_limit_mb``; where no cgroup can be had, a watchdog on the whole tree
                              (every 20 ms): anonymous and shared pages of every process, memfd files held
                              open, System V segments and /dev/shm, blind to what the kernel holds for no
                              process. ``RLIMIT_AS`` per process; ``RLIMIT_FSIZE`` bounds each memfd and
                              file, ``RLIMIT_MSGQUEUE`` POSIX queues
output                        pipes read with a cap (overflow kills the run), ``RLIMIT_FSIZE`` for files
environment                   only PATH, LANG, HOME and TMPDIR (both the run's directory); stdin is /dev/null
signals                       other uid and PID namespace: the runner cannot signal or ptrace the supervisor
                              (not dumpable) or us
============================  ===============================================================================

Modes: ``root-namespaces`` (all of the above), ``user-namespaces`` when not root but unprivileged user
namespaces work (the same namespaces and filesystem; the runner is uid 0 of its user namespace with every
capability dropped, so ``RLIMIT_NPROC`` counts the caller's own processes across runs, and the System V
caps apply only if the kernel lets a user namespace set them), and ``none`` (no namespaces: rlimits, a
separate uid when root, the audit hooks, and the watchdog on the runner alone — the host's filesystem
(installed benchmark data and its canonical solutions included), unix sockets and IPC stay reachable:
host unix sockets are refused by the audit hook only, which C code bypasses; other families by the seccomp
filter). The mode is chosen by ``GDPO_SANDBOX_ISOLATION`` (:func:`isolation_mode`): a mode that cannot
be had is an error naming the fix, never a silent fall to ``none``, which only the setting selects.
What bounds memory and processes (:func:`limits_mode`, ``GDPO_SANDBOX_LIMITS``): ``cgroup-v2``,
``cgroup-v1`` or, where neither can be made (with a warning), ``watchdog``, which may overshoot by what a
program allocates in 20 ms and misses memory the kernel holds for no process. Every :class:`RunResult`
records its isolation, its limits and its peak memory.

Verdicts are decided here, outside the sandbox: the supervisor brings back the values the program
returned (literal reprs) and the stdout it printed, and :func:`run` compares them with expected answers
that never enter the sandbox (:mod:`comparison`). Assertion tests (``Job.asserts``) are the program's own
claim and can be forged by it; they exist for reference runs of a benchmark's original asserts, and the
rewards refuse them (:func:`gdpo.tasks.code.rewards.make_job`).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import marshal
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from gdpo.tasks.code import cgroups
from gdpo.tasks.code._supervisor import wall_limit
from gdpo.tasks.code.comparison import passed_outputs, passed_values

SUPERVISOR = Path(__file__).with_name("_supervisor.py")
#: Environment variable choosing the isolation mode: ``auto`` (default: ``root-namespaces`` as root,
#: ``user-namespaces`` otherwise, an error if it cannot be had) or one of :data:`ISOLATION_MODES`;
#: ``none`` is the only way to run without namespaces, and each result records the mode it ran in.
ISOLATION_SETTING = "GDPO_SANDBOX_ISOLATION"
ISOLATION_MODES = ("root-namespaces", "user-namespaces", "none")
#: Environment variable choosing what bounds a run's memory and processes: ``auto`` (default: a cgroup
#: of the first kind that works, else the watchdog, with a warning) or one of :data:`LIMITS_MODES`
#: (a cgroup kind named here and not available is an error). Each result records the mode that bounded it.
LIMITS_SETTING = "GDPO_SANDBOX_LIMITS"
LIMITS_MODES = (*cgroups.KINDS, "watchdog")
#: Seconds allowed for the probe of ``unshare`` (a slower one is an error, never a silent fallback).
PROBE_TIMEOUT = 20
STATUSES = ("ok", "compile_error", "runtime_error", "timeout", "memory", "output_limit", "killed")
#: Command-line tag on every sandbox process (runners are forks of the supervisor), for leak checks;
#: followed by ``:<pid of the process that started it>``. Also the prefix of the runs' directories.
PROCESS_MARKER = "gdpo-sandbox"
#: Seconds allowed for starting the interpreter and sealing the sandbox, beyond the tests' own limits.
STARTUP_ALLOWANCE = 10.0
#: Modules imported by the supervisor before it drops privileges when the interpreter's standard
#: library is not readable by other users (then later imports by the sandbox uid would fail).
PRELOAD = (
    "math",
    "collections",
    "itertools",
    "functools",
    "heapq",
    "bisect",
    "re",
    "string",
    "typing",
    "random",
)
_UID_BASE, _UID_SPAN = 1 << 30, 1 << 24  # far above the system's and the subordinate-uid ranges
_issued_uids: collections.deque[int] = collections.deque(maxlen=1 << 16)  # this process's recent sandbox uids
_probing = threading.RLock()  # run_many's first threads wait for one probe of the modes, not one each


@dataclass(frozen=True)
class Job:
    """One program and its tests.

    - ``calls``: value tests ``(expression, accepted)``; the expression (e.g. ``"add(2, 3)"``) is evaluated
      in the program's namespace and passes if its result equals one of the ``accepted`` Python literals
      (reprs, e.g. ``("5",)``); the program never sees ``accepted``.
    - ``asserts``: test snippets run in the program's namespace; pass if they raise nothing
      (HumanEval: ``test + "\\ncheck(entry_point)"``). An ``AssertionError`` is a failed test, any other
      exception a runtime error. The pass is reported by the program's own process, so a hostile program
      can forge it: for reference runs only (rewards use value tests).
    - ``stdio``: ``(stdin, expected stdout)`` pairs; the program runs once per pair as ``__main__``.

    ``stdio`` cannot be mixed with ``calls``/``asserts``. Limits: ``time_limit`` seconds of CPU per
    stdin/stdout test, or for loading the program and all its function-call tests together (a runner that
    sleeps or waits is stopped after 3 × ``time_limit`` + 1 s of wall clock);
    ``memory_limit_mb`` (see the end); ``output_limit_bytes`` per stream; ``max_processes`` for the
    run's cgroup and the sandbox uid (threads count). ``memory_limit_mb`` bounds each process's address
    space and the whole sandbox's memory, kernel memory included where a cgroup can be had (see the module
    docstring).
    """

    code: str
    calls: tuple[tuple[str, tuple[str, ...]], ...] = ()
    asserts: tuple[str, ...] = ()
    stdio: tuple[tuple[str, str], ...] = ()
    time_limit: float = 2.0
    memory_limit_mb: int = 512
    output_limit_bytes: int = 1 << 20
    max_processes: int = 16
    file_size_limit_bytes: int = 8 << 20
    directory_limit_bytes: int = 32 << 20

    def __post_init__(self):
        if not isinstance(self.code, str):
            raise ValueError(f"Job.code must be a str, got {type(self.code).__name__}.")
        if self.stdio and (self.calls or self.asserts):
            raise ValueError(
                "A Job has either stdio tests or calls/asserts tests, not both; split it into two jobs."
            )
        if not (self.stdio or self.calls or self.asserts):
            raise ValueError("A Job needs at least one test (calls, asserts or stdio).")
        if not self.time_limit > 0:
            raise ValueError(f"time_limit must be > 0 seconds, got {self.time_limit}.")
        for expression, accepted in self.calls:
            if isinstance(accepted, str) or not accepted:
                raise ValueError(
                    f"calls need a non-empty tuple of accepted reprs; got {accepted!r} for {expression!r}."
                )

    @property
    def total(self) -> int:
        return len(self.stdio) or len(self.calls) + len(self.asserts)


@dataclass(frozen=True)
class RunResult:
    """Outcome of one :class:`Job`: ``passed`` of ``total`` tests, ``status`` (one of :data:`STATUSES`),
    ``duration`` in seconds of wall clock, ``detail`` (start of stderr or the error, for debugging), and how
    it was held: ``isolation`` (one of :data:`ISOLATION_MODES`), ``limits`` (one of :data:`LIMITS_MODES`:
    what bounded its memory and processes) and ``peak_memory_bytes`` (the run's cgroup's peak, kernel
    memory included; under the watchdog the most it counted in its polls; None if unknown)."""

    passed: int
    total: int
    status: str
    duration: float
    detail: str = ""
    isolation: str = ""
    limits: str = ""
    peak_memory_bytes: int | None = None

    @property
    def fraction_passed(self) -> float:
        return self.passed / self.total if self.total else 0.0

    @property
    def all_passed(self) -> bool:
        """Every test passed and the run ended cleanly (no error after the last test)."""
        return self.status == "ok" and self.total > 0 and self.passed == self.total

    @property
    def has_bug(self) -> bool:
        """A compile or runtime error (timeouts, memory and output overflows and kills count as runtime
        errors)."""
        return self.status != "ok"


def _probe(command: list[str]) -> str | None:
    """None if ``command`` succeeds within :data:`PROBE_TIMEOUT`, else why not."""
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"`{' '.join(command)}` did not finish within {PROBE_TIMEOUT} s (a stuck or overloaded host)"
    except OSError as error:
        return f"`{' '.join(command)}` could not start: {error}"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip()[-300:]
        return f"`{' '.join(command)}` failed with exit code {done.returncode}" + (f": {said}" * bool(said))
    return None


_ISOLATION_FIXES = {
    "root-namespaces": "install util-linux's unshare and run where mount, PID, network and IPC namespaces "
    "are allowed (in a container: --privileged, or CAP_SYS_ADMIN with seccomp and AppArmor unconfined)",
    "user-namespaces": "allow unprivileged user namespaces (sysctl user.max_user_namespaces > 0, "
    "kernel.unprivileged_userns_clone=1 on Debian kernels, kernel.apparmor_restrict_unprivileged_userns=0 "
    "on Ubuntu ≥ 23.10) and install util-linux's unshare, or run as root",
}


def isolation_mode() -> str:
    """The isolation mode every run of this process uses (see :data:`ISOLATION_SETTING`), probed once per
    setting. A mode that cannot be had (no ``unshare``, namespaces refused, a probe over
    :data:`PROBE_TIMEOUT` s, a sandbox that cannot be sealed) raises ``RuntimeError`` naming the mode and
    the fix; runs never fall back to a weaker mode unless ``GDPO_SANDBOX_ISOLATION=none`` says so."""
    with _probing:
        return _isolation_mode(os.environ.get(ISOLATION_SETTING, "auto"))


@functools.lru_cache(maxsize=None)
def _isolation_mode(setting: str) -> str:
    if setting not in ("auto", *ISOLATION_MODES):
        raise ValueError(f"{ISOLATION_SETTING}={setting!r}: use auto or one of {', '.join(ISOLATION_MODES)}.")
    if setting == "none":
        return "none"
    root = os.geteuid() == 0
    mode = setting if setting != "auto" else ("root-namespaces" if root else "user-namespaces")
    if mode == "root-namespaces" and not root:
        raise ValueError(
            f"{ISOLATION_SETTING}=root-namespaces needs root; use user-namespaces (or auto) as a normal user."
        )
    problem = _namespace_problem(mode)
    if problem:
        raise RuntimeError(
            f"The code sandbox cannot isolate programs in mode {mode!r}: {problem}. Fix: "
            f"{_ISOLATION_FIXES[mode]}; or set {ISOLATION_SETTING}=none to run model code without namespaces "
            "(it can then read the host's files, benchmark answers included; the mode is recorded in every "
            "result and in eval.json)."
        )
    return mode


def _namespace_problem(mode: str) -> str | None:
    """Why ``mode`` does not work here, or None: ``unshare`` starts the namespaces and the supervisor seals
    a real sandbox in them."""
    unshare, true = shutil.which("unshare"), shutil.which("true")
    if not sys.platform.startswith("linux"):
        return f"namespaces need Linux, this is {sys.platform}"
    if not unshare or not true:
        return "no `unshare` (util-linux) on PATH"
    flags = ["--net", "--pid", "--mount", "--ipc", "--fork", "--kill-child"]
    user = ["--user", "--map-root-user"] if mode == "user-namespaces" else []
    problem = _probe([unshare, *user, *flags, true])
    if problem:
        return problem
    try:
        result = _run_in_mode(Job("", calls=(("1", ("1",)),)), mode)
    except RuntimeError as error:
        return str(error)
    if not result.all_passed:
        return f"a trivial program did not pass in the sandbox ({result.status}: {result.detail[:300]})"
    return None


def limits_mode() -> str:
    """What bounds the memory and processes of every run of this process (see :data:`LIMITS_SETTING`),
    probed once per setting and isolation mode: the kind of cgroup, or ``watchdog``."""
    return _place()[0]


def _place() -> tuple[str, cgroups.Place | None]:
    with _probing:
        return _limits(os.environ.get(LIMITS_SETTING, "auto"), isolation_mode())


def _cgroup_problem(place: cgroups.Place, isolation: str) -> str | None:
    """Why run cgroups at ``place`` do not bound a run here, or None: a program that writes 96 MiB into
    memfds (memory outside ``RLIMIT_AS`` and, unmapped, outside any process's pages) under a 64 MiB limit
    must be stopped by the kernel's OOM kill, with the cgroup's peak near the limit."""
    balloon = (
        "import os\nheld = []\nfor _ in range(12):\n    fd = os.memfd_create('probe')\n"
        "    os.write(fd, b'm' * (8 << 20))\n    held.append(fd)\n"
    )
    try:
        result = _run_in_mode(Job(balloon, calls=(("1", ("1",)),), memory_limit_mb=64), isolation, place)
    except (RuntimeError, OSError) as error:
        return str(error)
    peak = result.peak_memory_bytes  # None on a kernel that keeps no peak (cgroup v2 before Linux 5.19)
    stopped = result.status == "memory" and "cgroup" in result.detail
    if not stopped or not (32 << 20) <= (peak or 48 << 20) <= (72 << 20):
        return (
            f"a 96 MiB memfd balloon under a 64 MiB limit ended {result.status!r} with a peak of "
            f"{peak if peak is None else peak >> 20} MiB ({result.detail[:200]!r})"
        )
    return None


@functools.lru_cache(maxsize=None)
def _limits(setting: str, isolation: str) -> tuple[str, cgroups.Place | None]:
    if setting not in ("auto", *LIMITS_MODES):
        raise ValueError(f"{LIMITS_SETTING}={setting!r}: use auto or one of {', '.join(LIMITS_MODES)}.")
    if setting == "watchdog":
        return "watchdog", None
    problems = []
    for kind in cgroups.KINDS if setting == "auto" else (setting,):
        try:
            place = cgroups.this_place(kind)
        except (cgroups.CgroupUnavailable, OSError) as error:
            problems.append(f"{kind}: {error}")
            continue
        cgroups.remove_stale(place)
        problem = _cgroup_problem(place, isolation)
        if problem is None:
            return kind, place
        problems.append(f"{kind} at {place.memory}: {problem}")
    why = "; ".join(problems)
    if setting != "auto":
        raise RuntimeError(
            f"The code sandbox cannot bound runs with {setting}: {why}. Set {LIMITS_SETTING}=auto to take "
            "what this machine offers, or watchdog to bound memory by polling only."
        )
    warnings.warn(
        f"The code sandbox bounds memory by polling only ({LIMITS_SETTING}=watchdog): no cgroup could be "
        f"had ({why}). Memory the kernel holds for a program (pipe buffers, descriptors in flight, pages "
        "pinned by pipes, inodes kept by mappings) then escapes the limit; results record limits='watchdog'.",
        stacklevel=3,
    )
    return "watchdog", None


def _readable_by_others(path: str) -> bool:
    """Every directory on the way is searchable by other users and the target is readable by them."""
    path = os.path.realpath(path)
    parts = Path(path).parents
    try:
        if any(not os.stat(p).st_mode & 0o001 for p in parts):
            return False
        return bool(os.stat(path).st_mode & 0o004)
    except OSError:
        return False


@functools.lru_cache(maxsize=1)
def sandbox_python() -> tuple[str, bool]:
    """(interpreter, stdlib readable by the sandbox uid). Prefers this interpreter; when running as root
    and its standard library is private (e.g. under /root), a system python3 whose library is readable."""
    if os.geteuid() != 0:
        return sys.executable, True
    candidates = [
        sys.executable,
        getattr(sys, "_base_executable", None),
        "/usr/bin/python3",
        shutil.which("python3"),
    ]
    probe = "import os, sys; print(os.path.dirname(os.__file__)); print(sys.version_info >= (3, 9))"
    for candidate in dict.fromkeys(c for c in candidates if c):
        if not _readable_by_others(candidate):
            continue
        try:
            out = subprocess.run(
                [candidate, "-I", "-S", "-c", probe], capture_output=True, text=True, timeout=20
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        lines = out.stdout.split()
        if out.returncode == 0 and len(lines) == 2 and lines[1] == "True" and _readable_by_others(lines[0]):
            return candidate, True
    return sys.executable, False


def _command(mode: str, python: str, job_dir: str) -> list[str]:
    supervisor = [python, "-I", "-S", "-B", str(SUPERVISOR), job_dir, f"{PROCESS_MARKER}:{os.getpid()}"]
    namespaces = ["--net", "--pid", "--mount", "--ipc", "--fork", "--kill-child"]
    if mode == "root-namespaces":
        return [shutil.which("unshare"), *namespaces, *supervisor]
    if mode == "user-namespaces":
        return [shutil.which("unshare"), "--user", "--map-root-user", *namespaces, *supervisor]
    return supervisor


def _ipc_namespace() -> int | None:
    """Inode of this process's IPC namespace: the supervisor checks that its own is another one before
    it sets the namespace's limits."""
    try:
        return os.stat("/proc/self/ns/ipc").st_ino
    except OSError:
        return None


def _write_job_files(
    job: Job,
    job_dir: str,
    mode: str,
    uid: int | None,
    preload: bool,
    nonce: str,
    cgroup: cgroups.RunCgroup | None,
) -> None:
    """The job as the supervisor reads it: the program and the test inputs, never an expected answer."""
    spec = {
        "code": job.code,
        "calls": [expression for expression, _ in job.calls],
        "asserts": list(job.asserts),
        "stdin": [stdin for stdin, _ in job.stdio],
        "total": job.total,
        "nonce": nonce,
        "time_limit": float(job.time_limit),
        "memory_bytes": int(job.memory_limit_mb) << 20,
        "output_limit": int(job.output_limit_bytes),
        "max_processes": int(job.max_processes),
        "file_size_limit": int(job.file_size_limit_bytes),
        "tmpfs_bytes": int(job.directory_limit_bytes),
        "isolation": mode,
        "host_ipc_namespace": _ipc_namespace(),
        "uid": uid,
        "preload": [] if preload else list(PRELOAD),
        "cgroup": {"procs": cgroup.procs, "events": cgroup.events} if cgroup else None,
    }
    fd = os.open(os.path.join(job_dir, "job.bin"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(marshal.dumps(spec, 2))


def _count_passed(job: Job, report: dict) -> int:
    """Tests passed, judged here from the data the sandbox brought back (values or outputs), at a cost
    bounded by the expected answers' size (:mod:`comparison`)."""
    if job.stdio:
        outputs = report.get("outputs")
        return passed_outputs(outputs if isinstance(outputs, list) else [], [out for _, out in job.stdio])
    values = report.get("values")
    values = values if isinstance(values, dict) else {}
    passed = passed_values([values.get(index) for index in range(len(job.calls))], [a for _, a in job.calls])
    asserted = report.get("asserted")
    asserted = set(asserted) if isinstance(asserted, list) else set()
    return passed + len(asserted & set(range(len(job.calls), job.total)))


def _validate_tests(job: Job) -> None:
    for expression, _ in job.calls:
        try:
            compile(expression, "<test>", "eval", dont_inherit=True)
        except SyntaxError as error:
            raise ValueError(f"Call test {expression!r} is not a Python expression: {error}.") from None
    for snippet in job.asserts:
        try:
            compile(snippet, "<test>", "exec", dont_inherit=True)
        except SyntaxError as error:
            raise ValueError(f"Assertion test does not compile ({error}); fix the test data.") from None


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run(job: Job) -> RunResult:
    """Run ``job`` in a fresh sandbox and wait for it; never raises for anything the program does.

    Raises ``RuntimeError`` if the sandbox itself cannot be set up (a broken sandbox must not score zero
    silently; see :func:`isolation_mode` and :func:`limits_mode`) and ``ValueError`` for malformed tests.
    """
    mode = isolation_mode()
    return _run_in_mode(job, mode, _place()[1])


def _run_in_mode(job: Job, mode: str, place: cgroups.Place | None = None) -> RunResult:
    """One run in isolation ``mode``, in a cgroup made at ``place`` (None: the watchdog bounds memory)."""
    _validate_tests(job)
    python, stdlib_readable = sandbox_python()
    uid = _UID_BASE + secrets.randbelow(_UID_SPAN) if os.geteuid() == 0 else None
    if uid is not None:
        _issued_uids.append(uid)
    nonce = secrets.token_hex(16)
    start = time.monotonic()
    # The job directory first: a failure to make it then leaves no cgroup behind.
    job_dir = tempfile.mkdtemp(prefix=f"{PROCESS_MARKER}-{os.getpid()}-")
    try:
        memory, processes = int(job.memory_limit_mb) << 20, int(job.max_processes)
        cgroup = cgroups.RunCgroup(place, memory, processes) if place else None
    except OSError as error:
        shutil.rmtree(job_dir, ignore_errors=True)
        raise RuntimeError(
            f"The code sandbox could not make the run's cgroup ({place.kind} under {place.memory}): {error}. "
            f"Set {LIMITS_SETTING}=watchdog to bound memory by polling only."
        ) from None
    held = {"isolation": mode, "limits": place.kind if place else "watchdog"}
    process = None
    try:
        _write_job_files(job, job_dir, mode, uid, stdlib_readable, nonce, cgroup)
        tests_budget = (wall_limit(job.time_limit) + 0.5) * (len(job.stdio) or 1)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": job_dir, "TMPDIR": job_dir}
        process = subprocess.Popen(
            _command(mode, python, job_dir),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=job_dir,
            env=env,
            start_new_session=True,
        )
        try:
            out, err = process.communicate(timeout=STARTUP_ALLOWANCE + tests_budget)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            process.communicate()
            result = RunResult(
                0, job.total, "timeout", time.monotonic() - start, "the sandbox missed its deadline", **held
            )
        else:
            result = _result(job, out, err, process.returncode, nonce, start, held)
    finally:
        if process is not None and process.poll() is None:
            _kill_group(process)
            process.wait()
        shutil.rmtree(job_dir, ignore_errors=True)
        if cgroup is not None:
            peak = cgroup.peak()  # every process of the run has ended: nothing more is charged
            if not cgroup.remove():
                warnings.warn(f"A sandbox cgroup could not be removed: {cgroup.directories}", stacklevel=2)
    if cgroup is not None:
        result = dataclasses.replace(result, peak_memory_bytes=peak)
    return result


def _result(job: Job, out: bytes, err: bytes, code: int, nonce: str, start: float, held: dict) -> RunResult:
    """The run's result from the supervisor's report (``out``), or a kill if it brought none."""
    try:
        report = marshal.loads(out) if out else {}
    except (EOFError, ValueError, TypeError):
        report = {}
    if not isinstance(report, dict):
        report = {}
    if "sandbox_error" in report:
        raise RuntimeError(
            f"The code sandbox could not be set up ({held['isolation']}, {held['limits']}): "
            f"{report['sandbox_error']}"
        )
    if report.get("nonce") != nonce or report.get("status") not in STATUSES:
        detail = err.decode("utf-8", "replace")[-2000:] or f"supervisor exited with {code}"
        return RunResult(0, job.total, "killed", time.monotonic() - start, detail, **held)
    peak = report.get("peak")
    return RunResult(
        _count_passed(job, report),
        job.total,
        report["status"],
        time.monotonic() - start,
        report.get("detail", ""),
        **held,
        peak_memory_bytes=peak if isinstance(peak, int) and peak > 0 else None,
    )


def default_workers() -> int:
    """Parallel sandboxes: twice the cores, since a timed-out program mostly waits for its deadline."""
    return max(2, 2 * (os.cpu_count() or 1))


def run_many(jobs: list[Job], max_workers: int | None = None) -> list[RunResult]:
    """Run ``jobs`` in parallel (threads, each driving one sandbox process); results in input order."""
    jobs = list(jobs)
    if not jobs:
        return []
    workers = max(1, min(max_workers or default_workers(), len(jobs)))
    if workers == 1:
        return [run(job) for job in jobs]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sandbox") as pool:
        return list(pool.map(run, jobs))


def sandbox_processes(owner: int | None = None) -> list[int]:
    """PIDs of live sandbox processes on this machine, from a scan of /proc: command lines carrying
    :data:`PROCESS_MARKER` (of sandboxes started by process ``owner``, or by anyone), and processes running
    as a sandbox uid this process issued (which catches children that exec'd another program)."""
    marker = f"{PROCESS_MARKER}:{owner}\0" if owner is not None else f"{PROCESS_MARKER}:"
    uids = set(_issued_uids)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                tagged = marker.encode() in handle.read()
            if not tagged and uids:
                with open(f"/proc/{entry}/status", encoding="utf-8") as handle:
                    status = dict(line.split(":", 1) for line in handle.read().splitlines() if ":" in line)
                tagged = int(status["Uid"].split()[0]) in uids and not status["State"].strip().startswith("Z")
        except (OSError, KeyError, ValueError):
            continue
        if tagged:
            found.append(int(entry))
    return found


def sandbox_cgroups(owner: int | None = None) -> list[str]:
    """Run cgroups left on this machine (made by process ``owner``, or by anyone) where this process makes
    its own; empty under the watchdog. For leak checks: each run removes its cgroup when it ends."""
    place = _place()[1]
    return cgroups.run_cgroups(place, owner) if place else []
