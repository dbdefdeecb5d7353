"""A throwaway single-node SLURM: munged, slurmctld and slurmd under one temporary folder.

    python scripts/slurm/local_cluster.py -- <command ...>   # start, run the command, stop
    python scripts/slurm/local_cluster.py --check            # can a cluster start here? why not?

The command runs with SLURM_CONF pointing at the cluster's own slurm.conf, so sbatch, squeue,
scancel, sinfo and hydra-submitit-launcher talk to it and to nothing else; its one partition is
printed (and exported as LOCAL_SLURM_PARTITION). Everything it writes (munge key, socket and
seed; slurm.conf; controller state; spool; logs; pid files) lives under the folder, and every
daemon it starts is stopped again, also when the command or the start fails: the jobs are
cancelled first (slurmd's job steps run on after slurmd itself is gone), then slurmd, slurmctld
and munged, each by the pid of the process this module started. Each daemon also gets SIGTERM
from the kernel if the process that started it dies (PR_SET_PDEATHSIG), so a killed test run
leaves none behind either.

What it needs: Linux, root (slurmd starts every job as its submitting user) and Debian's
`slurm-wlm` and `munge` packages (Slurm 22.05: `apt-get install slurm-wlm munge`). Where any of
that is missing, `ClusterUnavailableError` says which, in one line.

The configuration is the smallest that runs real jobs: munge authentication; process tracking
and task launch without cgroups (proctrack/linuxproc, task/none), since containers and CI
machines rarely delegate cgroups; one node as `slurmd -C` describes this machine; CPUs as the
consumable resource, so two one-CPU jobs run side by side; no accounting storage (slurmdbd
needs a database), so `sacct` answers with an error, as on clusters that keep no accounting.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PARTITION = "cpu"
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("mungekey", "sbatch", "squeue", "scancel", "sinfo", "srun", "scontrol")
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 40.0
INSTALL = "apt-get install slurm-wlm munge"


class ClusterUnavailableError(RuntimeError):
    """SLURM cannot start on this machine; the message says why, in one line."""


def _tool(name: str) -> str | None:
    """The path of a SLURM / munge program (the daemons live in /usr/sbin, off a user's PATH)."""
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def unavailable_reason() -> str | None:
    """Why a cluster cannot start here (None: it may; starting it is the real test)."""
    if not sys.platform.startswith("linux"):
        return f"SLURM runs on Linux only, this is {sys.platform}"
    missing = [name for name in (*DAEMONS, *CLIENTS) if _tool(name) is None]
    if missing:
        return f"{', '.join(missing)} not installed ({INSTALL})"
    if os.geteuid() != 0:
        return "slurmd must run as root (it starts each job as its submitting user)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """In the daemon's process, before exec: SIGTERM when the process that started it dies."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _node_line() -> str:
    """This machine as slurmd sees it (CPUs, sockets, cores, memory): a node that claims more
    than it has is drained at registration."""
    slurmd = _tool("slurmd")
    assert slurmd is not None
    out = subprocess.run([slurmd, "-C"], capture_output=True, text=True, timeout=30)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("NodeName=")), None)
    if out.returncode != 0 or line is None:
        text = (out.stderr or out.stdout).strip()[:200]
        raise ClusterUnavailableError(f"slurmd -C failed: {text}")
    return line


class LocalCluster:
    """One single-node SLURM under `root` (created; None: a new temporary folder, removed at
    stop). Use as a context manager, or call start() and stop() (stop also after a failure)."""

    def __init__(self, root: Path | None = None, partition: str = PARTITION) -> None:
        self._own_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="flashsac_slurm_")) if root is None else root
        self.partition = partition
        self.conf = self.root / "slurm.conf"
        self.logs = self.root / "log"
        self.node = ""
        self._daemons: list[tuple[str, subprocess.Popen[bytes]]] = []

    # ------------------------------------------------------------------ what clients need
    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """`base` (default: this process's environment) with SLURM_CONF at this cluster and the
        SLURM programs on PATH."""
        env = dict(os.environ if base is None else base)
        env["SLURM_CONF"] = str(self.conf)
        env["LOCAL_SLURM_PARTITION"] = self.partition
        path = env.get("PATH", "")
        if "/usr/sbin" not in path.split(os.pathsep):
            env["PATH"] = os.pathsep.join(p for p in (path, "/usr/sbin") if p)
        return env

    def client(self, *args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        """A SLURM client command (squeue, scancel, ...) against this cluster."""
        return subprocess.run(
            list(args), env=self.env(), capture_output=True, text=True, timeout=timeout
        )

    def log_tail(self, lines: int = 15) -> str:
        """The last lines of every daemon log (what a failed start shows)."""
        parts = []
        for log in sorted(self.logs.glob("*.log")):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {log.name}\n" + "\n".join(text))
        return "\n".join(parts)

    # ------------------------------------------------------------------ start / stop
    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start munged, slurmctld and slurmd and wait until the node takes jobs. Raises
        ClusterUnavailableError (every daemon already stopped again) when that fails."""
        reason = unavailable_reason()
        if reason:
            self.stop()  # removes the temporary folder
            raise ClusterUnavailableError(reason)
        try:
            self._write_files()
            self._start_munge()
            self._spawn("slurmctld", [_tool("slurmctld"), "-D", "-f", str(self.conf)])
            self._spawn("slurmd", [_tool("slurmd"), "-D", "-f", str(self.conf), "-N", self.node])
            self._wait_until_idle()
        except BaseException as err:
            tail = self.log_tail()
            self.stop()
            if isinstance(err, ClusterUnavailableError):
                raise ClusterUnavailableError(f"{err}\n{tail}".strip()) from None
            raise

    def stop(self) -> None:
        """Cancel every job of this cluster, then stop the daemons this object started (newest
        first), each by its pid: SIGTERM, then SIGKILL after a grace period."""
        if any(name == "slurmctld" and p.poll() is None for name, p in self._daemons):
            self._cancel_all_jobs()
        while self._daemons:
            name, proc = self._daemons.pop()
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=STOP_TIMEOUT_S / 2)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=STOP_TIMEOUT_S / 2)
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def _cancel_all_jobs(self) -> None:
        """Every job of this cluster (its own controller's: nobody else's) ends before slurmd
        stops; a job step left running would outlive the cluster."""
        self.client("scancel", "--full", f"--partition={self.partition}")
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while time.monotonic() < deadline:
            out = self.client("squeue", "-h", "-o", "%i")
            if out.returncode != 0 or not out.stdout.strip():
                return
            time.sleep(0.5)

    # ------------------------------------------------------------------ the pieces
    def _write_files(self) -> None:
        # munged wants its socket's folders open to all (clients of any user connect) and
        # writable by none but root; the rest stays private.
        self.root.chmod(0o755)
        for sub, mode in (("munge", 0o755), ("state", 0o700), ("spool", 0o755), ("log", 0o755)):
            (self.root / sub).mkdir(exist_ok=True)
            (self.root / sub).chmod(mode)
        (self.root / "run").mkdir(exist_ok=True)
        node = _node_line()
        self.node = node.split()[0].split("=", 1)[1]
        # UpTime is a reading, not a node property; slurm.conf does not take it.
        node = " ".join(f for f in node.split() if not f.startswith("UpTime="))
        r = self.root
        (r / "plugstack.conf").write_text("")  # no SPANK plugins (not the system's)
        host = socket.gethostname().split(".")[0]
        self.conf.write_text(
            "\n".join(
                [
                    "ClusterName=flashsac-local",
                    f"SlurmctldHost={host}(127.0.0.1)",
                    f"SlurmctldPort={_free_port()}",
                    f"SlurmdPort={_free_port()}",
                    "SlurmUser=root",
                    "SlurmdUser=root",
                    "AuthType=auth/munge",
                    "CredType=cred/munge",
                    f"AuthInfo=socket={r / 'munge' / 'munge.socket'}",
                    "ProctrackType=proctrack/linuxproc",
                    "TaskPlugin=task/none",
                    "JobAcctGatherType=jobacct_gather/none",
                    "AccountingStorageType=accounting_storage/none",
                    "SchedulerType=sched/backfill",
                    "SelectType=select/cons_tres",
                    "SelectTypeParameters=CR_CPU",
                    "MpiDefault=none",
                    "ReturnToService=2",
                    # Jobs cancelled with a signal get this long to write their checkpoint
                    # before SIGKILL (a cluster's own value is often 30-120 s).
                    "KillWait=30",
                    f"PlugStackConfig={r / 'plugstack.conf'}",
                    f"StateSaveLocation={r / 'state'}",
                    f"SlurmdSpoolDir={r / 'spool'}",
                    f"SlurmctldPidFile={r / 'run' / 'slurmctld.pid'}",
                    f"SlurmdPidFile={r / 'run' / 'slurmd.pid'}",
                    f"SlurmctldLogFile={self.logs / 'slurmctld.log'}",
                    f"SlurmdLogFile={self.logs / 'slurmd.log'}",
                    f"{node} NodeAddr=127.0.0.1 State=UNKNOWN",
                    f"PartitionName={self.partition} Nodes={self.node} Default=YES "
                    "MaxTime=INFINITE State=UP",
                    "",
                ]
            )
        )

    def _start_munge(self) -> None:
        key = self.root / "munge" / "munge.key"
        made = subprocess.run(
            [_tool("mungekey"), "--create", f"--keyfile={key}"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if made.returncode != 0:
            raise ClusterUnavailableError(f"mungekey failed: {made.stderr.strip()[:200]}")
        m = self.root / "munge"
        cmd = [
            _tool("munged"),
            "--foreground",
            f"--socket={m / 'munge.socket'}",
            f"--key-file={key}",
            f"--pid-file={m / 'munged.pid'}",
            f"--seed-file={m / 'munged.seed'}",
            f"--log-file={self.logs / 'munged.log'}",
        ]
        self._spawn("munged", cmd)
        self._wait_for(lambda: (m / "munge.socket").exists(), "munged's socket")

    def _spawn(self, name: str, cmd: list[str | None]) -> None:
        out = open(self.logs / f"{name}.out", "wb")  # noqa: SIM115 - the daemon keeps it
        try:
            proc = subprocess.Popen(
                [str(c) for c in cmd],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env(),
                start_new_session=True,  # a Ctrl-C to the caller's group is not theirs
                preexec_fn=_die_with_parent,
            )
        finally:
            out.close()
        self._daemons.append((name, proc))

    def _wait_for(self, ready, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready():
            for name, proc in self._daemons:
                if proc.poll() is not None:
                    raise ClusterUnavailableError(f"{name} exited with status {proc.returncode}")
            if time.monotonic() > deadline:
                raise ClusterUnavailableError(f"{what} not ready after {START_TIMEOUT_S:.0f} s")
            time.sleep(0.2)

    def _wait_until_idle(self) -> None:
        def idle() -> bool:
            out = self.client("sinfo", "-h", "-o", "%T", f"--partition={self.partition}")
            return out.returncode == 0 and out.stdout.split() == ["idle"]

        self._wait_for(idle, f"node {self.node} (sinfo: idle)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="start and stop a cluster, say why")
    parser.add_argument("--root", type=Path, help="the folder (default: a new temporary one)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- command to run on it")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command and not args.check:
        parser.error("give a command after --, or --check")
    try:
        with LocalCluster(args.root) as cluster:
            print(f"local SLURM up: SLURM_CONF={cluster.conf} partition={cluster.partition}",
                  file=sys.stderr)  # fmt: skip
            if args.check:
                return 0
            return subprocess.run(command, env=cluster.env()).returncode
    except ClusterUnavailableError as err:
        print(f"local SLURM unavailable: {err}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    raise SystemExit(main())
