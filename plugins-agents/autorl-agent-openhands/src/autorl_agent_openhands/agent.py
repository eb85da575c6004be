"""The ``openhands`` agent: the OpenHands CLI headless against the run's gateway.

OpenHands 1.16 needs Python >= 3.12, so it gets its own virtual environment in the cache. It
reaches the model through litellm as an OpenAI-compatible endpoint (``LLM_*`` variables with
``--override-with-envs``). It ends only when the model calls its ``finish`` tool. Its public
skills are a ``git clone`` from GitHub on every run: the run's ``~/.gitconfig`` rewrites that
URL to a local path that does not exist, so the clone fails at once without a connection.
See ``docs/agents/openhands.md``.
"""

from __future__ import annotations

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
TMUX_NOTE = "autorl-tmux-dir"
GITCONFIG = """# written by autorl: no fetch from GitHub during a run (OpenHands' public skills)
[url "file:///nonexistent/autorl-offline/github.com/"]
\tinsteadOf = https://github.com/
"""


class OpenHandsAgent(CliAgent):
    """``openhands --headless --json --override-with-envs --always-approve -t PROMPT``."""

    name = "openhands"
    tool = TOOL

    def configure_home(self, ctx: AgentContext, home: Path, gateway: str, model: str) -> None:
        gitconfig = home / ".gitconfig"
        existing = gitconfig.read_text() if gitconfig.exists() else ""
        if "autorl-offline" not in existing:
            gitconfig.write_text(existing + GITCONFIG)
        (home / ".openhands").mkdir(parents=True, exist_ok=True)

    def command(
        self, ctx: AgentContext, executable: str, gateway: str, model: str, prompt: str
    ) -> tuple[list[str], dict[str, str]]:
        argv = [
            executable,
            "--headless",
            "--json",
            "--override-with-envs",
            "--always-approve",
            "-t",
            prompt,
        ]
        env = {
            "LLM_MODEL": f"openai/{model}",
            "LLM_BASE_URL": f"{gateway}/v1",
            "LLM_API_KEY": ctx.token,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "OPENHANDS_SUPPRESS_BANNER": "1",
            "OPENHANDS_WORK_DIR": str(Path(ctx.workspace)),
            # its terminal tool runs commands in a tmux server on the socket "openhands" in
            # $TMUX_TMPDIR (default /tmp/tmux-UID, shared by every run of the user): give each
            # run its own, short enough for a Unix socket path
            "TMUX_TMPDIR": self.tmux_dir(ctx),
        }
        return argv, env

    def tmux_dir(self, ctx: AgentContext) -> str:
        """A fresh short directory for the tmux socket, noted in HOME so collect removes it."""
        path = tempfile.mkdtemp(prefix=TMUX_PREFIX)
        (Path(ctx.home) / ".openhands" / TMUX_NOTE).write_text(path)
        return path

    def collect_from(self, home: Path, workspace: Path, run_dir: Path) -> list[Path]:
        note = home / ".openhands" / TMUX_NOTE
        if note.is_file():
            path = Path(note.read_text().strip())
            if path.name.startswith(TMUX_PREFIX) and path.parent == Path(tempfile.gettempdir()):
                shutil.rmtree(path, ignore_errors=True)
        return super().collect_from(home, workspace, run_dir)

    def native_files(self, home: Path, workspace: Path) -> list[Path]:
        conversations = home / ".openhands" / "conversations"
        found = [*conversations.glob("*/base_state.json"), *conversations.glob("*/events/*.json")]
        return sorted(found)

    def parse(self, home: Path, workspace: Path) -> list[TrajectoryEvent]:
        return parse_conversations(home / ".openhands" / "conversations")
