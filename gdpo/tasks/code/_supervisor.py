"""Trusted supervisor of one sandboxed program run (standard library only).

Started by :mod:`gdpo.tasks.code.sandbox` as ``python -I -S -B _supervisor.py JOB_DIR``, inside fresh
network, PID, mount and IPC namespaces when the machine allows it. It never runs model code itself: it
reads the job, moves into a private minimal root (:func:`_seal_filesystem`), compiles the program, forks
one *runner* per execution (one for all function-call tests, one per stdin/stdout test), moves it into
the run's cgroup when the caller made one (:mod:`gdpo.tasks.code.cgroups`: the kernel then bounds the
tree's memory and processes) and watches the whole process tree's CPU time, and its memory where no
cgroup could be had (:func:`_tree_usage`). A runner drops to the sandbox uid with resource limits before
it touches model code. It decides no verdict and holds no expected answer:

- value tests (``calls``): the runner sends the ``repr`` of each call's result, for values of the
  built-in literal types only (anything else, such as an object whose ``__eq__`` is always true, is sent
  as ``<not a literal>``);
- stdin/stdout tests: the captured stdout of each run that ended cleanly;
- assertion tests (``asserts``): the runner's own "ok" per snippet. Model code shares that process and
  can forge it, so these serve only reference runs of a benchmark's original asserts, never rewards.

The caller (:mod:`gdpo.tasks.code.sandbox`, outside every namespace) compares the values and outputs
with the expected answers, which never enter the sandbox (:mod:`gdpo.tasks.code.comparison`). Model code
could at most forge records of values, and a forged value passes only if it is the right answer.

Job and result travel as ``marshal`` data (format version 2, readable by every Python 3), which loads in
microseconds where importing ``json`` would cost a sizeable part of the sandbox's start-up. Result on
stdout: ``{"status", "values" | "outputs", "asserted", "total", "detail", "peak", "nonce"}`` (``peak``: bytes,
the most the memory watchdog counted; 0 in a cgroup); a setup failure of
the sandbox itself is reported as ``{"sandbox_error": ...}``.
"""

import builtins
import io
import marshal
import os
import resource
import select
import signal
import sys
import time

CHANNEL_FD = 3
RECORD_PAYLOAD_CAP = 100_000  # characters of a returned value's repr sent back
CHANNEL_CAP = 8 << 20  # bytes of records accepted from one runner
DETAIL_CAP = 2000  # characters of stderr kept for the result's detail
EXIT_MEMORY = 120  # runner exit code for an uncaught MemoryError (stdin/stdout mode)
AF_UNIX, AF_BLOCKED = 1, (2, 10, 17)  # AF_INET, AF_INET6, AF_PACKET
# mount(2) and umount2(2) flags; pivot_root(2) has no libc wrapper, and its number differs by architecture.
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_NOATIME, MS_NODIRATIME = 1, 2, 4, 8, 32, 1024, 2048
MS_BIND, MS_RELATIME, MNT_DETACH = 4096, 1 << 21, 2
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
IPC_BYTES = 8 << 20  # System V shared memory, message queues and /dev/shm of one run, each
# Files (and links) in the run's directory and in /dev/shm, each: an empty file takes no block of a tmpfs
# but about 1 KiB of kernel memory, which no limit in blocks and no process's pages count.
TMPFS_INODES = 4096
PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 4, 38, 22, 2
# The seccomp filter of runners (see _runner_filter): each architecture's audit tag, the numbers of
# socket(2) and rt_sigaction(2), and of the calls refused outright: add_key(2), request_key(2) and
# keyctl(2), then socketcall(2) and the old signal(2) and sigaction(2) where they exist;
# io_uring_setup(2) and memfd_secret(2) are 425 and 447 on all of them.
SECCOMP_ARCH = {
    "x86_64": (0xC000003E, 41, 13, (248, 249, 250)),
    "aarch64": (0xC00000B7, 198, 134, (217, 218, 219)),
    "riscv64": (0xC00000F3, 198, 134, (217, 218, 219)),
    "ppc64le": (0xC0000015, 326, 173, (269, 270, 271, 102, 48, 67)),
    "s390x": (0x80000016, 359, 174, (278, 279, 280, 102, 48, 67)),
}
SYS_IO_URING_SETUP, SYS_MEMFD_SECRET = 425, 447
WALL_FACTOR, WALL_EXTRA = 3, 1.0  # wall-clock cap of a runner: 3 × time_limit + 1 s
WATCH_POLL = 0.02  # seconds between checks of the sandbox's memory and CPU time (see _tree_usage)
_OOM_NOTE = "stopped: the kernel killed a process of the run at its cgroup's limit of {} MiB"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

_libc = None


def _load_libc():
    global _libc
    if _libc is None:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _check(result, what):
    if result != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source, target, fstype, flags, data=None):
    libc = _load_libc()
    enc = lambda s: None if s is None else s.encode()
    _check(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def _view_paths():
    """Host paths the sandbox sees, read-only: the interpreter, its standard library and the directories
    of the shared libraries it has loaded (libc, libffi, lib-dynload...), and the loader's cache.
    Nothing else of the host: no /home, /etc, /run (sockets), /tmp (FIFOs), no installed packages."""
    executable = os.path.realpath(sys.executable)
    paths = {executable, os.path.dirname(os.__file__), "/etc/ld.so.cache"}
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            fields = line.split(None, 5)
            mapped = fields[5].rstrip("\n") if len(fields) == 6 else ""
            if mapped.startswith("/") and mapped != executable and not mapped.endswith("(deleted)"):
                paths.add(os.path.dirname(mapped))
    chosen = []
    for path in sorted(p for p in paths if os.path.exists(p)):  # parents sort before their children
        if not any(path.startswith(parent.rstrip("/") + "/") for parent in chosen):
            chosen.append(path)
    return chosen


def _elf_interpreter(executable):
    """The program loader named in a 64-bit ELF executable (e.g. /lib64/ld-linux-x86-64.so.2), or None:
    the sandbox needs it at that very path for model code to start the interpreter again."""
    import struct

    with open(executable, "rb") as handle:
        header = handle.read(64)
        if header[:5] != b"\x7fELF\x02":
            return None
        offset, size, count = struct.unpack_from("<Q", header, 32)[0], *struct.unpack_from("<HH", header, 54)
        for index in range(count):
            handle.seek(offset + index * size)
            kind, _, position, _, _, length = struct.unpack("<IIQQQQ", handle.read(40))
            if kind == 3:  # PT_INTERP
                handle.seek(position)
                return handle.read(length).rstrip(b"\0").decode()
    return None


def _locked_flags(path):
    """Mount flags a read-only remount of a bind of ``path`` must keep (a user namespace may not clear
    the flags of a mount it inherited)."""
    flags, kept = os.statvfs(path).f_flag, 0
    for st_flag, ms_flag in ((8, MS_NOEXEC), (1024, MS_NOATIME), (2048, MS_NODIRATIME), (4096, MS_RELATIME)):
        if flags & st_flag:
            kept |= ms_flag
    return kept


def _bind_read_only(source, target, flags=MS_NOSUID | MS_NODEV):
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o600))
    _mount(source, target, None, MS_BIND)
    _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | flags | _locked_flags(source))


def _limit_ipc(job):
    """System V shared memory, message queues and semaphores of this run's private IPC namespace: a few
    MiB in all.
    (POSIX queues are bounded by ``RLIMIT_MSGQUEUE`` and POSIX shared memory by the small /dev/shm.)"""
    if os.stat("/proc/self/ns/ipc").st_ino == job["host_ipc_namespace"]:  # never change the host's limits
        raise OSError("the sandbox shares the host's IPC namespace; run it with unshare --ipc")
    limits = {
        "kernel/shmmax": IPC_BYTES,
        "kernel/shmall": IPC_BYTES // os.sysconf("SC_PAGE_SIZE"),
        "kernel/shmmni": 16,
        "kernel/msgmnb": IPC_BYTES // 16,
        "kernel/msgmni": 16,
        "kernel/sem": "250 4096 32 16",  # semaphores per set, in all, per semop call, sets: about 256 KiB
    }
    for name, value in limits.items():
        try:
            with open(f"/proc/sys/{name}", "w") as handle:
                handle.write(str(value))
        except OSError:
            pass  # a user namespace may not own these: then only the memory watchdog bounds them


def _seal_filesystem(job, job_dir, owner):
    """Replace the host's filesystem by a private, minimal one (pivot_root), the host's detached.

    The new root is a tmpfs (mounted on ``job_dir``, which this mount namespace alone sees) whose
    directory ``root``, the sandbox's "/" (a chroot, which refuses nested user namespaces), holds
    read-only binds of :func:`_view_paths`, /dev/{null,zero,random,urandom}, a /proc of the new PID
    namespace (read-only), a small /dev/shm and, at ``job_dir``, the run's fresh size-limited tmpfs.
    Runs as (namespace) root before any runner exists.
    """
    view = _view_paths()
    _mount("tmpfs", job_dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    root = job_dir + "/root"  # the sandbox's "/": a directory below the new root, see the chroot below
    os.mkdir(root, 0o755)
    for link in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(link):  # merged /usr: the loader's path goes through these
            os.symlink(os.readlink(link), root + link)
    for path in view:
        _bind_read_only(path, root + path)
    stdlib = os.path.dirname(os.__file__)
    for packages in (f"{stdlib}/site-packages", f"{stdlib}/dist-packages"):
        if os.path.isdir(packages):  # installed packages (benchmark data among them) stay out of view
            _mount("tmpfs", root + packages, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=0555")
    loader = _elf_interpreter(os.path.realpath(sys.executable))
    if loader and os.path.exists(loader):
        seen_at = os.path.join(os.path.realpath(os.path.dirname(loader)), os.path.basename(loader))
        if not os.path.lexists(root + seen_at):
            _bind_read_only(os.path.realpath(loader), root + seen_at)
    for name in ("null", "zero", "random", "urandom"):
        _bind_read_only(f"/dev/{name}", f"{root}/dev/{name}", MS_NOSUID | MS_NOEXEC)
    if sys.executable != os.path.realpath(sys.executable) and not os.path.lexists(root + sys.executable):
        os.makedirs(os.path.dirname(root + sys.executable), exist_ok=True)
        os.symlink(os.path.realpath(sys.executable), root + sys.executable)
    os.makedirs(root + "/dev/shm")
    shm_options = f"size={IPC_BYTES >> 10}k,nr_inodes={TMPFS_INODES},mode=1777"
    _mount("tmpfs", root + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, shm_options)
    _limit_ipc(job)
    os.makedirs(root + "/proc")
    try:  # a /proc of the new PID namespace: only the sandbox's processes
        _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        _mount(None, root + "/proc", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        pass  # some user-namespace setups refuse a new /proc: the sandbox then has none
    os.makedirs(root + job_dir)
    size_kib = max(1, job["tmpfs_bytes"] >> 10)
    options = f"size={size_kib}k,nr_inodes={TMPFS_INODES},mode=0700,uid={owner},gid={owner}"
    _mount("tmpfs", root + job_dir, "tmpfs", MS_NOSUID | MS_NODEV, options)
    # pivot_root(".", ".") puts the old root on top of the new one, and detaching it leaves the host's
    # filesystem out of this mount namespace altogether: unlike chroot, no nested namespace of model code
    # can climb back to it.
    os.chdir(job_dir)
    number = SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        machine = os.uname().machine
        raise OSError(f"no pivot_root syscall number known for {machine}; add it to SYS_PIVOT_ROOT")
    _check(_load_libc().syscall(number, b".", b"."), "pivot_root")
    _check(_load_libc().umount2(b".", MNT_DETACH), "umount2 of the host's root")
    _mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    # Every process of the sandbox is chrooted below its mount namespace's root, and the kernel refuses
    # a new user namespace to a chrooted process: model code cannot gain capabilities in a nested user
    # namespace, so no private IPC namespace or mount whose memory the watchdog would not see.
    os.chroot("root")
    os.chdir("/")


def _drop_capabilities():
    """Clear all capability sets (user-namespace mode: the runner is uid 0 inside the namespace)."""
    import ctypes

    libc = _load_libc()
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(libc.capset(header, data), "capset")


def _runner_filter():
    """Install a seccomp filter on the runner (inherited by its children). Returns False, installing
    nothing, on an architecture not in :data:`SECCOMP_ARCH`.

    - Unix sockets only: a network namespace does not cover every address family (AF_VSOCK reaches the
      hypervisor of a virtual machine from any namespace), so socket(2) with another family fails with
      EAFNOSUPPORT, and what would create one out of the filter's sight fails with EPERM: socketcall(2)
      (arguments in memory), io_uring (IORING_OP_SOCKET), calls of another ABI (i386 or x32 from a 64-bit
      process).
    - No handler for SIGCHLD (EPERM): ignoring it, or SA_NOCLDWAIT, has the kernel reap children, whose
      CPU time then vanishes from every /proc count the watchdog sums; waited-for children stay counted.
    - No kernel keys (EPERM): a key in a user keyring outlives the run in the host's kernel.
    - No memfd_secret(2) (EPERM): its pages are in no process's counts and its files are not memfds.
    """
    import ctypes

    machine = os.uname().machine
    if machine not in SECCOMP_ARCH:
        return False
    arch, socket_nr, sigaction_nr, refused = SECCOMP_ARCH[machine]
    low = lambda index: 16 + 8 * index + 4 * (sys.byteorder == "big")  # low 32 bits of an argument
    high = lambda index: 16 + 8 * index + 4 * (sys.byteorder == "little")
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_RET|K
    # (code, k, label if true, label if false); None goes on to the next instruction
    program = [
        (ld, 4, None, None),  # the call's architecture
        (jeq, arch, None, "deny"),
        (ld, 0, None, None),  # the syscall number
        (jge, 0x40000000, "deny", None),  # x32 calls on x86_64 (no other architecture numbers this high)
        (jeq, socket_nr, "socket", None),
        (jeq, sigaction_nr, "sigaction", None),
        *[(jeq, number, "deny", None) for number in (SYS_IO_URING_SETUP, SYS_MEMFD_SECRET, *refused)],
        (ret, 0x7FFF0000, None, None),  # SECCOMP_RET_ALLOW
        ("socket", None, None, None),
        (ld, low(0), None, None),  # the address family
        (jeq, AF_UNIX, "allow", "no family"),
        ("sigaction", None, None, None),
        (ld, low(0), None, None),  # the signal
        (jeq, signal.SIGCHLD, None, "allow"),
        (ld, low(1), None, None),  # the new action: NULL (a query) is allowed
        (jeq, 0, None, "deny"),
        (ld, high(1), None, None),
        (jeq, 0, "allow", "deny"),
        ("allow", None, None, None),
        (ret, 0x7FFF0000, None, None),
        ("deny", None, None, None),
        (ret, 0x00050000 | 1, None, None),  # SECCOMP_RET_ERRNO | EPERM
        ("no family", None, None, None),
        (ret, 0x00050000 | 97, None, None),  # EAFNOSUPPORT
    ]
    labels, instructions = {}, []
    for code, k, if_true, if_false in program:
        if isinstance(code, str):
            labels[code] = len(instructions)
        else:
            instructions.append((code, k, if_true, if_false))
    jump = lambda index, label: 0 if label is None else labels[label] - index - 1

    class Filter(ctypes.Structure):
        _fields_ = [
            ("code", ctypes.c_uint16),
            ("jt", ctypes.c_uint8),
            ("jf", ctypes.c_uint8),
            ("k", ctypes.c_uint32),
        ]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(Filter))]

    filters = (Filter * len(instructions))(
        *[Filter(code, jump(i, t), jump(i, f), k) for i, (code, k, t, f) in enumerate(instructions)]
    )
    prog = Program(len(instructions), filters)
    _check(_load_libc().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp")
    return True


def _confine(job):
    """Resource limits and privilege drop of a freshly forked runner (still before any model code)."""
    limit = lambda kind, value: resource.setrlimit(kind, (value, value))
    cpu_seconds = int(job["time_limit"]) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    limit(resource.RLIMIT_CORE, 0)
    limit(resource.RLIMIT_FSIZE, job["file_size_limit"])
    limit(resource.RLIMIT_NOFILE, 256)
    # POSIX message queues, counted per (namespaced) user; never above the inherited cap
    limit(resource.RLIMIT_MSGQUEUE, min(IPC_BYTES, resource.getrlimit(resource.RLIMIT_MSGQUEUE)[1]))
    uid = job["uid"]
    _check(_load_libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _runner_filter()
    if uid is not None:
        # RLIMIT_NPROC counts the processes of the real uid: a uid of its own per run makes it a
        # per-run limit, and it is enforced because that uid is not root.
        limit(resource.RLIMIT_NPROC, job["max_processes"])
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    else:
        limit(resource.RLIMIT_NPROC, job["max_processes"])
        if job["isolation"] == "user-namespaces":
            _drop_capabilities()
    limit(resource.RLIMIT_AS, job["memory_bytes"])


def _install_guards(job, supervisor_pid):
    """Audit hooks in the runner: no internet sockets or name lookups (a second line behind the empty
    network namespace), and without namespaces no signals to the supervisor or to process groups.

    Audit hooks cannot be removed from Python code, but C code (ctypes) bypasses them.
    """
    no_namespaces = job["isolation"] == "none"

    def guard(event, args):
        blocked = AF_BLOCKED + (AF_UNIX,) if no_namespaces else AF_BLOCKED  # else no host socket is in view
        if event == "socket.__new__" and len(args) > 1 and args[1] in blocked:
            raise PermissionError("network access is disabled in the sandbox")
        if event in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr"):
            raise PermissionError("network access is disabled in the sandbox")
        if (
            no_namespaces
            and event in ("os.kill", "os.killpg")
            and (args[0] <= 0 or args[0] == supervisor_pid)
        ):
            raise PermissionError("signals outside the sandbox are disabled")

    sys.addaudithook(guard)


class SetupError(Exception):
    """The sandbox itself failed (not the program): reported as ``sandbox_error``, never as a verdict."""


def _open_cgroup(job):
    """Descriptors of the run's cgroup files, opened while the host's filesystem is still in view: its
    ``cgroup.procs`` files (one per hierarchy) and the file counting OOM kills. None without a cgroup."""
    cgroup = job.get("cgroup")
    if not cgroup:
        return None
    procs = [os.open(path, os.O_WRONLY | os.O_CLOEXEC) for path in cgroup["procs"]]
    return {"procs": procs, "events": os.open(cgroup["events"], os.O_RDONLY | os.O_CLOEXEC)}


def _oom_kills(job):
    """OOM kills the kernel made in the run's cgroup so far (0 without one)."""
    fds = job.get("cgroup_fds")
    if not fds:
        return 0
    for line in os.pread(fds["events"], 4096, 0).decode("ascii", "replace").splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == "oom_kill":
            return int(fields[1])
    return 0


def _spawn(job, stdin_fd, stdout_fd, stderr_fd, channel_fd, body):
    """Fork a runner with the given standard streams (and record channel), move it into the run's cgroup,
    confine it, run ``body``. The runner waits until it is in the cgroup: no code of its own runs outside."""
    supervisor_pid = os.getpid()
    sys.stdout.flush()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(go_r)
        try:
            for fd in job["cgroup_fds"]["procs"] if job.get("cgroup_fds") else ():
                os.write(fd, str(pid).encode())
        except OSError as error:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise SetupError(f"moving a runner into its cgroup failed: {error}") from None
        finally:
            os.close(go_w)  # the runner goes on (or, killed, nowhere)
        return pid
    exit_now = os._exit  # bound before model code, which could patch os._exit and fall back into our code
    try:
        os.close(go_w)
        os.read(go_r, 1)  # end of file once the supervisor has moved us
        os.close(go_r)
        os.setpgid(0, 0)
        os.dup2(stdin_fd, 0)
        os.dup2(stdout_fd, 1)
        os.dup2(stderr_fd, 2)
        if channel_fd is not None:
            os.dup2(channel_fd, CHANNEL_FD)
        os.closerange(CHANNEL_FD + (channel_fd is not None), 1 << 20)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _confine(job)
        os.chdir(job["job_dir"])
        _install_guards(job, supervisor_pid)
        body()
    except BaseException as error:  # a harness failure before model code: visible, never a pass
        try:
            os.write(2, f"sandbox runner setup failed: {error!r}\n".encode())
        except OSError:
            pass
    exit_now(125)


class Stream:
    """One pipe read by the supervisor: keeps the first ``keep`` bytes, overflows past ``cap`` bytes."""

    def __init__(self, fd, keep, cap):
        self.fd, self.keep, self.cap = fd, keep, cap
        self.data = bytearray()
        self.size = 0


def _kill_sandbox(job, runner_pid):
    """SIGKILL every process the runner may have left, including ones that escaped its process group."""
    if os.getpid() == 1:  # init of our own PID namespace: -1 reaches everything in it but us
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return
    try:
        os.killpg(runner_pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    uid = job["uid"]
    if uid is not None and os.geteuid() == 0:  # a helper with the sandbox uid kills all of its processes
        helper = os.fork()
        if helper == 0:
            try:
                os.setresuid(uid, uid, uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(helper, 0)


def wall_limit(time_limit):
    """Seconds of wall clock after which a runner is killed whatever its CPU use (sleeping, blocked, or
    starved of CPU on a loaded machine): time limits are CPU budgets first, see :func:`_supervise`."""
    return WALL_FACTOR * time_limit + WALL_EXTRA


def _sandbox_pids(runner_pid):
    """Processes of the sandbox: every process of our PID namespace but us (its init), or, without
    namespaces or without a /proc of our own, the runner alone."""
    if os.getpid() != 1:
        return [runner_pid]
    try:
        return [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and entry != "1"]
    except OSError:
        return [runner_pid]


def _tree_usage(runner_pid, count_memory=True):
    """(CPU seconds, bytes of memory) of the whole sandbox, from /proc; memory 0 unless ``count_memory``
    (a run in a cgroup has its memory bounded by the kernel instead).

    CPU: user + system time of every process and of the children it reaped. Memory (the watchdog where no
    cgroup can be had): anonymous and shared-memory pages of every process, memfd files held open (each
    once, mapped or not), System V segments and /dev/shm of the run's own IPC namespace and filesystem.
    Pages shared by processes count in each of them: an upper bound, which only hostile programs come near.
    Memory the kernel holds for no process (pipe buffers, descriptors in flight, pages pinned by a pipe,
    inodes kept by mappings) is not seen: only a cgroup counts it."""
    ticks = memory = 0
    memfds = {}
    for pid in _sandbox_pids(runner_pid):
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            ticks += sum(int(value) for value in fields[11:15])
            if not count_memory:
                continue
            with open(f"/proc/{pid}/status", "rb") as handle:
                for line in handle:
                    if line.startswith((b"RssAnon:", b"RssShmem:")):
                        memory += int(line.split()[1]) << 10
            for fd in os.listdir(f"/proc/{pid}/fd"):
                path = f"/proc/{pid}/fd/{fd}"
                if os.readlink(path).startswith("/memfd:"):
                    info = os.stat(path)
                    memfds[(info.st_dev, info.st_ino)] = info.st_blocks * 512
        except (OSError, ValueError, IndexError):
            continue  # the process ended meanwhile
    memory += sum(memfds.values())
    if os.getpid() == 1 and count_memory:
        try:
            with open("/proc/sysvipc/shm", "rb") as handle:
                memory += sum(int(line.split()[14]) for line in handle.readlines()[1:])
            usage = os.statvfs("/dev/shm")
            memory += (usage.f_blocks - usage.f_bfree) * usage.f_frsize
        except (OSError, ValueError, IndexError):
            pass
    return ticks / CLOCK_TICKS, memory


def _supervise(job, pid, streams):
    """Collect the runner's streams until it exits, exceeds its time or a stream overflows its cap.

    Time: the sandbox is stopped once its processes together have used ``time_limit`` seconds of CPU, or
    after :func:`wall_limit` of wall clock. An endless loop, which gets a core to itself, so ends after
    about ``time_limit``, while a correct program on a machine busy with other work is not cut off for
    waiting for a core. Memory: in a cgroup, stopped at the kernel's first OOM kill in it (the kernel
    keeps the run under ``memory_bytes``; an OOM kill takes one process, and the rest of the run stops
    with it); else stopped once the watchdog counts more than ``memory_bytes`` in the whole sandbox
    (checked every ``WATCH_POLL`` s, so it may overshoot by what it allocates in that time). Each process
    also has ``RLIMIT_AS``.

    Returns (event, wait_status, cpu_seconds, note, peak) with event in {None, "timeout", "memory",
    "output_limit"}, a note saying which limit stopped it and ``peak`` the most memory the watchdog
    counted (0 in a cgroup, whose own peak the caller reads). Every process of the sandbox is dead when
    this returns.
    """
    started = time.monotonic()
    wall_deadline = started + wall_limit(job["time_limit"])
    next_check = started + WATCH_POLL
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    by_fd = {s.fd: s for s in streams}
    for fd in by_fd:
        poller.register(fd, select.POLLIN)
    event, exited, note, peak = None, False, "", 0
    in_cgroup = bool(job.get("cgroup_fds"))
    # Without namespaces a program not run as root shares the caller's uid and sees /sys/fs/cgroup, so it can
    # move itself out of a cgroup the caller owns: the watchdog keeps counting its memory then.
    count_memory = not in_cgroup or job["isolation"] == "none"
    oom_kills = _oom_kills(job)

    def read(fd):
        stream = by_fd[fd]
        data = os.read(fd, 65536)
        if not data:
            poller.unregister(fd)
            del by_fd[fd]
            return
        stream.size += len(data)
        room = stream.keep - len(stream.data)
        if room > 0:
            stream.data += data[:room]

    while not exited and event is None:
        now = time.monotonic()
        if now >= wall_deadline:
            event, note = "timeout", f"stopped after {now - started:.1f} s of wall clock"
            break
        if now >= next_check:
            cpu, memory = _tree_usage(pid, count_memory=count_memory)
            peak = max(peak, memory)
            if memory > job["memory_bytes"]:
                event = "memory"
                note = f"stopped holding {memory >> 20} MiB (limit {job['memory_bytes'] >> 20} MiB)"
                break
            if in_cgroup and _oom_kills(job) > oom_kills:
                event, note = "memory", _OOM_NOTE.format(job["memory_bytes"] >> 20)
                break
            if cpu >= job["time_limit"]:
                counted = "all its processes" if os.getpid() == 1 else "the runner's own"
                event, note = "timeout", f"stopped after {cpu:.2f} s of CPU ({counted})"
                break
            next_check = now + WATCH_POLL
        wait = next_check - now
        for fd, _ in poller.poll(1000 * max(0.001, min(wait, wall_deadline - now))):
            if fd == pidfd:
                exited = True
            elif fd in by_fd:
                read(fd)
        if any(s.size > s.cap for s in streams):
            event = "output_limit"
    _kill_sandbox(job, pid)
    _, status, usage = os.wait4(pid, 0)
    os.close(pidfd)
    drain_until = time.monotonic() + 1.0
    while by_fd and time.monotonic() < drain_until:  # data already in the pipes; writers are dead
        ready = poller.poll(100)
        if not ready:
            break
        for fd, _ in ready:
            if fd in by_fd:
                read(fd)
    _reap_orphans()
    if event is None and in_cgroup and _oom_kills(job) > oom_kills:
        event, note = "memory", _OOM_NOTE.format(job["memory_bytes"] >> 20)
    if event is None and any(s.size > s.cap for s in streams):
        event = "output_limit"
    if event == "output_limit":
        note = "stopped for writing more output than allowed"
    return event, status, usage.ru_utime + usage.ru_stime, note, peak


def _reap_orphans():
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


def _exit_kind(job, status, cpu_seconds):
    """ "exit" (normal exit), "timeout" (CPU limit) or "killed" (any other signal)."""
    if os.WIFEXITED(status):
        return "exit"
    signum = os.WTERMSIG(status)
    if signum == signal.SIGXCPU or (signum == signal.SIGKILL and cpu_seconds >= int(job["time_limit"]) + 0.9):
        return "timeout"
    return "killed"


# --- runners ----------------------------------------------------------------------------------------


def _literal_repr_function():
    """``repr`` restricted to values of the built-in literal types (recursively): anything else, such as
    an object whose ``__eq__`` or ``__repr__`` claims to be the answer, is sent as ``<not a literal>``.
    Bound to the real builtins before model code runs."""
    real_repr, type_of, literal, containers = (
        repr,
        type,
        (int, float, complex, bool, str, bytes, type(None)),
        (list, tuple, set, frozenset),
    )

    def is_literal(value, depth):
        kind = type_of(value)
        if kind in literal:
            return True
        if depth > 50:
            return False
        if kind in containers:
            return all(is_literal(item, depth + 1) for item in value)
        if kind is dict:
            return all(is_literal(k, depth + 1) and is_literal(v, depth + 1) for k, v in value.items())
        return False

    def represent(value):
        return real_repr(value) if is_literal(value, 0) else "<not a literal>"

    return represent


def _function_runner(code_obj, call_codes, assert_codes, nonce):
    """Body of the function-call runner: load the program, run every test, report on CHANNEL_FD.

    Value records carry data only (the literal ``repr`` of a result); whoever forges one must still
    produce the right value, which the caller of the sandbox checks. Assertion records ("ok") are the
    program's own claim: they serve reference runs of a benchmark's asserts, never rewards."""
    write, run_code, evaluate, exit_now = os.write, exec, eval, os._exit
    represent = _literal_repr_function()
    name_of = lambda error: type(error).__name__.encode("utf-8", "replace")

    def send(index, kind, payload=b""):
        write(CHANNEL_FD, b"%s %d %s %d\n" % (nonce, index, kind, len(payload)) + payload)

    namespace = {"__name__": "solution", "__builtins__": builtins}
    try:
        run_code(code_obj, namespace)
    except MemoryError:
        send(-1, b"memory")
        exit_now(1)
    except BaseException as error:
        send(-1, b"load_error", name_of(error))
        exit_now(1)
    send(-1, b"loaded")
    for index, call in enumerate(call_codes):
        try:
            value = evaluate(call, namespace)
            send(index, b"value", represent(value)[:RECORD_PAYLOAD_CAP].encode("utf-8", "replace"))
        except MemoryError:
            send(index, b"memory")
        except BaseException as error:
            send(index, b"error", name_of(error))
    for offset, test in enumerate(assert_codes):
        index = len(call_codes) + offset
        try:
            run_code(test, namespace)
            send(index, b"ok")
        except AssertionError:
            send(index, b"fail")
        except MemoryError:
            send(index, b"memory")
        except BaseException as error:
            send(index, b"error", name_of(error))
    try:
        sys.stdout.flush()
    except BaseException:
        pass
    send(-1, b"done")
    exit_now(0)


def _stdio_runner(code_obj):
    """Body of a stdin/stdout runner: run the program as ``__main__`` with fds 0/1/2 already in place."""
    exit_now = os._exit
    sys.stdin = io.TextIOWrapper(
        io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8", errors="replace"
    )
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8")
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", write_through=True)
    code = 0
    try:
        exec(code_obj, {"__name__": "__main__", "__builtins__": builtins})
    except SystemExit as stop:
        if stop.code is None:
            code = 0
        elif isinstance(stop.code, int):
            code = stop.code & 0xFF
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except MemoryError:
        code = EXIT_MEMORY
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
    except BaseException:
        code = code or 1
    exit_now(code)


def _parse_records(buffer, nonce):
    """Records ``NONCE INDEX KIND LEN\\nPAYLOAD`` up to the first one that is malformed or unstamped."""
    records, position = [], 0
    while position < len(buffer):
        end = buffer.find(b"\n", position)
        if end < 0:
            break
        parts = bytes(buffer[position:end]).split(b" ")
        if len(parts) != 4 or parts[0] != nonce:
            break  # forged or garbled: everything after it is ignored (fails closed)
        try:
            index, length = int(parts[1]), int(parts[3])
        except ValueError:
            break
        payload = bytes(buffer[end + 1 : end + 1 + length])
        if len(payload) != length:
            break
        records.append((index, parts[2].decode("ascii", "replace"), payload))
        position = end + 1 + length
    return records


def run_function_tests(job, code_obj):
    """Run the function-call runner; report each test's returned value (a literal ``repr``) or outcome.

    Which values are right is decided by the caller, which alone knows the expected ones."""
    calls, asserts = job["calls"], job["asserts"]
    total = len(calls) + len(asserts)
    call_codes = [compile(c, "<test>", "eval", dont_inherit=True) for c in calls]
    assert_codes = [compile(a, "<test>", "exec", dont_inherit=True) for a in asserts]
    nonce = os.urandom(12).hex().encode()
    channel_r, channel_w = os.pipe()
    output_r, output_w = os.pipe()
    null_fd = os.open(os.devnull, os.O_RDONLY)
    pid = _spawn(
        job,
        null_fd,
        output_w,
        output_w,
        channel_w,
        lambda: _function_runner(code_obj, call_codes, assert_codes, nonce),
    )
    for fd in (channel_w, output_w, null_fd):
        os.close(fd)
    channel = Stream(channel_r, CHANNEL_CAP, CHANNEL_CAP)
    output = Stream(output_r, DETAIL_CAP, job["output_limit"])
    event, status, cpu, note, peak = _supervise(job, pid, [channel, output])
    os.close(channel_r)
    os.close(output_r)
    records = _parse_records(channel.data, nonce)
    outcome = {}  # test index -> "value" | "asserted" | "fail" | "error" | "memory"
    values = {}  # call index -> repr of the returned value
    flags = set()
    for index, kind, payload in records:
        if index < 0:
            flags.add(kind)
            continue
        if index >= total or index in outcome:
            continue
        if kind == "value" and index < len(calls):
            outcome[index] = "value"
            # cut here too: a record written by model code skips the runner's cut, and the caller parses it
            values[index] = payload.decode("utf-8", "replace")[:RECORD_PAYLOAD_CAP]
        elif kind == "ok" and index >= len(calls):
            outcome[index] = "asserted"
        elif kind in ("fail", "error", "memory"):
            outcome[index] = kind
        else:
            outcome[index] = "fail"
    detail = output.data.decode("utf-8", "replace")
    exit_kind = _exit_kind(job, status, cpu)
    if event is not None:
        state = event
    elif "memory" in flags or "memory" in outcome.values():
        state = "memory"
    elif exit_kind != "exit":
        state = exit_kind
    elif "load_error" in flags or "error" in outcome.values() or "done" not in flags:
        state = "runtime_error"
    else:
        state = "ok"
    errors = [
        f"test {i} raised {p.decode('utf-8', 'replace')}" for i, k, p in records if k == "error" and i >= 0
    ]
    if "load_error" in flags:
        errors.insert(
            0, f"loading the program raised {next(p for i, k, p in records if k == 'load_error').decode()}"
        )
    if errors:
        detail = "\n".join(errors[:3]) + ("\n" + detail if detail else "")
    if note:
        detail = f"{note}\n{detail}"
    asserted = sorted(i for i, kind in outcome.items() if kind == "asserted")
    return {
        "status": state,
        "values": values,
        "asserted": asserted,
        "total": total,
        "detail": detail,
        "peak": peak,
    }


def run_stdio_tests(job, code_obj):
    """Run the program once per stdin; report the stdout of each run that ended cleanly (the caller
    compares it with the expected output)."""
    inputs = job["stdin"]
    total, outputs = len(inputs), []
    states, detail, peaks = [], "", []
    for index, text in enumerate(inputs):
        stdin_fd = os.memfd_create("stdin", 0)
        os.write(stdin_fd, text.encode("utf-8"))
        os.lseek(stdin_fd, 0, os.SEEK_SET)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        pid = _spawn(job, stdin_fd, out_w, err_w, None, lambda: _stdio_runner(code_obj))
        for fd in (stdin_fd, out_w, err_w):
            os.close(fd)
        out = Stream(out_r, job["output_limit"], job["output_limit"])
        err = Stream(err_r, DETAIL_CAP, job["output_limit"])
        event, status, cpu, note, peak = _supervise(job, pid, [out, err])
        peaks.append(peak)
        os.close(out_r)
        os.close(err_r)
        exit_kind = _exit_kind(job, status, cpu)
        if event is not None:
            state = event
        elif exit_kind != "exit":
            state = exit_kind
        elif os.WEXITSTATUS(status) == EXIT_MEMORY:
            state = "memory"
        elif os.WEXITSTATUS(status) != 0:
            state = "runtime_error"
        else:
            state = "ok"
        outputs.append(out.data.decode("utf-8", "replace") if state == "ok" else None)
        if state != "ok" and not detail:
            stderr = err.data.decode("utf-8", "replace")
            detail = f"{note}\n{stderr}" if note else stderr or state
        states.append(state)
        if state in ("timeout", "memory", "output_limit", "killed"):
            break  # the remaining tests count as failed; a second slow run would only cost time
    worst = next(
        (s for s in ("timeout", "memory", "output_limit", "killed", "runtime_error") if s in states), "ok"
    )
    peak = max(peaks, default=0)
    return {"status": worst, "outputs": outputs, "total": total, "detail": detail, "peak": peak}


def _emit(report):
    sys.stdout.buffer.write(marshal.dumps(report, 2))
    sys.stdout.flush()


def main():
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a sandboxed process may not interrupt us
    job_dir = sys.argv[1]
    with open(os.path.join(job_dir, "job.bin"), "rb") as handle:
        job = marshal.loads(handle.read())
    job["job_dir"] = job_dir
    try:
        job["cgroup_fds"] = _open_cgroup(job)  # before the host's filesystem leaves our view
        if job["isolation"] != "none":
            _load_libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
            owner = job["uid"] if job["uid"] is not None else 0
            _load_libc()  # ctypes is imported before the host's filesystem disappears
            _seal_filesystem(job, job_dir, owner)
        else:
            os.unlink(os.path.join(job_dir, "job.bin"))
            if job["uid"] is not None:
                os.chown(job_dir, job["uid"], job["uid"])
        os.chdir(job_dir)
        for module in job.get("preload", []):
            try:
                __import__(module)
            except Exception:
                pass
    except Exception as error:
        _emit({"sandbox_error": f"{type(error).__name__}: {error}"})
        return
    try:
        code_obj = compile(job["code"], "<solution>", "exec", dont_inherit=True)
    except Exception as error:
        result = {
            "status": "compile_error",
            "total": job["total"],
            "detail": f"{type(error).__name__}: {error}",
        }
    else:
        try:
            result = (run_stdio_tests if job["stdin"] else run_function_tests)(job, code_obj)
        except SetupError as error:
            _emit({"sandbox_error": str(error)})
            return
    result["nonce"] = job["nonce"]
    result["detail"] = result["detail"][-DETAIL_CAP:]
    _emit(result)


if __name__ == "__main__":
    main()
