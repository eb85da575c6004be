"""The react agent's tools: shell, read_file, write_file, submit, check_budget.

Each returns ``(ok, text)``; text is what the model reads back, truncated to a head and a tail
so a noisy command cannot flood the context. Paths are relative to the workspace.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


def _fn(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


TOOL_SPECS = [
    _fn(
        "shell",
        "Run a bash command in the workspace (cwd = workspace) and get its exit code and output "
        "(stdout and stderr, truncated). Use it to inspect files, run training scripts, etc.",
        _schema(
            {
                "command": {"type": "string", "description": "The bash command line."},
                "timeout_s": {"type": "number", "description": "Kill it after this many s."},
            },
            ["command"],
        ),
    ),
    _fn(
        "read_file",
        "Read a text file (path relative to the workspace).",
        _schema({"path": {"type": "string"}}, ["path"]),
    ),
    _fn(
        "write_file",
        "Create or overwrite a text file (path relative to the workspace); parents are created.",
        _schema({"path": {"type": "string"}, "content": {"type": "string"}}, ["path", "content"]),
    ),
    _fn(
        "submit",
        "Submit a checkpoint directory (e.g. output/v1) to the grading API and wait for its "
        "score on the held-out split.",
        _schema({"model_path": {"type": "string"}}, ["model_path"]),
    ),
    _fn(
        "check_budget",
        "Time left, submissions used and driver tokens/cost spent.",
        _schema({}, []),
    ),
]


def truncate(text: str, limit: int) -> str:
    """Keep the head and the tail: errors usually sit at the end, context at the start."""
    if len(text) <= limit:
        return text
    half = max(1, limit // 2)
    cut = len(text) - 2 * half
    return f"{text[:half]}\n... [{cut} characters cut] ...\n{text[-half:]}"


class Tools:
    def __init__(
        self,
        *,
        workspace: Path,
        grader_url: str,
        gateway_url: str,
        token: str,
        command_timeout_s: float = 900.0,
        output_chars: int = 6000,
        submit_timeout_s: float = 1800.0,
    ) -> None:
        self.workspace = workspace
        self.grader_url = grader_url.rstrip("/")
        self.gateway_url = gateway_url.rstrip("/")
        self.headers = {"authorization": f"Bearer {token}"}
        self.command_timeout_s = command_timeout_s
        self.output_chars = output_chars
        self.submit_timeout_s = submit_timeout_s
        self.handlers: dict[str, Callable[..., tuple[bool, str]]] = {
            "shell": self.shell,
            "read_file": self.read_file,
            "write_file": self.write_file,
            "submit": self.submit,
            "check_budget": self.check_budget,
        }

    def run(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        handler = self.handlers.get(name)
        if handler is None:
            return False, f"unknown tool {name!r}; tools: {', '.join(self.handlers)}"
        try:
            ok, text = handler(**arguments)
        except TypeError as exc:
            return False, f"bad arguments for {name}: {exc}"
        except (OSError, httpx.HTTPError) as exc:
            return False, f"{name} failed: {type(exc).__name__}: {exc}"
        return ok, truncate(text, self.output_chars)

    def _path(self, path: str) -> Path:
        return (self.workspace / path).resolve()

    def shell(self, command: str, timeout_s: float | None = None) -> tuple[bool, str]:
        limit = min(float(timeout_s or self.command_timeout_s), self.command_timeout_s)
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=self.workspace,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            start_new_session=True,  # its own process group: a timeout kills its children too
        )
        try:
            out, _ = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            return False, f"timed out after {limit:g} s (killed)\n{out}"
        return proc.returncode == 0, f"exit code {proc.returncode}\n{out}"

    def read_file(self, path: str) -> tuple[bool, str]:
        return True, self._path(path).read_text(encoding="utf-8", errors="replace")

    def write_file(self, path: str, content: str) -> tuple[bool, str]:
        target = self._path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return True, f"wrote {len(content)} characters to {path}"

    def submit(self, model_path: str) -> tuple[bool, str]:
        r = httpx.post(
            f"{self.grader_url}/submit",
            json={"model_path": model_path, "wait": True},
            headers=self.headers,
            timeout=self.submit_timeout_s,
        )
        return r.status_code < 400, f"HTTP {r.status_code}\n{r.text}"

    def check_budget(self) -> tuple[bool, str]:
        grader = httpx.get(f"{self.grader_url}/budget", headers=self.headers, timeout=30)
        driver = httpx.get(f"{self.gateway_url}/autorl/budget", headers=self.headers, timeout=30)
        ok = grader.status_code == 200 and driver.status_code == 200
        return ok, json.dumps({"time_and_submissions": _json(grader), "driver": _json(driver)})


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text
