"""A throwaway JupyterLab server for the browser test: localhost, a free port, a random token, its
own config, runtime and settings folders (nothing read from or written to ~/.jupyter), stopped
through its REST API (which also shuts its kernels down) when the test is done."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# JupyterLab user settings: every cell in the DOM (no virtual scrolling, so a test can find any
# cell), no news or update checks (they would reach for the internet).
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}
SERVER_CONFIG = {
    "LabApp": {"news_url": None, "check_for_updates_class": "jupyterlab.NeverCheckForUpdate"},
    "ServerApp": {"open_browser": False},
}


@dataclass
class Lab:
    url: str  # http://127.0.0.1:<port>
    token: str
    log: Path

    def page(self, path: str, *query: str) -> str:
        """The address of `path` (e.g. "lab/tree/x.ipynb"), logging in with the token."""
        return f"{self.url}/{path}?{'&'.join([f'token={self.token}', *query])}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_lab(root: Path, home: Path, *, timeout: float = 180) -> Iterator[Lab]:
    """Serve `root` with `jupyter lab` (nbgrader's extensions load from this environment)."""
    dirs = {name: home / name for name in ("config", "runtime", "settings", "workspaces")}
    for folder in dirs.values():
        folder.mkdir(parents=True, exist_ok=True)
    (dirs["config"] / "jupyter_server_config.json").write_text(json.dumps(SERVER_CONFIG))
    for plugin, values in LAB_SETTINGS.items():
        path = dirs["settings"] / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(dirs["config"]),
        JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
        JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
        JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]),
    )
    port, token = free_port(), secrets.token_hex(16)
    lab = Lab(f"http://127.0.0.1:{port}", token, home / "lab.log")
    command = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
    ]  # fmt: skip
    with lab.log.open("w") as log:
        server = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_until_up(lab, server, timeout)
        yield lab
    finally:
        _stop(lab, server)


def _api(lab: Lab, path: str, method: str = "GET") -> bytes:
    request = urllib.request.Request(
        f"{lab.url}/api/{path}", method=method, headers={"Authorization": f"token {lab.token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read()


def _wait_until_up(lab: Lab, server: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"jupyter lab exited ({server.returncode}):\n{_tail(lab.log)}")
        with contextlib.suppress(OSError):
            _api(lab, "status")
            return
        time.sleep(0.5)
    raise RuntimeError(f"jupyter lab did not answer within {timeout:.0f} s:\n{_tail(lab.log)}")


def _stop(lab: Lab, server: subprocess.Popen) -> None:
    """Ask the server to shut down (it stops its kernels first); kill it if it does not."""
    with contextlib.suppress(OSError):
        _api(lab, "shutdown", method="POST")
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(timeout=10)


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
