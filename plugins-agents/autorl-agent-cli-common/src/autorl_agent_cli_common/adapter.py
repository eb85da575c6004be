"""The base class of the five CLI adapters: options, gateway, environment, trajectory collection.

A subclass says which pinned tool it runs (:mod:`autorl_agent_cli_common.install`), writes its
configuration into the run's own HOME, builds its headless command, and parses its native
trajectory. Everything the CLI needs to reach the model goes to the run's LLM gateway on
loopback with the run token as API key: the agent never sees an upstream key.
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from autorl_sandbox_common.agentfiles import copy_agent_file
from pydantic import Field, StrictBool, StrictStr

from autorl.errors import ConfigError
from autorl.options import OptionsModel, parse_options
from autorl.options import describe as describe_options
from autorl.types import AgentContext, AgentLaunch
from autorl_agent_cli_common.install import AgentTool
from autorl_agent_cli_common.prompt import build_prompt
from autorl_agent_cli_common.trajectory import TRAJECTORY_FILE, TrajectoryEvent, write_trajectory

BASE_PATH = ("/usr/local/bin", "/usr/bin", "/bin")


class CommonOptions(OptionsModel):
    """``[agent_options]`` every CLI adapter accepts; an adapter subclasses it for its own."""

    model: str | None = Field(
        None, min_length=1, description="model name the CLI sends (default: the driver's model)"
    )
    executable: str | None = Field(
        None, description="use this CLI binary instead of the pinned install (same flags)"
    )
    extra_args: list[StrictStr] = Field([], description="arguments appended to the command")
    wrapper: list[StrictStr] = Field(
        [], description="words put before the command (e.g. strace or nice with flags)"
    )
    allow_network: StrictBool = Field(
        False, description="let the CLI use the network its sandbox allows (egress policy)"
    )


COMMON_OPTIONS = describe_options(CommonOptions)
REFUSING_PROXY = "http://127.0.0.1:9"
"""Nothing listens on the discard port: a proxied request is refused at once, on loopback."""
LOOPBACK_HOSTS = "127.0.0.1,localhost,::1"
MODEL_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
NATIVE_DIR = "agent_native"


def model_name(ctx: AgentContext) -> str:
    """The model the CLI asks for: ``[agent_options] model``, else the driver's model part.

    The gateway serves the run's one driver whatever the request names, so this only has to
    be a name each CLI accepts (Gemini puts it in a URL path, hence no slashes).
    """
    explicit = ctx.options.get("model")
    if isinstance(explicit, str) and explicit.strip():
        return explicit.strip()
    driver = ctx.driver or ""
    model = driver.split("/", 1)[1] if "/" in driver else driver
    if driver.startswith("scripted/"):
        model = Path(model).stem
    return MODEL_SAFE.sub("-", model).strip("-") or "autorl"


def write_login_profile(home: Path, path: str) -> None:
    """Keep PATH in login shells (Codex runs commands with ``bash -lc``).

    ``/etc/profile`` resets PATH, which would hide the training interpreter's ``python``; bash
    then reads ``~/.bash_profile`` (the run's own HOME), which puts it back.
    """
    line = f"export PATH={shlex.quote(path)}\n"
    for name in (".bash_profile", ".profile"):
        (home / name).write_text(f"# written by autorl: the agent's PATH for login shells\n{line}")


def offline_env() -> dict[str, str]:
    """Proxy variables that send every non-loopback HTTP(S) request to a refusing port.

    The CLIs' own update checks and telemetry (OpenHands asks PyPI for its latest version on
    every start) and the agent's commands then fail fast without a packet leaving the host;
    the gateway and the grader, on loopback, are reached directly (``NO_PROXY``).
    """
    env = {}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = REFUSING_PROXY
    env["NO_PROXY"] = env["no_proxy"] = LOOPBACK_HOSTS
    return env


class CliAgent:
    """One agent CLI driven headless against the run's gateway."""

    name: ClassVar[str] = ""
    tool: ClassVar[AgentTool]
    Options: ClassVar[type[CommonOptions]] = CommonOptions
    """The adapter's ``[agent_options]``: :class:`CommonOptions` or a subclass of it."""
    ARGV: ClassVar[tuple[str, ...]] = ()
    """The headless command after the executable: each word a ``str.format`` template over
    :meth:`fields` (``{prompt}``, ``{model}``...); literal braces doubled."""
    ENV: ClassVar[Mapping[str, str]] = {}
    """The CLI's own environment (beside PATH, HOME and the proxies), values templates too."""

    # to implement ---------------------------------------------------------------------------

    def configure_home(self, ctx: AgentContext, home: Path, gateway: str, model: str) -> None:
        """Write the CLI's settings into the run's HOME (default: nothing)."""

    def fields(self, ctx: AgentContext, gateway: str, model: str, prompt: str) -> dict[str, str]:
        """What :attr:`ARGV` and :attr:`ENV` may name; an adapter adds its computed values."""
        return {
            "prompt": prompt,
            "model": model,
            "gateway": gateway,
            "token": ctx.token,
            "home": str(Path(ctx.home)),
            "workspace": str(Path(ctx.workspace)),
        }

    def command(
        self, ctx: AgentContext, executable: str, gateway: str, model: str, prompt: str
    ) -> tuple[list[str], dict[str, str]]:
        """The CLI's argv and environment: :attr:`ARGV` and :attr:`ENV` filled in."""
        values = self.fields(ctx, gateway, model, prompt)
        argv = [executable, *(word.format_map(values) for word in self.ARGV)]
        return argv, {name: value.format_map(values) for name, value in self.ENV.items()}

    def prompt_extra(self, ctx: AgentContext) -> str:
        return ""

    def native_files(self, home: Path, workspace: Path) -> list[Path]:
        """The CLI's own trajectory files under ``home``."""
        return []

    def parse(self, home: Path, workspace: Path) -> list[TrajectoryEvent]:
        """The native trajectory as common events (see :mod:`.trajectory`)."""
        return []

    # shared ---------------------------------------------------------------------------------

    def check(self, task: str, options: Mapping[str, Any]) -> None:
        """Before the run (``Agent.check``): the options, whatever the task."""
        self.check_options(options)

    def check_options(self, options: Mapping[str, Any]) -> CommonOptions:
        return parse_options(self.Options, options, who=f"agent {self.name!r}")

    def gateway(self, ctx: AgentContext) -> str:
        if not ctx.gateway_url:
            raise ConfigError(
                f"agent {self.name!r} talks to an LLM but this run has no driver",
                hint=f"add --driver, e.g. `autorl run --agent {self.name} --driver "
                "openai/gpt-5.2` (or scripted/<script.yaml> offline)",
            )
        return ctx.gateway_url.rstrip("/")

    def executable(self, ctx: AgentContext) -> str:
        explicit = ctx.options.get("executable")
        if explicit:
            path = shutil.which(str(explicit))
            if path is None:
                raise ConfigError(
                    f"agent {self.name!r}: executable {explicit!r} not found",
                    hint="give a path to the CLI binary, or drop the option to use the pinned "
                    f"{self.tool.requirement}",
                )
            return path
        return str(self.tool.ensure())

    def path_env(self, ctx: AgentContext, executable: str) -> str:
        """The training interpreter first, then node (for the npm CLIs), then the system."""
        dirs = [str(Path(ctx.python).parent), str(Path(executable).parent)]
        node = shutil.which("node")
        if node:
            dirs.append(str(Path(node).parent))
        dirs += BASE_PATH
        return ":".join(dict.fromkeys(dirs))

    def launch(self, ctx: AgentContext) -> AgentLaunch:
        self.check_options(ctx.options)
        gateway = self.gateway(ctx)
        model = model_name(ctx)
        executable = self.executable(ctx)
        home = Path(ctx.home)
        home.mkdir(parents=True, exist_ok=True)
        self.configure_home(ctx, home, gateway, model)
        prompt = build_prompt(ctx, self.prompt_extra(ctx))
        argv, env = self.command(ctx, executable, gateway, model, prompt)
        argv = [*ctx.options.get("wrapper", []), *argv, *ctx.options.get("extra_args", [])]
        env = {"PATH": self.path_env(ctx, executable), "HOME": str(home), **env}
        write_login_profile(home, env["PATH"])
        if not ctx.options.get("allow_network", False):
            env.update(offline_env())
        return AgentLaunch(argv=tuple(argv), env=env, read_only=self.read_only(ctx, executable))

    def read_only(self, ctx: AgentContext, executable: str) -> tuple[Path, ...]:
        """What a namespace sandbox must show: the pinned install (and its interpreter), or an
        explicit executable's directory."""
        if ctx.options.get("executable"):
            return (Path(executable).resolve().parent,)
        return self.tool.read_only()

    def collect(self, ctx: AgentContext, run_dir: Path) -> list[Path]:
        """After the agent exits: keep its native log and the common trajectory in ``run_dir``."""
        return self.collect_from(Path(ctx.home), Path(ctx.workspace), Path(run_dir))

    def collect_from(self, home: Path, workspace: Path, run_dir: Path) -> list[Path]:
        """Copy the CLI's native files out of HOME (regular files only, links never followed,
        sizes capped: the agent wrote them), then parse the copies, never the originals."""
        written: list[Path] = []
        target_dir = run_dir / NATIVE_DIR
        for source in self.native_files(home, workspace):
            try:
                relative = source.relative_to(home)
            except ValueError:
                continue
            target = target_dir / relative
            if copy_agent_file(source, target, home):
                written.append(target)
        events = self.parse(target_dir, workspace) if written else []
        path = run_dir / TRAJECTORY_FILE
        write_trajectory(events, self.name, path)
        written.append(path)
        return written
