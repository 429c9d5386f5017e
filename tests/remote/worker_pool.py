"""A Beam worker pool (`apache_beam.runners.worker.worker_pool_main`) run from the wheel's venv:
the workers of a PortableRunner build with `--environment_type=EXTERNAL`, in processes that can
import `trajforge` only from the built wheel (the pool starts each worker as `python` on its
PATH, the venv's).

The launcher runs Beam's job service in its own process (`--job_endpoint=embed`: the Python
`LocalJobServicer`, no Java job server, nothing downloaded), which pickles the pipeline and
hands each stage to these workers over the Fn API, as Dataflow's runner v2 does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

POOL = "apache_beam.runners.worker.worker_pool_main"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


class WorkerPool:
    """The pool process; `portable_args()` are the Beam flags that send a build's work to it."""

    def __init__(self, python: Path, workdir: Path):
        self.port = free_port()
        self.log = workdir / "worker_pool.log"
        bin_dir = str(python.parent)
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": ""}
        env.pop("VIRTUAL_ENV", None)
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [str(python), "-m", POOL, f"--service_port={self.port}"],
                cwd=workdir,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its workers are its children: one group to end
            )
        self._wait_listening()

    def _wait_listening(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"worker pool exited:\n{self.log.read_text()}"
            with socket.socket() as sock:
                if sock.connect_ex(("localhost", self.port)) == 0:
                    return
            time.sleep(0.2)
        raise TimeoutError(f"worker pool not listening on {self.port}:\n{self.log.read_text()}")

    def portable_args(self) -> list[str]:
        return [
            "--runner=PortableRunner",
            "--job_endpoint=embed",
            "--environment_type=EXTERNAL",
            f"--environment_config=localhost:{self.port}",
        ]

    def workers_started(self) -> int:
        return self.log.read_text().count("Starting worker with command")

    def stop(self) -> None:
        """SIGINT lets the pool stop its workers (its atexit hook); the group kill is the
        fallback for a worker left running."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=15)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
