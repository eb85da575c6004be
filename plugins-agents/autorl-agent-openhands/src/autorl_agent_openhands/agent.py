"""The ``openhands`` agent: the OpenHands CLI headless against the run's gateway.

OpenHands 1.16 needs Python >= 3.12, so it gets its own virtual environment in the cache. It
reaches the model through litellm as an OpenAI-compatible endpoint (``LLM_*`` variables with
``--override-with-envs``). It ends only when the model calls its ``finish`` tool. Its public
skills are a ``git clone`` from GitHub on every run: the run's ``~/.gitconfig`` rewrites that
URL to a local path that does not exist, so the clone fails at once without a connection.
See ``docs/agents/openhands.md``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from autorl_agent_cli_common.adapter import CliAgent
from autorl_agent_cli_common.install import VenvTool
from autorl_agent_cli_common.trajectory import TrajectoryEvent

from autorl.types import AgentContext
from autorl_agent_openhands.events import parse_conversations

VERSION = "1.16.0"
TOOL = VenvTool(name="openhands", package="openhands", version=VERSION, binary="openhands")
TMUX_PREFIX = "autorl-tmux-"
MAX_TMUX_DIR = 80
"""tmux adds ``/tmux-UID/openhands``; a unix socket path holds at most 107 bytes."""
GITCONFIG = """# written by autorl: no fetch from GitHub during a run (OpenHands' public skills)
[url "file:///nonexistent/autorl-offline/github.com/"]
\tinsteadOf = https://github.com/
"""


def short_tmux_dir(home: Path) -> Path:
    """The run's tmux directory in /tmp when HOME's path is too long: one per HOME."""
    digest = hashlib.sha256(str(Path(home).resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"{TMUX_PREFIX}{digest}"


class OpenHandsAgent(CliAgent):
    """``openhands --headless --json --override-with-envs --always-approve -t PROMPT``."""

    name = "openhands"
    tool = TOOL
    ARGV = ("--headless", "--json", "--override-with-envs", "--always-approve", "-t", "{prompt}")
    ENV = {
        "LLM_MODEL": "openai/{model}",
        "LLM_BASE_URL": "{gateway}/v1",
        "LLM_API_KEY": "{token}",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENHANDS_SUPPRESS_BANNER": "1",
        "OPENHANDS_WORK_DIR": "{workspace}",
        # its terminal tool runs commands in a tmux server on the socket "openhands" in
        # $TMUX_TMPDIR (default /tmp/tmux-UID, shared by every run of the user): give each
        # run its own, short enough for a Unix socket path
        "TMUX_TMPDIR": "{tmux_dir}",
    }

    def configure_home(self, ctx: AgentContext, home: Path, gateway: str, model: str) -> None:
        gitconfig = home / ".gitconfig"
        existing = gitconfig.read_text() if gitconfig.exists() else ""
        if "autorl-offline" not in existing:
            gitconfig.write_text(existing + GITCONFIG)
        (home / ".openhands").mkdir(parents=True, exist_ok=True)

    def fields(self, ctx: AgentContext, gateway: str, model: str, prompt: str) -> dict[str, str]:
        return {**super().fields(ctx, gateway, model, prompt), "tmux_dir": self.tmux_dir(ctx)}

    def tmux_dir(self, ctx: AgentContext) -> str:
        """A directory of the run's own for the tmux socket: in HOME (visible inside every
        sandbox), or a short one in /tmp when HOME's path is too long for a socket, named
        after HOME so that :meth:`collect` removes it after the run."""
        path = Path(ctx.home) / ".tmux"
        if len(str(path)) <= MAX_TMUX_DIR:
            path.mkdir(parents=True, exist_ok=True)
            return str(path)
        short = short_tmux_dir(Path(ctx.home))
        short.mkdir(mode=0o700, exist_ok=True)
        if short.is_symlink() or short.stat().st_uid != os.getuid():  # not ours: a fresh one
            return tempfile.mkdtemp(prefix=TMUX_PREFIX)
        return str(short)

    def collect_from(self, home: Path, workspace: Path, run_dir: Path) -> list[Path]:
        """The run's files (what every path to them calls: ``collect`` and the run-end
        observer's ``collect_run``), then the short tmux directory removed."""
        try:
            return super().collect_from(home, workspace, run_dir)
        finally:
            short = short_tmux_dir(Path(home))
            if not short.is_symlink():
                shutil.rmtree(short, ignore_errors=True)

    def native_files(self, home: Path, workspace: Path) -> list[Path]:
        conversations = home / ".openhands" / "conversations"
        found = [*conversations.glob("*/base_state.json"), *conversations.glob("*/events/*.json")]
        return sorted(found)

    def parse(self, home: Path, workspace: Path) -> list[TrajectoryEvent]:
        return parse_conversations(home / ".openhands" / "conversations")
