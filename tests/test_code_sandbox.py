"""The code sandbox: correct scoring, and hostile programs contained, scored as failures, parent unharmed."""

from __future__ import annotations

import os
import secrets
import socket
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from gdpo.tasks.code.comparison import output_matches, repr_matches
from gdpo.tasks.code.sandbox import Job, RunResult, isolation_mode, run, run_many, sandbox_processes

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/self/status"), reason="the sandbox needs Linux /proc"
)
NAMESPACES = isolation_mode() != "none"
needs_namespaces = pytest.mark.skipif(not NAMESPACES, reason="this barrier needs Linux namespaces (unshare)")
ADD_CALLS = (("add(2, 3)", ("5",)), ("add(-4, 4)", ("0",)))


def job(code: str, **fields) -> Job:
    fields.setdefault("calls", ADD_CALLS)
    fields.setdefault("time_limit", 1.0)
    return Job(textwrap.dedent(code), **fields)


def assert_no_leaks(deadline: float = 3.0) -> None:
    """No process of a sandbox started by this test process is alive (others may run in parallel workers)."""
    end = time.monotonic() + deadline
    while sandbox_processes(owner=os.getpid()) and time.monotonic() < end:
        time.sleep(0.05)
    assert sandbox_processes(owner=os.getpid()) == []


# --- scoring of well-behaved programs -------------------------------------------------------------

SCORING_CASES = [
    # a correct function passes every value test
    ("def add(a, b):\n    return a + b\n", {}, 2, "ok"),
    # a wrong function runs cleanly but passes nothing
    ("def add(a, b):\n    return a - b\n", {}, 0, "ok"),
    # half right: one of two tests
    ("def add(a, b):\n    return 5 if a == 2 else 1\n", {}, 1, "ok"),
    # a bool where an int is expected is wrong (no bool/int mix)
    ("def add(a, b):\n    return True\n", {}, 0, "ok"),
    # syntax error
    ("def add(a, b)\n    return a + b\n", {}, 0, "compile_error"),
    # exception while loading the program
    ("raise RuntimeError('boom')\n", {}, 0, "runtime_error"),
    # exception inside a test: the test fails and the run counts as a bug
    ("def add(a, b):\n    return a + b if a > 0 else 1 // 0\n", {}, 1, "runtime_error"),
    # input() with stdin closed raises EOFError while loading
    ("x = input()\ndef add(a, b):\n    return a + b\n", {}, 0, "runtime_error"),
    # assertion tests: pass, AssertionError (a failure, not a bug)
    ("def f():\n    return 1\n", {"calls": (), "asserts": ("assert f() == 1", "assert f() == 2")}, 1, "ok"),
    # assertion tests: another exception is a runtime error
    ("def f():\n    return 1\n", {"calls": (), "asserts": ("assert f() == 1", "f(3)")}, 1, "runtime_error"),
    # stdin/stdout: right on two inputs, wrong on the third
    (
        "import sys\na, b = map(int, sys.stdin.read().split())\nprint(a + b if a < 9 else 0)\n",
        {"calls": (), "stdio": (("1 2\n", "3\n"), ("5 5", "10"), ("9 1", "10"))},
        2,
        "ok",
    ),
    # stdin/stdout: sys.exit(0) after printing is a normal end
    ("import sys\nprint(int(input()) * 2)\nsys.exit(0)\n", {"calls": (), "stdio": (("4", "8"),)}, 1, "ok"),
    # stdin/stdout: a crash on one input is a runtime error for the run
    (
        "n = int(input())\nprint(10 // n)\n",
        {"calls": (), "stdio": (("2", "5"), ("0", "0"))},
        1,
        "runtime_error",
    ),
    # stdin/stdout: open(0) and sys.stdin.buffer work like on a judge
    ("print(sum(map(int, open(0).read().split())))\n", {"calls": (), "stdio": (("1 2 3", "6"),)}, 1, "ok"),
]


@pytest.mark.parametrize("code, fields, passed, status", SCORING_CASES)
def test_scoring(code, fields, passed, status):
    result = run(job(code, **fields))
    assert (result.passed, result.status) == (passed, status), result.detail


def test_value_and_output_comparison_rules():
    assert repr_matches("[1, 2]", ("(1, 2)",))  # lists and tuples are interchangeable
    assert repr_matches("0.30000000000000004", ("0.3",))  # floats within tolerance
    assert not repr_matches("1", ("True",))  # no bool/int mix
    assert not repr_matches("<__main__.A object at 0x7f>", ("5",))  # non-literal reprs never match
    assert repr_matches("3", ("[3]", "3"))  # any accepted alternative
    assert output_matches("3 \n\n", "3")  # trailing whitespace and blank lines
    assert output_matches("0.1000000001\n", "0.1")  # numeric tokens within 1e-6
    assert not output_matches("3 4", "3")


def test_claims_are_examined_within_bounds_set_by_the_expected_answers():
    from gdpo.tasks.code.comparison import CLAIM_EXTRA, CLAIM_FACTOR, claim_bound, passed_outputs
    from gdpo.tasks.code.comparison import passed_values

    assert claim_bound(("{1, 2}", "[1]")) == CLAIM_FACTOR * 6 + CLAIM_EXTRA
    # the right value padded past its bound fails unread (a real repr is never padded)
    padded = "{1, 2}" + " " * (claim_bound("{1, 2}") - 5)
    assert passed_values(["{1, 2}", padded, None], [("{1, 2}",)] * 3) == 1
    # honest floats up to 8 times longer than the expected text pass
    assert passed_values(["[0.9999999999999999, 1e-10]"], [("[1.0, 0.0]",)]) == 1
    # a run's claims share one budget (8 x its expected texts + 1,024 characters): 40 claims of 72
    # characters (each within its own bound) exhaust 1,344 after 18, and the rest fail unread
    near = " " * (claim_bound("1") - 1) + "1"
    assert passed_values([near] * 40, [("1",)] * 40) == 18
    assert passed_values(["1"] * 40, [("1",)] * 40) == 40
    assert passed_outputs(["3\n" + " " * 79, "3\n"], ["3\n", "3\n"]) == 1  # stdout: bound 80 characters


def test_result_properties():
    result = RunResult(passed=3, total=3, status="ok", duration=0.1)
    assert result.all_passed and not result.has_bug and result.fraction_passed == 1.0
    assert not RunResult(
        3, 3, "runtime_error", 0.1
    ).all_passed  # an error after the last test is no full pass


def test_job_validation():
    with pytest.raises(ValueError, match="at least one test"):
        Job("pass")
    with pytest.raises(ValueError, match="not both"):
        Job("pass", asserts=("1",), stdio=(("", ""),))
    with pytest.raises(ValueError, match="not a Python expression"):
        run(Job("pass", calls=(("add(", ("1",)),)))


# --- hostile programs: each contained, scored as failed/bug ------------------------------------------

HOSTILE_CASES = [
    # infinite loop: killed at the deadline
    ("timeout", "while True:\n    pass\n", {}),
    # infinite loop in a stdin/stdout test
    ("timeout", "while True:\n    pass\n", {"calls": (), "stdio": (("1", "1"), ("2", "2"))}),
    # sleeping forever (no CPU use): the wall-clock deadline, not RLIMIT_CPU, ends it
    ("timeout", "import time\ntime.sleep(1000)\n", {}),
    # memory bomb at once
    ("memory", "blob = bytearray(8 << 30)\n", {}),
    # memory bomb growing step by step; zeroing 512 MiB can take over a second on a loaded 2-core machine,
    # so the deadline is wider here: the status must come from the memory limit, not from the clock
    ("memory", "hoard = []\nwhile True:\n    hoard.append(bytearray(16 << 20))\n", {"time_limit": 5.0}),
    # gigabytes of output
    ("output_limit", "while True:\n    print('x' * 100000)\n", {}),
    # gigabytes of output from a stdin/stdout program
    (
        "output_limit",
        "import sys\nwhile True:\n    sys.stdout.write('y' * 100000)\n",
        {"calls": (), "stdio": (("", ""),)},
    ),
    # gigabytes into a file in its own directory: RLIMIT_FSIZE makes the write fail
    (
        "runtime_error",
        "with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * (1 << 20))\n",
        {},
    ),
    # exits with success before the tests run
    ("runtime_error", "import sys\nsys.exit(0)\n", {}),
    # leaves the process without a trace before the tests run
    ("runtime_error", "import os\nos._exit(0)\n", {}),
    # exits from inside the tested function
    ("runtime_error", "import os\ndef add(a, b):\n    os._exit(0)\n", {}),
    # sys.exit inside the tested function
    ("runtime_error", "import sys\ndef add(a, b):\n    sys.exit(0)\n", {}),
    # os._exit inside a HumanEval-style check
    (
        "runtime_error",
        "import os\ndef f():\n    os._exit(0)\n",
        {"calls": (), "asserts": ("assert f() == 1",)},
    ),
    # kills itself with SIGKILL
    ("killed", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", {}),
]


@pytest.mark.parametrize("status, code, fields", HOSTILE_CASES)
def test_hostile_program_contained(status, code, fields):
    started = time.monotonic()
    result = run(job(code, **fields))
    assert result.status == status, result.detail
    assert result.passed == 0 and result.has_bug
    assert time.monotonic() - started < 8  # contained within its limits, not the test's patience
    assert_no_leaks()


SPOOFING_CASES = [
    # prints lines that look like passing tests and like the supervisor's own report
    (
        'import json\nprint("PASSED 2/2")\nprint(json.dumps({"status": "ok", "passed": 2, "total": 2}))\n'
        "def add(a, b):\n    return -999\n"
    ),
    # patches the builtins the harness might use
    (
        "import builtins\nbuiltins.repr = lambda value: '5'\nbuiltins.eval = lambda *a, **k: 5\n"
        "def add(a, b):\n    return -999\n"
    ),
    # returns an object equal to everything that prints as the right answer
    (
        "class Always(int):\n    def __eq__(self, other):\n        return True\n    def __repr__(self):\n"
        "        return '5' if Always.calls == 0 else '0'\n    calls = 0\n"
        "def add(a, b):\n    result = Always(); Always.calls += 1\n    return result\n"
    ),
    # writes guessed records into the harness's channel
    (
        "import os\nfor fd in range(3, 10):\n    try:\n"
        "        os.write(fd, b'0 0 ok 0\\n0 1 ok 0\\n0 -1 done 0\\n')\n"
        "    except OSError:\n        pass\ndef add(a, b):\n    return -999\n"
    ),
    # replaces os._exit so the harness would fall back into supervisor code
    ("import os\nos._exit = lambda code: None\ndef add(a, b):\n    return -999\n"),
    # signals its parent (the supervisor), every pid it can see, and its process group
    (
        "import os, signal\n"
        "for target in [os.getppid(), 1] + [int(p) for p in os.listdir('/proc') if p.isdigit()]:\n"
        "    for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):\n"
        "        try:\n            os.kill(target, sig)\n"
        "        except OSError:\n            pass\ndef add(a, b):\n    return -999\n"
    ),
]


@pytest.mark.parametrize("code", SPOOFING_CASES)
def test_spoofing_never_scores_a_pass(code):
    result = run(job(code))
    assert result.passed == 0 and not result.all_passed, result
    assert run(job("def add(a, b):\n    return a + b\n")).all_passed  # the sandbox still works afterwards


def test_assertion_channel_rejects_unstamped_records():
    forged = "import os\nos.write(3, b'0 0 ok 0\\n')\ndef f():\n    return 2\n"
    result = run(job(forged, calls=(), asserts=("assert f() == 1",)))
    assert result.passed == 0


def test_kill_everything_leaves_parent_alive():
    code = "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n"
    if isolation_mode() == "none" and os.geteuid() != 0:
        pytest.skip("without namespaces or a separate uid, kill(-1) would reach our own processes")
    result = run(job(code))
    assert result.passed == 0 and result.has_bug
    assert os.getpid() > 0 and run(job("def add(a, b):\n    return a + b\n")).all_passed


def test_fork_bomb_contained():
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    result = run(job(bomb, time_limit=0.5))
    assert result.status == "timeout" and result.passed == 0
    assert_no_leaks()


def test_process_limit_holds():
    code = """
    import os, time
    def spawned():
        count = 0
        for _ in range(60):
            try:
                if os.fork() == 0:
                    time.sleep(30)
                    os._exit(0)
                count += 1
            except OSError:
                break
        return count
    """
    result = run(job(code, calls=(), asserts=("assert spawned() < 16",), max_processes=8))
    assert result.all_passed, result.detail
    assert_no_leaks()


def test_daemonised_children_are_killed():
    code = """
    import os, sys
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:  # the sandbox has no /bin: its own interpreter sleeps instead
            os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)'])
        os._exit(0)
    def add(a, b):
        return a + b
    """
    assert run(job(code)).all_passed
    assert_no_leaks()


@needs_namespaces
def test_no_network_even_past_the_audit_hook():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted, finished = [], threading.Event()

    def accept():
        while not finished.is_set():
            try:
                accepted.append(server.accept())
            except OSError:
                continue

    thread = threading.Thread(target=accept)
    thread.start()
    code = f"""
    import ctypes, socket, struct
    def attempts():
        reached = []
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=1)
            reached.append("python")
        except OSError:
            pass
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.socket(2, 1, 0)  # raw libc calls: no audit hook sees them
        address = struct.pack("<HH4s8x", 2, socket.htons({port}), bytes([127, 0, 0, 1]))
        if fd >= 0 and libc.connect(fd, address, len(address)) == 0:
            reached.append("libc")
        return reached
    """
    try:
        result = run(job(code, calls=(("attempts()", ("[]",)),), time_limit=3))
    finally:
        finished.set()
        thread.join()
        server.close()
    assert result.all_passed, result.detail
    assert accepted == []


@needs_namespaces
def test_writes_outside_its_directory_fail(tmp_path):
    # World-writable targets, so that only the sandbox (not file permissions) can stop the writes.
    shared = Path(tempfile.mkdtemp(prefix="gdpo-canary-"))
    shared.chmod(0o777)
    canary = shared / "canary.txt"
    canary.write_text("keep me")
    canary.chmod(0o666)
    targets = [
        str(shared / "new.txt"),
        str(canary),
        "/tmp/gdpo-sandbox-escape",
        "/var/tmp/gdpo-sandbox-escape",
        str(Path.cwd() / "gdpo-sandbox-escape"),
    ]
    code = f"""
    import os, shutil
    def escaped():
        done = []
        for path in {targets!r}:
            try:
                with open(path, "w") as handle:
                    handle.write("pwned")
                done.append(path)
            except OSError:
                pass
        for action in (lambda: os.remove({str(canary)!r}), lambda: shutil.rmtree({str(shared)!r})):
            try:
                action()
                done.append("deleted")
            except OSError:
                pass
        return done
    def home_works():
        with open(os.path.join(os.environ["HOME"], "scratch.txt"), "w") as handle:
            handle.write("fine")
        return os.getcwd() == os.environ["HOME"] == os.environ["TMPDIR"]
    """
    try:
        result = run(job(code, calls=(("escaped()", ("[]",)), ("home_works()", ("True",)))))
        assert result.all_passed, result.detail
        assert canary.read_text() == "keep me" and sorted(p.name for p in shared.iterdir()) == ["canary.txt"]
        assert not any(Path(p).exists() for p in targets[2:])
    finally:
        for path in shared.iterdir():
            path.unlink()
        shared.rmdir()


def test_parent_environment_invisible(monkeypatch):
    secret = secrets.token_hex(8)
    monkeypatch.setenv("GDPO_SANDBOX_SECRET", secret)
    code = f"""
    import os
    def leaked():
        seen = repr(dict(os.environ)).encode()
        for pid in [p for p in os.listdir("/proc") if p.isdigit()] + ["self", str(os.getppid())]:
            try:
                with open(f"/proc/{{pid}}/environ", "rb") as handle:
                    seen += handle.read()
            except OSError:
                pass
        return b"GDPO_SANDBOX_SECRET" in seen or {secret!r}.encode() in seen
    def environment():
        return sorted(os.environ)
    """
    result = run(
        job(
            code, calls=(("leaked()", ("False",)), ("environment()", ("['HOME', 'LANG', 'PATH', 'TMPDIR']",)))
        )
    )
    assert result.all_passed, result.detail


def test_many_concurrent_programs_leave_nothing_behind():
    own_dirs = f"gdpo-sandbox-{os.getpid()}-*"
    before = set(Path(tempfile.gettempdir()).glob(own_dirs))
    programs = [
        "def add(a, b):\n    return a + b\n",
        "while True:\n    pass\n",
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
        (
            "import os, sys\nif os.fork() == 0:\n    os.setsid()\n"
            "    os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            "def add(a, b):\n    return a + b\n"
        ),
        "print('z' * (1 << 22))\n",
        "def add(a, b)\n",
    ]
    jobs = [job(code, time_limit=0.5) for code in programs * 3]
    results = run_many(jobs, max_workers=6)
    assert [r.status for r in results[:6]] == [
        "ok",
        "timeout",
        "timeout",
        "ok",
        "output_limit",
        "compile_error",
    ]
    assert [r.status for r in results] == [r.status for r in results[:6]] * 3
    assert_no_leaks()
    assert set(Path(tempfile.gettempdir()).glob(own_dirs)) == before


def test_leak_detector_finds_tagged_and_sandbox_uid_processes():
    import subprocess
    import sys

    from gdpo.tasks.code import sandbox

    tagged = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)", f"gdpo-sandbox:{os.getpid()}"]
    )
    untagged = None
    try:
        if os.geteuid() == 0:  # an exec'd child of a sandbox keeps only its uid
            uid = (1 << 30) + 12345
            sandbox._issued_uids.append(uid)
            untagged = subprocess.Popen(
                ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sleep", "30"]
            )
        deadline = time.monotonic() + 5
        expected = {tagged.pid} | ({untagged.pid} if untagged else set())
        while not expected <= set(sandbox_processes(owner=os.getpid())) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert expected <= set(sandbox_processes(owner=os.getpid()))
    finally:
        for process in (tagged, untagged):
            if process is not None:
                process.kill()
                process.wait()
        sandbox._issued_uids.clear()


def test_without_namespaces_verdicts_and_limits_still_hold(monkeypatch):
    """The mode a machine without unshare or user namespaces gets: weaker isolation, same verdicts."""
    from gdpo.tasks.code import sandbox

    monkeypatch.setattr(sandbox, "isolation_mode", lambda: "none")
    balloon = (
        "import os, time\nheld = []\nfor _ in range(64):\n    fd = os.memfd_create('m')\n"
        "    os.write(fd, b'm' * (8 << 20))\n    held.append(fd)\ntime.sleep(5)\n"
    )
    jobs = [
        job("def add(a, b):\n    return a + b\n"),
        job("def add(a, b):\n    return a * b\n"),
        job("while True:\n    pass\n", time_limit=0.5),
        job(balloon, memory_limit_mb=256, time_limit=8.0),
    ]
    results = run_many(jobs, max_workers=2)
    assert [(r.status, r.passed) for r in results] == [("ok", 2), ("ok", 0), ("timeout", 0), ("memory", 0)]
    assert "the runner's own" in results[2].detail  # says what it could count
    assert_no_leaks()


def test_a_sandbox_that_cannot_be_sealed_is_an_error_naming_the_fix(monkeypatch, tmp_path):
    from gdpo.tasks.code import sandbox

    if sandbox.isolation_mode() == "none":
        pytest.skip("no namespaces here: nothing to seal")
    refusing = tmp_path / "refusing_supervisor.py"  # a supervisor whose mounts the machine refuses
    report = {"sandbox_error": "OSError: mount refused"}
    refusing.write_text(f"import marshal, sys\nsys.stdout.buffer.write(marshal.dumps({report!r}))\n")
    refusing.chmod(0o644)
    tmp_path.chmod(0o755)
    monkeypatch.setattr(sandbox, "SUPERVISOR", refusing)
    with pytest.raises(RuntimeError, match="cannot isolate programs in mode.*mount refused.*ISOLATION=none"):
        sandbox._isolation_mode.__wrapped__("auto")
