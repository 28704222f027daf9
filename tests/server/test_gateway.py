"""Remote kernels (issue 9 §3, DESIGN §8): a ``jupyter server`` pointed at a kernel gateway with
``--gateway-url`` runs a workflow whose kernel lives in the gateway -- the extension asks the
server's session and kernel managers for kernels and has no code path for gateways.

Both run as real subprocesses (jupyter_server's ``GatewayClient`` is a singleton that would leak
into later in-process tests); the server is stopped before the gateway (JUPYTER-NOTES).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import urllib.error
from pathlib import Path

from tests.conftest import requires
from tests.server.test_restart import BIN, JupyterServer, free_port, http

KERNEL_GATEWAY = BIN / "jupyter-kernelgateway"

pytestmark = requires(
    KERNEL_GATEWAY.exists(), "jupyter_kernel_gateway is not installed (test extra)"
)


class KernelGateway:
    """A ``jupyter kernelgateway`` on loopback, listing its kernels, cwd = the server root."""

    def __init__(self, root: Path, home: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = home / "gateway.log"
        self.log = self.log_path.open("wb")
        env = {
            **os.environ,
            "KG_LIST_KERNELS": "True",
            "JUPYTER_CONFIG_DIR": str(home / "gateway-config"),
            "JUPYTER_RUNTIME_DIR": str(home / "gateway-runtime"),
        }
        self.process = subprocess.Popen(
            [
                str(KERNEL_GATEWAY),
                "--KernelGatewayApp.ip=127.0.0.1",
                f"--KernelGatewayApp.port={self.port}",
                "--KernelGatewayApp.port_retries=0",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=root,  # the gateway ignores KERNEL_WORKING_DIR: its kernels start here
        )

    def kernels(self) -> list[dict[str, object]]:
        """The gateway's own ``GET /api/kernels``."""
        code, body = http("GET", self.url + "/api/kernels", token=None)
        assert code == 200, body
        return list(body)

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log_path.read_text(errors="replace")
            try:
                self.kernels()
                return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        raise AssertionError("the kernel gateway did not answer in time")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def test_gateway_runs_the_workflow_kernel_remotely(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "server", root / "bp")
    gateway = KernelGateway(root, tmp_path)
    server: JupyterServer | None = None
    try:
        gateway.wait_ready()
        assert gateway.kernels() == []
        server = JupyterServer(
            root,
            tmp_path,
            f"--gateway-url={gateway.url}",
            f"--NotebookBccApp.store_path={tmp_path / 'store.sqlite'}",
        )
        server.wait_ready()
        started = server.start("remote.ipynb", "bp/quick.yaml")
        workflow_id = started["workflow_id"]
        done = server.wait_status(workflow_id, "completed", "failed", "waiting")
        assert done["run"]["status"] == "completed", done["run"]
        assert done["variables"].get("answer") is not None

        kernel_id = server.row(workflow_id)["kernel_id"]
        assert kernel_id
        remote = [kernel["id"] for kernel in gateway.kernels()]
        assert kernel_id in remote, "the workflow's kernel runs in the gateway"
        code, sessions = server.request("GET", "api/sessions")
        assert code == 200
        assert [s["kernel"]["id"] for s in sessions if s["path"] == "remote.ipynb"] == [kernel_id]
    finally:
        if server is not None:
            assert server.stop() is not None, "the server stopped before the gateway"
        gateway.stop()
