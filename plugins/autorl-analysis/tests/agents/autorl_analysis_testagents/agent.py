"""The adapter of the test agents: copies ``script.py`` into ``code/`` and runs one behaviour.

The registry builds a component without arguments, so the behaviour comes from the agent
option ``behaviour``. The leaker finds the held-out split through ``AUTORL_CACHE`` (the tests run
it in the ``local`` sandbox, which is no boundary: exactly the leak the analysis must catch).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from autorl.types import AgentContext, AgentLaunch

SCRIPT = Path(__file__).with_name("script.py")


class TestAgent:
    name = "analysis-test"

    def launch(self, ctx: AgentContext) -> AgentLaunch:
        code = Path(ctx.workspace) / "code"
        code.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SCRIPT, code / "agent_script.py")
        behaviour = str(ctx.options.get("behaviour", ""))
        env = {"TEST_CACHE": os.environ.get("AUTORL_CACHE", "")}
        return AgentLaunch(argv=(ctx.python, "code/agent_script.py", behaviour), env=env)
