"""A single-node SLURM cluster on localhost (munge + slurmctld + slurmd), for testing the SLURM profile.

No accounting and no cgroups: job status comes from ``squeue`` (``MinJobAge`` keeps finished jobs visible
for 10 minutes). Every daemon runs from a private directory with its own munge socket, ports and PID
files, and :meth:`LocalSlurmCluster.stop` stops exactly the daemons it started, by PID.

Jobs that run ``srun`` also need the config at SLURM's default path ``/etc/slurm/slurm.conf`` (with its
``gres.conf``): Snakemake's job-step executor strips every ``SLURM_*`` variable, ``SLURM_CONF`` included,
before the ``srun`` inside a job, which then only finds the default path. That path is one per machine, and
two clusters may run at once (one per pytest-xdist worker), so a cluster puts its config there only inside
:meth:`LocalSlurmCluster.active`, which holds a machine-wide file lock until it removes it again: a second
cluster's jobs would otherwise run ``srun`` against the first cluster's daemons, and fail. An existing config
there that this module did not write is never replaced.

    cluster = LocalSlurmCluster(Path("/tmp/slurm-test"))
    cluster.start()
    with cluster.active():
        subprocess.run(["sbatch", "--wrap", "srun hostname"], env={**os.environ, **cluster.environment()})
    cluster.stop()
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
SYSTEM_CONFIG = Path("/etc/slurm/slurm.conf")
SYSTEM_GRES_CONFIG = SYSTEM_CONFIG.parent / "gres.conf"
_MARKER = "# written by the suite's tests (tests/local_slurm.py); removed when its cluster is no longer active\n"
#: Held while a cluster's config is at SYSTEM_CONFIG: one active cluster per machine, across processes.
SYSTEM_CONFIG_LOCK = Path("/tmp/gdpo-tests-slurm-conf.lock")
DEBIAN_PACKAGES = ("slurm-wlm", "munge")


def unavailable_reason() -> str | None:
    """Why a local cluster cannot run here (None if it can): the daemons must run as root."""
    if os.geteuid() != 0:
        return "starting munged, slurmctld and slurmd needs root"
    missing = [d for d in DAEMONS if shutil.which(d) is None and not Path(f"/usr/sbin/{d}").exists()]
    if missing and shutil.which("apt-get") is None:
        return f"{', '.join(missing)} not installed and apt-get is not available to install {' '.join(DEBIAN_PACKAGES)}"
    return None


def install_packages(timeout: float = 900) -> None:
    """Install Debian's slurm-wlm and munge if a daemon is missing (root and apt-get required)."""
    if all(shutil.which(d) or Path(f"/usr/sbin/{d}").exists() for d in DAEMONS):
        return
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", *DEBIAN_PACKAGES]
    if subprocess.run(install, env=environment, capture_output=True, timeout=timeout).returncode != 0:
        # A fresh machine may have no package lists yet.
        subprocess.run(["apt-get", "update", "-q"], check=True, env=environment, capture_output=True, timeout=timeout)
        subprocess.run(install, check=True, env=environment, capture_output=True, timeout=timeout)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _daemon(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


#: Partition of CPU jobs (the default, limited to this machine's real CPUs) and of GPU jobs; the names
#: profiles/slurm/config.yaml ships with.
CPU_PARTITION, GPU_PARTITION = "debug", "gpu"


class LocalSlurmCluster:
    """munge + slurmctld + slurmd on this host, configured under ``root``.

    The node may claim more than the machine has (``SlurmdParameters=config_overrides``): an 8-GPU node with
    GPUs that exist only as a count (GRES without device files, ``gres.conf`` ``Name=gpu Count=N``), so SLURM
    schedules GPU jobs with their real requests. Jobs on such a node see no CUDA device.

    Args:
        root: private directory for the config, keys, sockets, state, logs and PID files.
        cpus: CPUs the node offers (default: all of this machine's). The CPU partition uses at most this
            machine's real CPUs per node; the GPU partition all of them.
        memory_mb: memory the node offers (default: 80 % of this machine's).
        gpus: GPUs the node claims (GRES gpu; 0: none, and no GPU partition limits apply).
    """

    def __init__(self, root: Path, cpus: int | None = None, memory_mb: int | None = None, gpus: int = 0):
        self.root = Path(root)
        self.real_cpus = os.cpu_count() or 1
        self.cpus = cpus or self.real_cpus
        total_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
        self.memory_mb = memory_mb or int(total_mb * 0.8)
        self.gpus = gpus
        self.hostname = socket.gethostname().split(".")[0]
        self.config_path = self.root / "slurm.conf"
        self.munge_socket = self.root / "munge" / "munge.sock"
        self._pid_files = {
            "munged": self.root / "munge" / "munged.pid",
            "slurmctld": self.root / "slurmctld.pid",
            "slurmd": self.root / "slurmd.pid",
        }
        self.pids: dict[str, int] = {}

    def environment(self) -> dict[str, str]:
        """Variables that point SLURM's commands (sbatch, squeue, …) at this cluster."""
        return {"SLURM_CONF": str(self.config_path)}

    def _write_config(self) -> None:
        for folder in ("munge", "state", "spool", "logs"):
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        key = self.root / "munge" / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o600)
        self.config_path.write_text(
            _MARKER + "\n".join(
                [
                    "ClusterName=gdpolocal",
                    f"SlurmctldHost={self.hostname}",
                    "SlurmUser=root",
                    "SlurmdUser=root",
                    "AuthType=auth/munge",
                    f"AuthInfo=socket={self.munge_socket}",
                    "CredType=cred/munge",
                    "MpiDefault=none",
                    # No cgroups: processes are tracked through /proc, tasks are not confined.
                    "ProctrackType=proctrack/linuxproc",
                    "TaskPlugin=task/none",
                    "ReturnToService=2",
                    "SchedulerType=sched/backfill",
                    "SelectType=select/cons_tres",
                    "SelectTypeParameters=CR_Core_Memory",
                    f"StateSaveLocation={self.root / 'state'}",
                    f"SlurmdSpoolDir={self.root / 'spool'}",
                    f"SlurmctldPidFile={self._pid_files['slurmctld']}",
                    f"SlurmdPidFile={self._pid_files['slurmd']}",
                    f"SlurmctldLogFile={self.root / 'logs' / 'slurmctld.log'}",
                    f"SlurmdLogFile={self.root / 'logs' / 'slurmd.log'}",
                    f"SlurmctldPort={_free_port()}",
                    f"SlurmdPort={_free_port()}",
                    # No accounting: sacct has nothing to say; squeue must know finished jobs long enough.
                    "AccountingStorageType=accounting_storage/none",
                    "JobAcctGatherType=jobacct_gather/none",
                    "JobCompType=jobcomp/none",
                    "MinJobAge=600",
                    # The node's CPUs, memory and GPUs as configured, not as detected.
                    "SlurmdParameters=config_overrides",
                    *(["GresTypes=gpu"] if self.gpus else []),
                    f"NodeName={self.hostname} CPUs={self.cpus} RealMemory={self.memory_mb}"
                    + (f" Gres=gpu:{self.gpus}" if self.gpus else "") + " State=UNKNOWN",
                    f"PartitionName={CPU_PARTITION} Nodes={self.hostname} Default=YES MaxTime=INFINITE "
                    f"MaxCPUsPerNode={min(self.cpus, self.real_cpus)} State=UP",
                    f"PartitionName={GPU_PARTITION} Nodes={self.hostname} MaxTime=INFINITE State=UP",
                    "",
                ]
            ),
            encoding="utf-8",
        )
        # GPUs that are only a count: nothing detected, no GPU behind them. slurmd (22.05) drops a GPU without
        # a File ("Removing file-less GPU") and wants a character device there, so each is a link to
        # /dev/null. slurmd reads gres.conf beside slurm.conf.
        gres = ""
        if self.gpus:
            (self.root / "gpus").mkdir(exist_ok=True)
            for index in range(self.gpus):
                link = self.root / "gpus" / f"gpu{index}"
                if not link.is_symlink():
                    link.symlink_to("/dev/null")
            gres = f"AutoDetect=off\nName=gpu File={self.root / 'gpus'}/gpu[0-{self.gpus - 1}]\n"
        (self.root / "gres.conf").write_text(_MARKER + gres, encoding="utf-8")

    def start(self, timeout: float = 60) -> None:
        """Start the three daemons and wait until the node is idle; stops them again on failure."""
        reason = unavailable_reason()
        if reason:
            raise RuntimeError(f"cannot start a local SLURM cluster: {reason}")
        _refuse_foreign_system_config()
        self._write_config()
        munge_dir = self.root / "munge"
        commands = {
            "munged": [_daemon("munged"), f"--socket={self.munge_socket}", f"--key-file={munge_dir / 'munge.key'}",
                       f"--pid-file={self._pid_files['munged']}", f"--log-file={munge_dir / 'munged.log'}",
                       f"--seed-file={munge_dir / 'munged.seed'}", "--force"],
            "slurmctld": [_daemon("slurmctld"), "-f", str(self.config_path)],
            "slurmd": [_daemon("slurmd"), "-f", str(self.config_path)],
        }
        try:
            for name, command in commands.items():
                subprocess.run(command, check=True, capture_output=True, timeout=30,
                               env={**os.environ, **self.environment()})
                self.pids[name] = self._wait_for_pid(name, timeout)
            self._wait_until_idle(timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_for_pid(self, name: str, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                return int(self._pid_files[name].read_text().strip())
            except (OSError, ValueError):
                time.sleep(0.1)
        raise RuntimeError(f"{name} did not write its PID file {self._pid_files[name]}; see {self.root}")

    def _wait_until_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            result = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True,
                                    env={**os.environ, **self.environment()}, timeout=30)
            state = result.stdout.strip()
            if set(state.split()) == {"idle"}:  # one line per partition
                return
            time.sleep(0.5)
        raise RuntimeError(f"the node did not become idle (sinfo says {state!r}); logs in {self.root / 'logs'}")

    def stop(self, timeout: float = 20) -> None:
        """Stop the daemons this object started (SIGTERM, then SIGKILL), in reverse order."""
        for name in reversed(DAEMONS):
            pid = self.pids.pop(name, None)
            if pid is None:
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.1)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)

    @contextmanager
    def active(self, timeout: float = 3600) -> Iterator[LocalSlurmCluster]:
        """This cluster's config at SLURM's default path while the block runs, under a machine-wide lock.

        Waits (at most ``timeout`` seconds) while another cluster is active; removes the files on the way out.
        """
        from filelock import FileLock

        with FileLock(str(SYSTEM_CONFIG_LOCK), timeout=timeout):
            _refuse_foreign_system_config()
            SYSTEM_CONFIG.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.config_path, SYSTEM_CONFIG)
            shutil.copyfile(self.root / "gres.conf", SYSTEM_GRES_CONFIG)
            try:
                yield self
            finally:
                for system_file in (SYSTEM_CONFIG, SYSTEM_GRES_CONFIG):
                    if system_file.exists() and system_file.read_text(errors="replace").startswith(_MARKER):
                        system_file.unlink()


def _refuse_foreign_system_config() -> None:
    for system_file in (SYSTEM_CONFIG, SYSTEM_GRES_CONFIG):
        if system_file.exists() and not system_file.read_text(errors="replace").startswith(_MARKER):
            raise RuntimeError(f"{system_file} exists and was not written by this harness; not replacing it.")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie child still answers kill(0); its state in /proc says it has exited.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False
