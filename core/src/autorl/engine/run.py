"""One run, end to end: resolve, prepare, baseline, serve, supervise the agent, grade, report.

Final scores come only from the harness's own records (the submissions log in the run
directory, outside the workspace), never from files the agent could write.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from autorl.checkpoints import (
    CheckpointInfo,
    apparent_size,
    checkpoint_size_limit,
    hash_tree,
    hash_weights,
)
from autorl.config import RunConfig
from autorl.digest import file_digest
from autorl.engine.baseline import baseline_key, cached_baseline
from autorl.engine.budget import BudgetClock
from autorl.engine.console import RunConsole
from autorl.engine.diskwatch import DiskWatch
from autorl.engine.history import CodeHistory
from autorl.engine.records_io import EventLog, SubmissionLog, utc_now, write_json
from autorl.engine.workspace import build_workspace, instructions
from autorl.errors import AutorlError, ConfigError
from autorl.events import RunEndEvent, RunStartEvent, SubmissionEvent
from autorl.models import HFDirectoryModel, looks_like_path
from autorl.paths import cache_dir
from autorl.registry import Registry, get_registry
from autorl.types import (
    AgentContext,
    AgentLaunch,
    EvalRequest,
    Forward,
    PreparedTask,
    SandboxRequest,
    TaskContext,
)

PASS_THROUGH_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "OMP_NUM_THREADS", "TZ")
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"
LLM_GATEWAY = "llm"
"""The gateway component that serves drivers to agents (distribution ``autorl-llm``)."""


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    run_dir: Path
    baseline_score: float
    best_score: float | None
    end_reason: str

    @property
    def improvement(self) -> float | None:
        return None if self.best_score is None else self.best_score - self.baseline_score


def _versions(registry: Registry) -> dict[str, str]:
    found = {"autorl": _dist_version("autorl"), "python": sys.version.split()[0]}
    for plugin in registry.plugins:
        if plugin.distribution and plugin.version:
            found[plugin.distribution] = plugin.version
    for lib in ("torch", "transformers", "trl", "peft"):
        found[lib] = _dist_version(lib)
    return {k: v for k, v in found.items() if v}


def _dist_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _new_run_id(config: RunConfig) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{config.task}-{config.agent}-{secrets.token_hex(2)}"


def resolve_model(registry: Registry, name: str) -> Any:
    if name.startswith("hf:") or looks_like_path(name):
        return HFDirectoryModel(name)
    return registry.create("model", name)


class Run:
    """Holds one run's state; :meth:`execute` is the whole life cycle."""

    def __init__(
        self, config: RunConfig, registry: Registry | None = None, quiet: bool = False
    ) -> None:
        self.config = config
        self.registry = registry or get_registry()
        self.quiet = quiet
        self.run_id = config.run_id or _new_run_id(config)
        self.run_dir = (config.runs_dir / self.run_id).resolve()
        self.workspace = self.run_dir / "workspace"

    # phases -----------------------------------------------------------------------------------

    def _resolve(self) -> None:
        """Build every component first so a typo fails before any expensive work."""
        reg = self.registry
        self.task = reg.create("task", self.config.task)
        self.agent = reg.create("agent", self.config.agent)
        self.sandbox = reg.create("sandbox", self.config.sandbox)
        check = getattr(self.sandbox, "check", None)
        if check is not None:
            check()  # a machine without the sandbox's tools fails here, before any work
        self.limits = self.config.limits.resolve()
        self.model = resolve_model(reg, self.config.model)
        for report in self.config.reports:
            reg.get("report", report)
        self.driver = self._open_driver()

    def _open_driver(self) -> Any:
        """The run's driver backend (None without ``driver``); a bad name fails before any work."""
        if not self.config.driver:
            spec = self.registry.get("agent", self.config.agent).spec
            if (spec.options or {}).get("driver"):
                raise ConfigError(
                    f"agent {self.config.agent!r} needs a driver LLM",
                    hint="add --driver scripted/<script.yaml> (offline), openai/gpt-5.2 or "
                    "anthropic/claude-sonnet-4-6 (key in the harness environment); "
                    "see docs/agents.md",
                )
            return None
        self.llm_gateway = self._llm_gateway()
        return self.llm_gateway.open_driver(
            self.config.driver, dict(self.config.driver_options), self.registry
        )

    def _llm_gateway(self) -> Any:
        """The LLM-gateway component (``autorl-llm``): drivers and the metering gateway live in
        a distribution of their own, reached through the registry like any plugin."""
        try:
            return self.registry.create("gateway", LLM_GATEWAY)
        except AutorlError as exc:
            raise ConfigError(
                f"the run has a driver ({self.config.driver}) but no LLM gateway: {exc.message}",
                hint="pip install autorl-llm (the drivers' layer and the metering gateway)",
            ) from None

    def _prepare(self, console: RunConsole) -> None:
        task_cache = cache_dir("tasks", self.task.name, str(getattr(self.task, "version", "0")))
        console.print(
            f"preparing task [bold]{self.task.name}[/] and model [bold]{self.config.model}[/]"
        )
        self.prepared: PreparedTask = self.task.prepare(
            TaskContext(
                cache_dir=task_cache,
                seed=self.config.seed,
                options=self.config.task_options,
            )
        )
        leaked = [
            p for p in self.prepared.train_files if p.resolve() == self.prepared.eval_path.resolve()
        ]
        if leaked:
            raise AutorlError(f"task {self.task.name!r} lists its eval split as a train file")
        self.model_info = self.model.materialize(cache_dir("models"))
        self.evaluator = self.registry.create("evaluator", self.prepared.evaluator)
        self.contract = self._contract()
        self.evaluator_config = {
            **dict(self.prepared.evaluator_config),
            **self.config.evaluator_options,
            "device": self.config.device,
        }
        check = getattr(self.evaluator, "check_config", None)
        if check is not None:  # a typo in an evaluator option fails here, before the baseline
            check(dict(self.evaluator_config), self.contract)
        self.base_hash = hash_weights(self.model_info.path)
        self.base_tree_hash = hash_tree(self.model_info.path)
        from autorl.sandbox.runtime import build_runtime

        self.runtime = build_runtime(self.prepared.kit_requires)
        self.hashes = {
            "train": file_digest(self.prepared.train_files),
            "eval": file_digest([self.prepared.eval_path]),
            "base_model": self.base_hash,
            "base_model_files": self.base_tree_hash,
        }

    def _contract(self) -> Any:
        """The task's implementation of its evaluator's contract, loaded and checked once;
        the first eval rows are checked too, so a mismatch fails before the baseline."""
        from autorl.contracts import check_rows, prepared_contract

        ref, contract = prepared_contract(self.registry, self.config.task, self.prepared)
        self.contract_ref: str | None = ref
        if contract is None:
            return None
        kind = self.registry.get("evaluator", self.prepared.evaluator).spec.contract
        who = f"task {self.task.name!r}"
        problems = check_rows(kind, self.prepared.eval_path)
        if problems:
            raise ConfigError(
                f"{who}: its eval rows do not fit evaluator {self.prepared.evaluator!r}: "
                + "; ".join(problems[:3]),
                hint=f"write the fields the {kind!r} contract reads (docs/evaluators/)",
            )
        return contract

    def _write_manifest(self) -> None:
        write_json(
            self.run_dir / "manifest.json",
            {
                "run_id": self.run_id,
                "created": utc_now(),
                "config": self.config.model_dump(mode="json"),
                "versions": _versions(self.registry),
                "hashes": self.hashes,
                "task": {
                    "name": self.task.name,
                    "version": str(getattr(self.task, "version", "0")),
                    "split": self.prepared.split,
                    "metric": self.prepared.metric,
                    "evaluator": self.prepared.evaluator,
                    "evaluator_config": self.evaluator_config,
                    "contract": self.contract_ref,
                },
                "model": {"name": self.config.model, "path": str(self.model_info.path)},
                "sandbox": self.sandbox_info(),
                "runtime": {
                    "path": str(self.runtime.root),
                    "distributions": list(self.runtime.distributions),
                },
            },
        )

    def sandbox_info(self) -> dict[str, Any]:
        describe = getattr(self.sandbox, "describe", None)
        info = dict(describe()) if describe else {"name": self.config.sandbox}
        info.setdefault("isolated", bool(getattr(self.sandbox, "isolated", False)))
        info["limits"] = self.config.limits.model_dump(mode="json")
        info["egress"] = self.config.egress.model_dump(mode="json")
        return info

    def _evaluate(
        self, model_dir: Path, work_dir: Path, label: str, console: RunConsole
    ) -> dict[str, Any]:
        work_dir.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        result = self.evaluator.evaluate(
            EvalRequest(
                model_dir=model_dir,
                eval_path=self.prepared.eval_path,
                config=self.evaluator_config,
                work_dir=work_dir,
                seed=self.config.seed,
                progress=console.eval_progress(label),
                contract=self.contract,
                base_model_dir=self.model_info.path,
            )
        )
        return {
            "score": float(result.score),
            "n": result.n,
            "metrics": dict(result.metrics),
            "seconds": round(time.monotonic() - started, 2),
            "details": str(result.details_path) if result.details_path else None,
        }

    def _baseline(self, console: RunConsole) -> dict[str, Any]:
        key = baseline_key(
            task=self.task.name,
            task_version=str(getattr(self.task, "version", "0")),
            eval_hash=self.hashes["eval"],
            model_hash=self.base_hash,
            evaluator=self.prepared.evaluator,
            evaluator_config={
                **{k: v for k, v in self.evaluator_config.items() if k != "device"},
                "contract": self.contract_ref,
            },
        )
        result = cached_baseline(
            key,
            lambda: self._evaluate(
                self.model_info.path,
                self.run_dir / "baseline",
                "baseline evaluation",
                console,
            ),
        )
        write_json(self.run_dir / "baseline.json", result)
        return result

    def _evaluate_submission(
        self,
        submission_id: int,
        checkpoint: Path,
        info: CheckpointInfo,
        console: RunConsole,
    ) -> tuple[float, dict[str, Any]]:
        result = self._evaluate(
            checkpoint,
            self.run_dir / "submissions" / str(submission_id),
            f"evaluating submission {submission_id}",
            console,
        )
        return result["score"], {
            "n": result["n"],
            "metrics": result["metrics"],
            "eval_seconds": result["seconds"],
        }

    # the whole run ----------------------------------------------------------------------------

    def execute(self) -> RunOutcome:
        with RunConsole(quiet=self.quiet) as console:
            return self._execute(console)

    def _execute(self, console: RunConsole) -> RunOutcome:
        self._resolve()
        if self.run_dir.exists():
            raise ConfigError(
                f"run directory {self.run_dir} already exists",
                hint="choose another --run-id or remove the old run",
            )
        self.run_dir.mkdir(parents=True)
        events = EventLog(self.run_dir / "events.jsonl")
        started = utc_now()
        run_info: dict[str, Any] = {
            "status": "failed",
            "started": started,
            "end_reason": "error",
        }
        outcome: RunOutcome | None = None
        try:
            events.info(
                "run_created",
                run_id=self.run_id,
                config=self.config.model_dump(mode="json"),
            )
            self._prepare(console)
            self._write_manifest()
            events.info("manifest_written", hashes=self.hashes)
            self._observed(
                events,
                self.registry.on_run_start(
                    RunStartEvent(self.run_id, self.run_dir, self.config.model_dump(mode="json"))
                ),
            )
            console.print(f"run [bold]{self.run_id}[/] in {self.run_dir}")
            baseline = self._baseline(console)
            cached = " (cached)" if baseline.get("cached") else ""
            console.print(
                f"baseline {self.prepared.metric}: [bold]{baseline['score']:.2f}[/]"
                f" on {baseline['n']} held-out examples{cached}"
            )
            events.info("baseline", score=baseline["score"], cached=baseline.get("cached"))
            outcome, agent_info = self._agent_phase(console, events, baseline["score"])
            run_info.update(agent_info)
            run_info["status"] = "completed"
        except KeyboardInterrupt:
            run_info.update(status="interrupted", end_reason="interrupted")
            events.warning("run_interrupted")
            raise
        except AutorlError as exc:
            run_info["error"] = str(exc)
            events.warning("run_failed", error=str(exc))
            raise
        except Exception as exc:
            run_info["error"] = f"{type(exc).__name__}: {exc}"
            events.warning("run_failed", error=run_info["error"])
            raise
        finally:
            run_info["ended"] = utc_now()
            write_json(self.run_dir / "run.json", run_info)
            self._finish(console, events)
        return outcome

    def _agent_phase(
        self, console: RunConsole, events: EventLog, baseline_score: float
    ) -> tuple[RunOutcome, dict[str, Any]]:
        from autorl.grading.app import create_app
        from autorl.grading.server import GradingServer
        from autorl.grading.service import GradingService

        cfg = self.config
        build_workspace(self.workspace, self.prepared, self.model_info.path)
        history = CodeHistory(self.run_dir / "code-history.git", self.workspace / "code")
        clock = BudgetClock(cfg.budget.wall_seconds)
        token = secrets.token_urlsafe(32)
        base_bytes = apparent_size(self.model_info.path)
        self.state_dir = self.run_dir / "sandbox"
        self.state_dir.mkdir(mode=0o755)

        def notify(event: SubmissionEvent) -> None:
            events.info("submission", **dict(event.record))
            self._observed(events, self.registry.on_submission(event))
            score = "" if event.score is None else f" score {event.score:.2f}"
            reason = f" ({event.reason})" if event.reason else ""
            console.print(f"submission {event.submission_id}: {event.status}{score}{reason}")

        service = GradingService(
            workspace=self.workspace,
            storage=self.run_dir / "submissions",
            log=SubmissionLog(self.run_dir / "submissions.jsonl"),
            clock=clock,
            max_submissions=cfg.budget.max_submissions,
            baseline_score=baseline_score,
            base_weight_hash=self.base_hash,
            evaluate=lambda sid, ckpt, info: self._evaluate_submission(sid, ckpt, info, console),
            snapshot=history.snapshot,
            notify=notify,
            run_id=self.run_id,
            keep_checkpoints=cfg.keep_checkpoints,
            max_checkpoint_bytes=checkpoint_size_limit(base_bytes),
            base_model_bytes=base_bytes,
        )
        server = GradingServer(
            create_app(service, token), unix_socket=self.state_dir / "grader.sock"
        ).start()
        forwards = [Forward("grader", server.port, self.state_dir / "grader.sock")]
        gateway = proxy = None
        try:
            gateway = self._start_gateway(console, events, token)
            if gateway is not None:
                forwards.append(Forward("gateway", gateway.port, self.state_dir / "gateway.sock"))
            proxy = self._start_egress(events)
            if proxy is not None:
                forwards.append(Forward("egress", proxy.port, self.state_dir / "egress.sock"))
            text = instructions(
                task=self.task.name,
                metric=self.prepared.metric,
                budget_seconds=cfg.budget.wall_seconds,
                max_submissions=cfg.budget.max_submissions,
                grader_url=server.url,
                has_kit=self.prepared.kit_dir is not None,
            )
            (self.workspace / "instructions.md").write_text(text)
            info = self._supervise(
                console,
                events,
                service,
                clock,
                history,
                server.url,
                token,
                text,
                gateway,
                proxy,
                tuple(forwards),
            )
            console.print("agent finished; waiting for queued evaluations")
            service.drain()
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
        history.snapshot("end of run")
        best = service.best_score()
        outcome = RunOutcome(self.run_id, self.run_dir, baseline_score, best, info["end_reason"])
        return outcome, info

    def _start_egress(self, events: EventLog) -> Any:
        """The logging allowlist proxy, when the run's egress policy asks for one."""
        egress = self.config.egress
        if egress.policy != "allowlist":
            return None
        from autorl.sandbox.egress import EgressProxy

        proxy = EgressProxy(
            egress.allow, self.run_dir / "egress.jsonl", self.state_dir / "egress.sock"
        ).start()
        events.info("egress_proxy_started", allow=list(egress.allow), url=proxy.url)
        return proxy

    def _start_gateway(self, console: RunConsole, events: EventLog, token: str) -> Any:
        """The metering LLM gateway, when the run has a driver; the agent's token is its key."""
        if self.driver is None:
            return None
        budget = self.config.budget

        def exhausted(reason: str, spend: dict[str, Any]) -> None:
            events.warning("driver_budget_exhausted", reason=reason, spend=spend)
            console.print(f"[yellow]driver budget: {reason.replace('_', ' ')} spent[/]")

        gateway = self.llm_gateway.serve(
            self.driver,
            token=token,
            log_path=self.run_dir / "driver_calls.jsonl",
            max_tokens=budget.max_tokens,
            max_cost_usd=budget.max_cost_usd,
            on_exhausted=exhausted,
            unix_socket=self.state_dir / "gateway.sock",
        )
        events.info(
            "gateway_started",
            url=gateway.url,
            driver=self.config.driver,
            max_tokens=budget.max_tokens,
            max_cost_usd=budget.max_cost_usd,
        )
        console.print(f"LLM gateway for driver [bold]{self.config.driver}[/] on {gateway.url}")
        return gateway

    def _launch(
        self, url: str, token: str, text: str, gateway_url: str | None, proxy: Any = None
    ) -> AgentLaunch:
        cfg = self.config
        ctx = AgentContext(
            workspace=self.workspace,
            home=self.run_dir / "home",
            task=self.task.name,
            description=self.prepared.description,
            instructions=text,
            grader_url=url,
            token=token,
            budget_seconds=cfg.budget.wall_seconds,
            max_submissions=cfg.budget.max_submissions,
            seed=cfg.seed,
            driver=cfg.driver,
            gateway_url=gateway_url,
            python=str(self.runtime.python),
            options=cfg.agent_options,
        )
        ctx.home.mkdir(parents=True, exist_ok=True)
        launch = self.agent.launch(ctx)
        env = {k: os.environ[k] for k in PASS_THROUGH_ENV if k in os.environ}
        env.update(
            {
                "PATH": f"{self.runtime.bin_dir}:{BASE_PATH}",
                "AUTORL_GRADER_URL": url,
                "AUTORL_TOKEN": token,
                "AUTORL_WORKSPACE": str(self.workspace),
                "AUTORL_TASK": self.task.name,
                "AUTORL_SEED": str(cfg.seed),
                "AUTORL_BUDGET_SECONDS": str(cfg.budget.wall_seconds),
                "PYTHONPATH": str(self.workspace / "kit"),
                "HF_HUB_OFFLINE": "1",
            }
        )
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
        read_only = (*self.runtime.read_only, self.model_info.path, *launch.read_only)
        inside = tuple(self.workspace / d for d in ("data", "kit"))
        return SandboxRequest(
            launch=launch,
            workspace=self.workspace,
            home=self.run_dir / "home",
            log_path=self.run_dir / "agent.log",
            state_dir=self.state_dir,
            read_only=tuple(dict.fromkeys(Path(p) for p in read_only)),
            read_only_inside=inside,
            forwards=forwards,
            limits=self.limits,
            run_id=self.run_id,
        )

    def _supervise(
        self,
        console: RunConsole,
        events: EventLog,
        service: Any,
        clock: BudgetClock,
        history: CodeHistory,
        url: str,
        token: str,
        text: str,
        gateway: Any = None,
        proxy: Any = None,
        forwards: tuple[Forward, ...] = (),
    ) -> dict[str, Any]:
        cfg = self.config
        launch = self._launch(url, token, text, gateway.url if gateway else None, proxy)
        events.info(
            "agent_launch",
            argv=list(launch.argv),
            env_keys=sorted(launch.env),
            sandbox=cfg.sandbox,
            read_only=[str(p) for p in launch.read_only],
        )
        if not getattr(self.sandbox, "isolated", False):
            events.warning("unsandboxed", sandbox=cfg.sandbox)
            console.print(
                f"[bold red]sandbox {cfg.sandbox!r} is not a boundary: the agent can read and "
                "write everything this user can. Development only: this run's score is not "
                "comparable.[/]"
            )
        clock.start()
        proc = self.sandbox.start(self._sandbox_request(launch, forwards))
        console.print(
            f"agent [bold]{cfg.agent}[/] started in sandbox [bold]{cfg.sandbox}[/] "
            f"(pid {proc.pid}); budget {cfg.budget.wall_seconds:.0f} s, "
            f"{cfg.budget.max_submissions} submissions"
        )
        console.agent_started(cfg.budget.wall_seconds)
        disk = DiskWatch(
            (self.workspace, self.run_dir / "home"), self.config.limits.workspace_gb
        ).start()
        next_snapshot = time.monotonic() + cfg.snapshot_seconds
        exit_code: int | None = None
        end_reason = "deadline"
        try:
            while True:
                exit_code = proc.wait(0.5)
                console.agent_tick(clock.elapsed())
                if exit_code is not None:
                    end_reason = "agent_exit"
                    break
                for warning in clock.due_warnings():
                    events.warning("budget_warning", message=warning)
                    console.print(f"[yellow]budget: {warning}[/]")
                if clock.expired():
                    break
                if disk.exceeded:
                    end_reason = "disk_limit"
                    events.warning("disk_limit", **disk.report())
                    break
                if service.used >= cfg.budget.max_submissions and service.pending() == 0:
                    end_reason = "max_submissions"
                    break
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
            console.agent_stopped()
        if exit_code is None:
            exit_code = code
        driver_usage = gateway.budget.spend() if gateway is not None else None
        if driver_usage and driver_usage["exhausted"] and end_reason == "agent_exit":
            end_reason = driver_usage["exhausted"]  # the agent stopped because its model did
        sandbox_usage = getattr(proc, "stats", None) or {}
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
        if driver_usage is not None:
            info["driver_usage"] = driver_usage
        return info

    def _finish(self, console: RunConsole, events: EventLog) -> None:
        """Integrity check, reports, observers: never lose what was recorded."""
        base = getattr(self, "model_info", None)
        if base is not None and getattr(self, "base_tree_hash", None):
            current = hash_tree(base.path)  # every file: weights, config, tokenizer
            if current != self.base_tree_hash:
                events.warning("base_model_modified", expected=self.base_tree_hash, found=current)
                console.print("[red]the base model in the cache was modified during the run[/]")
                run_json = self.run_dir / "run.json"
                data = json.loads(run_json.read_text())
                data["integrity"] = {"base_model_modified": True}
                write_json(run_json, data)
        if (self.run_dir / "manifest.json").exists():
            for name in self.config.reports:
                try:
                    report = self.registry.create("report", name)
                    paths = report.render(self.run_dir, self.run_dir / "report")
                    events.info("report_written", report=name, paths=[str(p) for p in paths])
                except Exception as exc:
                    events.warning("report_failed", report=name, error=repr(exc))
                    console.print(f"[red]report {name!r} failed: {exc}[/]")
            self._append_result()
        summary_path = self.run_dir / "report" / "summary.json"
        try:
            summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
        except (OSError, json.JSONDecodeError):
            summary = {}
        self._observed(
            events, self.registry.on_run_end(RunEndEvent(self.run_id, self.run_dir, summary))
        )
        events.info("run_end")
        events.close()

    @staticmethod
    def _observed(events: EventLog, problems: list[Any]) -> None:
        """An observer plugin that raised is recorded in the run's event log (never lost,
        never fatal to the run)."""
        for problem in problems or []:
            events.warning(
                "observer_failed", plugin=problem.plugin, error=problem.message,
                details=(problem.details or "")[-2000:],
            )  # fmt: skip

    def _append_result(self) -> None:
        """Append this run's summary to the results store (``<runs_dir>/results.jsonl``)."""
        summary_path = self.run_dir / "report" / "summary.json"
        if not summary_path.exists():
            return
        line = json.dumps(json.loads(summary_path.read_text()), default=str)
        with (self.run_dir.parent / "results.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def run(config: RunConfig, registry: Registry | None = None, quiet: bool = False) -> RunOutcome:
    return Run(config, registry=registry, quiet=quiet).execute()


def resume(run_dir: Path, registry: Registry | None = None, quiet: bool = False) -> RunOutcome:
    """Finish a run whose harness died: see :mod:`autorl.engine.resume`."""
    from autorl.engine.resume import resume_run

    return resume_run(Path(run_dir), registry=registry, quiet=quiet)
