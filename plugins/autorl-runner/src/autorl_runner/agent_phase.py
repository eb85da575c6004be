"""The agent phase: the workspace, the grading API, the LLM gateway and the egress proxy on
loopback and their unix sockets, the agent launched in its sandbox, supervised against its
budget, stopped, and every queued evaluation drained."""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl.protocols import CodeSnapshots, EgressProxy, GradingService, ServedGateway
from autorl.types import AgentContext, AgentLaunch, Forward, SandboxRequest
from autorl_runner.budget import BudgetClock
from autorl_runner.console import agent_text
from autorl_runner.context import RunContext
from autorl_runner.diskwatch import DiskWatch, agent_roots
from autorl_runner.engine import AGENT_ENGINE_ENV
from autorl_runner.records_io import write_json
from autorl_runner.statedir import ShortStateDir
from autorl_runner.workspace import build_workspace, instructions

PASS_THROUGH_ENV = (
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "OMP_NUM_THREADS",
    "OMP_WAIT_POLICY",
    "TZ",
)
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"


SOCKET_PATH_MAX = 100
"""AF_UNIX paths hold 107 bytes; the longest socket name here is ``gateway.sock``."""


def state_dir_for(run_dir: Path) -> Path | ShortStateDir:
    """Where the run's sockets (grader, gateway, egress) live: ``<run>/sandbox``, or a short
    private directory under /tmp (:class:`ShortStateDir`) when the run directory's path is too
    long for a socket path (a campaign's runs nest deep), instead of failing with ``AF_UNIX
    path too long``."""
    state = run_dir / "sandbox"
    if len(str(state / "gateway.sock").encode()) <= SOCKET_PATH_MAX:
        return state
    return ShortStateDir()


@dataclass
class Serving:
    """The services of one agent phase, as the supervision loop uses them."""

    service: GradingService
    clock: BudgetClock
    history: CodeSnapshots
    url: str
    token: str
    text: str
    gateway: ServedGateway | None = None
    proxy: EgressProxy | None = None
    forwards: tuple[Forward, ...] = ()


class AgentPhase:
    HEARTBEAT_SECONDS = 5.0
    """How often ``run.json`` says how long the agent has run (what ``--resume`` reads)."""

    def __init__(self, ctx: RunContext, run_info: dict[str, Any]) -> None:
        self.ctx = ctx
        """What the run's phases share (config, components, setup, scorer, records)."""
        where = state_dir_for(ctx.run_dir)
        self._short = where if isinstance(where, ShortStateDir) else None
        self.state_dir = where.path if isinstance(where, ShortStateDir) else where
        self.run_info = run_info
        self.service: GradingService | None = None
        """The grading service, kept after the phase: it holds the selection candidates'
        graded directories until :meth:`release`."""

    def heartbeat(self, agent_seconds: float) -> None:
        """``run.json`` while the agent runs: ``running``, this harness's pid and the agent's
        time so far (a resumed run's agent time; a liveness check's pid)."""
        write_json(
            self.ctx.run_dir / "run.json",
            {**self.run_info, "status": "running", "end_reason": None, "pid": os.getpid(),
             "agent_seconds": round(agent_seconds, 2),
             "budget_seconds": self.ctx.config.budget.wall_seconds},
        )  # fmt: skip

    def release(self) -> None:
        """Delete the candidates' graded directories (after the sealed evaluation)."""
        if self.service is not None:
            self.service.release()

    def run(self, baseline_score: float) -> tuple[dict[str, Any], dict[str, Any]]:
        """Serve, launch, supervise, stop, drain; the selection (the service's: what the
        sealed evaluation scores) and what ``run.json`` gets. ``infra_cause`` in the latter
        when the harness, not the agent, ended the phase badly (a drain that timed out, a
        driver upstream that stayed down)."""
        console, events = self.ctx.console, self.ctx.events
        cfg = self.ctx.config
        build_workspace(self.ctx.workspace, self.ctx.setup.prepared, self.ctx.setup.model_info.path)
        history = self.ctx.code_history()
        clock = BudgetClock(cfg.budget.wall_seconds)
        token = secrets.token_urlsafe(32)
        self.state_dir.mkdir(mode=0o755, exist_ok=self.state_dir != self.ctx.run_dir / "sandbox")
        self.state_dir.chmod(0o755)
        if self.state_dir != self.ctx.run_dir / "sandbox":
            events.info("state_dir_short", path=str(self.state_dir), why="run dir path too long")

        evaluate = self.ctx.scorer.submission
        if cfg.budget.evaluation_time == "excluded":
            evaluate = clock.excluding(evaluate, limit=self.ctx.scorer.deadline_s)
        grader = self.ctx.setup.grader
        service = self.ctx.grading_service(clock, baseline_score, evaluate, history.snapshot)
        self.service = service
        server = grader.serve(
            service,
            token=token,
            unix_socket=self.state_dir / "grader.sock",
            on_refused=lambda m, p, s: events.warning("grader_refused", method=m, path=p, status=s),
        )
        forwards = [Forward("grader", server.port, self.state_dir / "grader.sock")]
        gateway = proxy = None
        try:
            gateway = self._start_gateway(token)
            if gateway is not None:
                forwards.append(Forward("gateway", gateway.port, self.state_dir / "gateway.sock"))
            proxy = self._start_egress()
            if proxy is not None:
                forwards.append(Forward("egress", proxy.port, self.state_dir / "egress.sock"))
            text = instructions(
                task=self.ctx.parts.task.name,
                metric=self.ctx.setup.prepared.metric,
                budget_seconds=cfg.budget.wall_seconds,
                has_kit=self.ctx.setup.prepared.kit_dir is not None,
                grading=grader.instructions(
                    url=server.url,
                    max_submissions=cfg.budget.max_submissions,
                    protocol=cfg.scoring.protocol,
                ),
                protocol=cfg.scoring.protocol,
                split_sizes=self.ctx.setup.split_sizes,
                engine=self.ctx.setup.agent_engine,
            )
            (self.ctx.workspace / "instructions.md").write_text(text)
            serving = Serving(
                service, clock, history, server.url, token, text, gateway, proxy,
                tuple(forwards),
            )  # fmt: skip
            info = self._supervise(serving)
            console.print("agent finished; waiting for queued evaluations")
            # every evaluation has a deadline; the drain is bounded by them all the same
            bound = service.pending() * (self.ctx.scorer.deadline_s() + 60.0) + 120.0
            if not service.drain(bound):
                pending = service.pending()
                events.warning("drain_timeout", seconds=round(bound), pending=pending)
                info["infra_cause"] = (
                    f"drain_timeout: {pending} evaluation(s) still pending after {bound:.0f} s"
                )
            service.finalize("the run ended before this submission's evaluation finished")
        finally:
            if gateway is not None:
                gateway.stop()
                events.info("gateway_stopped", **gateway.budget.spend())
            if proxy is not None:
                proxy.stop()
                events.info("egress_proxy_stopped", requests=proxy.requests, denied=proxy.denied)
            server.stop()
            service.close()
            if self._short is not None:
                self._short.remove()
        history.snapshot("end of run")
        return service.selection(), info

    def _gpu_meter(self, clock: BudgetClock) -> Any:
        """The agent's GPU-hours, metered from the moment its clock starts (``limits.gpus``)."""
        gpus, limit = self.ctx.config.limits.gpus, self.ctx.config.budget.max_gpu_hours
        if not gpus:
            return None
        from autorl_runner.gpus import GpuMeter

        meter = GpuMeter(self.ctx.parts.gpu_probe, gpus, limit).start()
        clock.meters["gpu"] = meter.snapshot
        self.ctx.events.info("gpu_meter_started", gpus=list(gpus), max_gpu_hours=limit)
        return meter

    def _start_egress(self) -> EgressProxy | None:
        """The agent's way out (a logging allowlist proxy), when the run's policy has one."""
        if self.ctx.parts.egress is None:
            return None
        egress = self.ctx.config.egress
        proxy = self.ctx.parts.egress.start(
            egress.allow, self.ctx.run_dir / "egress.jsonl", self.state_dir / "egress.sock"
        )
        self.ctx.events.info("egress_proxy_started", allow=list(egress.allow), url=proxy.url)
        return proxy

    def _start_gateway(self, token: str) -> ServedGateway | None:
        """The metering LLM gateway, when the run has a driver; the agent's token is its key."""
        if self.ctx.parts.driver is None:
            return None
        budget = self.ctx.config.budget
        console, events = self.ctx.console, self.ctx.events

        def exhausted(reason: str, spend: dict[str, Any]) -> None:
            events.warning("driver_budget_exhausted", reason=reason, spend=spend)
            console.print(f"[yellow]driver budget: {reason.replace('_', ' ')} spent[/]")

        def upstream(event: str, fields: dict[str, Any]) -> None:
            """Every failed or retried driver call is an event; the terminal hears an outage
            begin (its first failed call) and end (the next answered one)."""
            events.warning(event, **fields)
            if event == "driver_call_failed" and fields["consecutive_failures"] == 1:
                console.print(
                    f"[yellow]driver: the upstream failed a call after {fields['attempts']} "
                    f"attempt(s): {agent_text(fields['message'])}[/]"
                )
            elif event == "driver_recovered":
                console.print(
                    f"[green]driver: the upstream answers again, after "
                    f"{fields['after_failed_calls']} failed call(s)[/]"
                )

        gateway = self.ctx.parts.llm_gateway.serve(
            self.ctx.parts.driver,
            token=token,
            log_path=self.ctx.run_dir / "driver_calls.jsonl",
            max_tokens=budget.max_tokens,
            max_cost_usd=budget.max_cost_usd,
            on_exhausted=exhausted,
            on_upstream=upstream,
            unix_socket=self.state_dir / "gateway.sock",
        )
        events.info(
            "gateway_started",
            url=gateway.url,
            driver=self.ctx.config.driver,
            max_tokens=budget.max_tokens,
            max_cost_usd=budget.max_cost_usd,
        )
        console.print(f"LLM gateway for driver [bold]{self.ctx.config.driver}[/] on {gateway.url}")
        return gateway

    def _launch(
        self, url: str, token: str, text: str, gateway_url: str | None, proxy: Any = None
    ) -> AgentLaunch:
        cfg = self.ctx.config
        ctx = AgentContext(
            workspace=self.ctx.workspace,
            home=self.ctx.run_dir / "home",
            task=self.ctx.parts.task.name,
            description=self.ctx.setup.prepared.description,
            instructions=text,
            grader_url=url,
            token=token,
            budget_seconds=cfg.budget.wall_seconds,
            max_submissions=cfg.budget.max_submissions,
            seed=cfg.seed,
            driver=cfg.driver,
            gateway_url=gateway_url,
            python=str(self.ctx.setup.runtime.python),
            options=cfg.agent_options,
        )
        ctx.home.mkdir(parents=True, exist_ok=True)
        launch = self.ctx.parts.agent.launch(ctx)
        env = {k: os.environ[k] for k in PASS_THROUGH_ENV if k in os.environ}
        env.update(
            {
                "PATH": f"{self.ctx.setup.runtime.bin_dir}:{BASE_PATH}",
                "AUTORL_GRADER_URL": url,
                "AUTORL_TOKEN": token,
                "AUTORL_WORKSPACE": str(self.ctx.workspace),
                "AUTORL_TASK": self.ctx.parts.task.name,
                "AUTORL_SEED": str(cfg.seed),
                "AUTORL_BUDGET_SECONDS": str(cfg.budget.wall_seconds),
                "PYTHONPATH": str(self.ctx.workspace / "kit"),
                "HF_HUB_OFFLINE": "1",
            }
        )
        if self.ctx.setup.agent_engine is not None:
            env[AGENT_ENGINE_ENV] = str(self.ctx.setup.agent_engine.python)
        if gateway_url:
            env["AUTORL_GATEWAY_URL"] = gateway_url
            env["AUTORL_DRIVER"] = cfg.driver or ""
        if proxy is not None:
            env.update(proxy.env())
        env.update(launch.env)
        return AgentLaunch(argv=tuple(launch.argv), env=env, read_only=tuple(launch.read_only))

    def _sandbox_request(
        self, launch: AgentLaunch, forwards: tuple[Forward, ...]
    ) -> SandboxRequest:
        """What the agent sees: its workspace and HOME, the runtime, the base model, and the
        paths its launch declares; nothing of the run's records."""
        setup = self.ctx.setup
        engine = setup.agent_engine.read_only if setup.agent_engine else ()
        read_only = (*setup.runtime.read_only, *engine, setup.model_info.path, *launch.read_only)
        inside = tuple(self.ctx.workspace / d for d in ("data", "kit"))
        return SandboxRequest(
            launch=launch,
            workspace=self.ctx.workspace,
            home=self.ctx.run_dir / "home",
            log_path=self.ctx.run_dir / "agent.log",
            state_dir=self.state_dir,
            read_only=tuple(dict.fromkeys(Path(p) for p in read_only)),
            read_only_inside=inside,
            forwards=forwards,
            limits=self.ctx.parts.limits,
            run_id=self.ctx.run_id,
        )

    def _supervise(self, s: Serving) -> dict[str, Any]:
        service, clock, history, gateway, proxy = (
            s.service,
            s.clock,
            s.history,
            s.gateway,
            s.proxy,
        )
        cfg, console, events = self.ctx.config, self.ctx.console, self.ctx.events
        launch = self._launch(s.url, s.token, s.text, gateway.url if gateway else None, proxy)
        events.info(
            "agent_launch",
            argv=list(launch.argv),
            env_keys=sorted(launch.env),
            sandbox=cfg.sandbox,
            read_only=[str(p) for p in launch.read_only],
        )
        if not getattr(self.ctx.parts.sandbox, "isolated", False):
            events.warning("unsandboxed", sandbox=cfg.sandbox)
            console.print(
                f"[bold red]sandbox {cfg.sandbox!r} is not a boundary: the agent can read and "
                "write everything this user can. Development only: this run's score is not "
                "comparable.[/]"
            )
        clock.start()
        meter = self._gpu_meter(clock)
        proc = self.ctx.parts.sandbox.start(self._sandbox_request(launch, s.forwards))
        console.print(
            f"agent [bold]{cfg.agent}[/] started in sandbox [bold]{cfg.sandbox}[/] "
            f"(pid {proc.pid}); budget {cfg.budget.wall_seconds:.0f} s, "
            f"{cfg.budget.max_submissions} submissions"
        )
        console.agent_started(cfg.budget.wall_seconds)
        disk = DiskWatch(agent_roots(self.ctx.run_dir), self.ctx.config.limits.workspace_gb).start()
        next_snapshot = time.monotonic() + cfg.snapshot_seconds
        next_beat = 0.0
        exit_code: int | None = None
        end_reason = "deadline"
        try:
            while True:
                exit_code = proc.wait(0.5)
                console.agent_tick(clock.elapsed(), self.ctx.run_dir / "agent.log")
                if exit_code is not None:
                    end_reason = "agent_exit"
                    break
                for warning in clock.due_warnings():
                    events.warning("budget_warning", message=warning)
                    console.print(f"[yellow]budget: {warning}[/]")
                if clock.expired():
                    break
                if meter is not None and meter.exceeded:
                    end_reason = "gpu_hours"
                    events.warning("gpu_budget_exhausted", **meter.snapshot())
                    break
                if disk.exceeded:
                    end_reason = "disk_limit"
                    events.warning("disk_limit", **disk.report())
                    break
                if service.used >= cfg.budget.max_submissions and service.pending() == 0:
                    end_reason = "max_submissions"
                    break
                if time.monotonic() >= next_beat:
                    self.heartbeat(clock.elapsed())
                    next_beat = time.monotonic() + self.HEARTBEAT_SECONDS
                if time.monotonic() >= next_snapshot:
                    history.snapshot(f"periodic at {clock.elapsed():.0f} s")
                    next_snapshot = time.monotonic() + cfg.snapshot_seconds
        finally:
            agent_seconds = clock.elapsed()
            # the agent is stopped from this moment: a straggler's late submission is refused
            service.close_intake(f"{end_reason} after {agent_seconds:.0f} s")
            code = proc.terminate()
            clock.stop()
            disk.stop()
            if meter is not None:
                meter.stop()
            console.agent_stopped()
        if exit_code is None:
            exit_code = code
        driver_usage = gateway.budget.spend() if gateway is not None else None
        health = gateway.health.snapshot() if gateway is not None else None
        infra_cause = None
        if driver_usage and driver_usage["exhausted"] and end_reason == "agent_exit":
            end_reason = driver_usage["exhausted"]  # the agent stopped because its model did
        elif health and health["down"] and end_reason in ("agent_exit", "deadline"):
            # its model provider was down when it stopped: the harness's side, not the agent's
            end_reason = "infra_error"
            infra_cause = (
                f"driver_unavailable: the driver's upstream was down when the agent stopped "
                f"({health['failed']} call(s) failed, the last {health['consecutive_failures']} "
                "in a row)"
            )
            events.warning("driver_unavailable", **health)
            console.print(
                f"[bold red]the driver's upstream was down when the agent stopped: "
                f"{health['failed']} call(s) failed, the last {health['consecutive_failures']} "
                f"in a row; last error: {agent_text(health['last_error'])}[/]"
            )
        sandbox_usage = dict(proc.stats or {})
        events.info(
            "agent_stopped",
            reason=end_reason,
            exit_code=exit_code,
            seconds=agent_seconds,
            **sandbox_usage,
        )
        console.print(f"agent stopped: {end_reason} after {agent_seconds:.0f} s (exit {exit_code})")
        info = {
            "end_reason": end_reason,
            "agent_exit_code": exit_code,
            "agent_seconds": round(agent_seconds, 2),
            "budget_seconds": cfg.budget.wall_seconds,
            "sandbox": {"name": cfg.sandbox, **sandbox_usage},
        }
        if infra_cause is not None:
            info["infra_cause"] = infra_cause
        if meter is not None:
            info["gpu_usage"] = meter.snapshot()
        if clock.credited:
            info["evaluation_seconds_excluded"] = round(clock.credited, 2)
        if driver_usage is not None:
            info["driver_usage"] = driver_usage
            info["driver_health"] = health
        return info
