"""Fetching a task's reference data from where it is published, refusing clearly when that
place cannot be reached (offline machines, ``HF_HUB_OFFLINE=1``): never a partial silent copy.

``autorl reference download`` calls a task's ``download(dest)``; tasks use these helpers.
Nothing here runs during a run: a run reads what was fetched, through ``data_path``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from autorl.errors import ConfigError


def hub_dataset(repo_id: str, dest: Path, patterns: Sequence[str], *, who: str) -> Path:
    """The files of a Hugging Face hub data set matching ``patterns``, into ``dest``."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise ConfigError(
            f"{who}: fetching {repo_id} needs huggingface_hub", hint="pip install huggingface_hub"
        ) from None
    dest.mkdir(parents=True, exist_ok=True)
    try:
        snapshot_download(
            repo_id=repo_id, repo_type="dataset", allow_patterns=list(patterns), local_dir=dest
        )
    except Exception as exc:  # offline mode, no route, gated repo, HTTP error: all say the same
        raise ConfigError(
            f"{who}: cannot fetch data set {repo_id} from the Hugging Face hub: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
            hint=f"run where huggingface.co is reachable (HF_HUB_OFFLINE unset), or put the "
            f"files of {repo_id} ({', '.join(patterns)}) in {dest} by hand; see docs/reference.md",
        ) from None
    if not any(p.is_file() for p in dest.rglob("*")):
        raise ConfigError(
            f"{who}: data set {repo_id} had no file matching {', '.join(patterns)}",
            hint="check the data set's files on the hub; see docs/reference.md",
        )
    return dest


def command(argv: Sequence[str], dest: Path, *, who: str, timeout: float = 3600) -> Path:
    """Run a data set's own downloader (``alfworld-download``) into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"{who}: {argv[0]} could not run: {exc}") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise ConfigError(
            f"{who}: {argv[0]} failed (exit {done.returncode}): {tail[0][:300]}",
            hint="run where the data set's host is reachable, or fetch it by hand; "
            "see docs/reference.md",
        )
    return dest
