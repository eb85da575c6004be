"""Conformance base classes: the checks every plugin of a kind must pass, reusable by subclassing.

The class names do not start with ``Test`` so pytest collects only your subclasses. Each check is
cheap (no model download, no LLM call): heavier behaviour is opt-in through a hook method that a
subclass overrides (for example :meth:`EvaluatorConformance.eval_request`).
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

from autorl.kinds import KINDS
from autorl_testing.helpers import (
    HEAVY_MODULES,
    agent_context,
    heavy_modules_imported_by,
    load_module,
    plugin_name_of,
    registry_with,
)


class PluginConformance:
    """Checks common to every kind: light hookimpl module, valid specs, importable factory."""

    plugin_module: ClassVar[str] = ""
    """Import name of the hookimpl module (the value of your ``autorl.plugins`` entry point)."""
    kind: ClassVar[str] = ""
    component: ClassVar[str | None] = None
    """Name of the component under test; may be omitted when the module supplies exactly one."""
    component_options: ClassVar[Mapping[str, Any]] = {}
    """Keyword arguments passed to the factory."""
    heavy_modules: ClassVar[tuple[str, ...]] = HEAVY_MODULES

    # helpers ----------------------------------------------------------------------------------

    def _require_config(self) -> None:
        if not self.plugin_module:
            pytest.fail(
                f"{type(self).__name__}: set plugin_module = 'your_package.plugin' "
                "(the module your autorl.plugins entry point names)"
            )

    def registry(self) -> Any:
        """A fresh registry holding only the plugin under test (its name: the dashed package)."""
        self._require_config()
        return registry_with(self.plugin_module)

    def provider(self) -> str:
        return plugin_name_of(load_module(self.plugin_module))

    def component_name(self) -> str:
        registry = self.registry()
        names = registry.names(self.kind)
        if self.component is not None:
            if self.component not in names:
                pytest.fail(
                    f"{self.plugin_module} supplies no {self.kind} named {self.component!r}; "
                    f"it supplies: {', '.join(names) or '(none)'}"
                )
            return self.component
        if len(names) != 1:
            pytest.fail(
                f"{self.plugin_module} supplies {len(names)} {self.kind}s ({', '.join(names)}); "
                f"set component = '<name>' in {type(self).__name__}"
            )
        return names[0]

    def create(self) -> Any:
        """Build the component through the registry, which checks it against the protocol."""
        return self.registry().create(self.kind, self.component_name(), **self.component_options)

    # checks -----------------------------------------------------------------------------------

    def test_hookimpl_module_imports_no_heavy_library(self) -> None:
        self._require_config()
        heavy = heavy_modules_imported_by(self.plugin_module, self.heavy_modules)
        assert not heavy, (
            f"importing {self.plugin_module} pulls in {', '.join(heavy)}: hookimpl modules are "
            "imported by every autorl command; move those imports into the factory's module"
        )

    def test_specs_are_valid(self) -> None:
        registry = self.registry()
        problems = registry.problems()
        assert not problems, "; ".join(f"{p.plugin}: {p.message}" for p in problems)
        assert registry.names(self.kind), f"{self.plugin_module} registers no {self.kind}"
        for entry in registry.entries(self.kind):
            assert entry.spec.description.strip(), (
                f"{self.kind} {entry.name!r} has no description (shown by 'autorl list')"
            )
            json.dumps(dict(entry.spec.options))  # options must be JSON-serialisable

    def test_hookimpls_take_no_defaulted_arguments(self) -> None:
        module = load_module(self.plugin_module)
        for attr in dir(module):
            fn = getattr(module, attr)
            if attr.startswith("autorl_") and callable(fn):
                defaulted = [
                    p.name
                    for p in inspect.signature(fn).parameters.values()
                    if p.default is not inspect.Parameter.empty
                ]
                assert not defaulted, (
                    f"{attr} declares defaulted arguments {defaulted}: pluggy never passes them"
                )

    def test_factory_imports(self) -> None:
        factory = self.registry().load_factory(self.kind, self.component_name())
        assert callable(factory), f"factory of {self.component_name()!r} is not callable"

    def test_resolves_by_bare_and_qualified_name(self) -> None:
        registry = self.registry()
        name = self.component_name()
        entry = registry.get(self.kind, name)
        assert registry.get(self.kind, entry.qualified_name) == entry

    def test_instance_follows_protocol(self) -> None:
        instance = self.create()
        assert isinstance(getattr(instance, "name", None), str), (
            f"{self.kind} instances need a 'name' attribute (str)"
        )


class TaskConformance(PluginConformance):
    """A task prepares existing files, a train split disjoint from eval, and names an evaluator."""

    kind: ClassVar[str] = "task"
    task_options: ClassVar[Mapping[str, Any]] = {}
    """``[task_options]`` passed in the ``TaskContext`` (for example a path to shipped data)."""
    other_task_options: ClassVar[Mapping[str, Any] | None] = None
    """Other options that change the data (say a smaller ``eval_size``): preparing with them
    must not change the split prepared with ``task_options``. None: only another seed is tried."""

    def prepare(self, cache_dir: Path) -> Any:
        from autorl.types import TaskContext

        task = self.create()
        return task.prepare(TaskContext(cache_dir=cache_dir, seed=0, options=self.task_options))

    def test_prepare_returns_existing_files(self, tmp_path: Path) -> None:
        prepared = self.prepare(tmp_path / "cache")
        assert prepared.train_files, "prepare() returned no train files"
        for path in prepared.train_files:
            assert Path(path).is_file(), f"train file {path} does not exist"
        assert Path(prepared.eval_path).is_file(), f"eval file {prepared.eval_path} does not exist"
        assert prepared.description.strip(), "the task description is empty"
        assert isinstance(prepared.evaluator, str) and prepared.evaluator, "no evaluator named"
        if prepared.kit_dir is not None:
            assert Path(prepared.kit_dir).is_dir(), f"kit_dir {prepared.kit_dir} is not a dir"

    def test_eval_split_is_json_lines(self, tmp_path: Path) -> None:
        prepared = self.prepare(tmp_path / "cache")
        lines = Path(prepared.eval_path).read_text(encoding="utf-8").splitlines()
        rows = [line for line in lines if line.strip()]
        assert rows, f"eval split {prepared.eval_path} is empty"
        for number, line in enumerate(rows, 1):
            try:
                json.loads(line)
            except json.JSONDecodeError as exc:
                pytest.fail(f"{prepared.eval_path}:{number}: not JSON: {exc}")

    def test_train_split_is_disjoint_from_eval(self, tmp_path: Path) -> None:
        prepared = self.prepare(tmp_path / "cache")
        eval_path = Path(prepared.eval_path).resolve()
        eval_rows = {
            json.dumps(json.loads(line), sort_keys=True)
            for line in eval_path.read_text(encoding="utf-8").splitlines()
            if line.strip()
        }
        for path in prepared.train_files:
            assert Path(path).resolve() != eval_path, "the eval file is among the train files"
            for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    row = json.dumps(json.loads(line), sort_keys=True)
                except json.JSONDecodeError:
                    continue
                assert row not in eval_rows, f"{path} contains an eval example: {line[:200]}"

    def test_fits_the_evaluator_it_names(self, tmp_path: Path) -> None:
        """The contract the evaluator needs is published and complete, the eval rows have the
        fields it reads, and it accepts the evaluator config the task prepares: what a run
        checks before its baseline."""
        from autorl.contracts import check_rows, load_contract
        from autorl.registry import get_registry

        prepared = self.prepare(tmp_path / "cache")
        registry = get_registry()
        try:
            evaluator_spec = registry.get("evaluator", prepared.evaluator).spec
        except Exception as exc:
            pytest.fail(f"the task names evaluator {prepared.evaluator!r}, not installed: {exc}")
        kind = getattr(evaluator_spec, "contract", None)
        contract = None
        spec = self.registry().get("task", self.component_name()).spec
        if getattr(spec, "evaluator", None):
            assert spec.evaluator == prepared.evaluator, (
                f"TaskSpec(evaluator={spec.evaluator!r}) but prepare() names "
                f"{prepared.evaluator!r}: keep the two equal"
            )
        if kind:
            ref = prepared.contract or getattr(spec, "contract", None)
            contract = load_contract(kind, ref, who=f"task {self.component_name()!r}")
            problems = check_rows(kind, Path(prepared.eval_path))
            assert not problems, "; ".join(problems)
        evaluator = registry.create("evaluator", prepared.evaluator)
        check = getattr(evaluator, "check_config", None)
        if check is not None:
            check(dict(prepared.evaluator_config), contract)

    def test_another_seed_or_option_leaves_a_prepared_split_alone(self, tmp_path: Path) -> None:
        """What a run graded on must not change when the task is prepared for another seed or
        option (say, the next run of a campaign): each prepare goes to the directory the harness
        gives it (:func:`autorl.paths.task_cache_dir`, keyed by seed and options), and every file
        of the first run's splits must hash as before."""
        from autorl.paths import task_cache_dir
        from autorl.types import TaskContext

        task = self.create()
        version = str(getattr(task, "version", "0"))
        root = tmp_path / "cache"

        def prepare(seed: int, options: Mapping[str, Any]) -> Any:
            cache = task_cache_dir(task.name, version, seed, options, root=root)
            return task.prepare(TaskContext(cache_dir=cache, seed=seed, options=options))

        first = prepare(0, self.task_options)
        before = _split_files(first)
        others = [(1, self.task_options)]
        if self.other_task_options is not None:
            others.append((0, self.other_task_options))
        for seed, options in others:
            prepare(seed, options)
            changed = sorted(k for k, v in _split_files(first).items() if before.get(k) != v)
            changed += sorted(set(before) - set(_split_files(first)))
            assert not changed, (
                f"preparing seed {seed} with options {dict(options)} changed the split prepared "
                f"for seed 0 with {dict(self.task_options)}: {changed[:5]}. Write everything "
                "that depends on the seed or options under ctx.cache_dir (keyed by both), never "
                "to a fixed path or a parent directory"
            )

    def test_prepare_is_repeatable_on_the_same_cache(self, tmp_path: Path) -> None:
        first = self.prepare(tmp_path / "cache")
        second = self.prepare(tmp_path / "cache")
        assert Path(first.eval_path).read_bytes() == Path(second.eval_path).read_bytes(), (
            "preparing twice on the same cache gave a different eval split"
        )


def _split_files(prepared: Any) -> dict[str, str]:
    """sha256 of every file a run pins: the eval split's directory (tasks refer to files next
    to the split) and the train files, by path."""
    import hashlib

    files = [Path(p) for p in prepared.train_files]
    eval_dir = Path(prepared.eval_path).parent
    files += [p for p in sorted(eval_dir.rglob("*")) if p.is_file()]
    found = {}
    for path in files:
        with path.open("rb") as fh:
            found[str(path)] = hashlib.file_digest(fh, "sha256").hexdigest()
    return found


class EvaluatorConformance(PluginConformance):
    """An evaluator has ``evaluate``; a subclass may supply a real request to score end to end."""

    kind: ClassVar[str] = "evaluator"

    def eval_request(self, tmp_path: Path) -> Any:
        """Return an ``EvalRequest`` on a tiny model to run a real evaluation, or None to skip."""
        return None

    def test_evaluate_accepts_a_request(self) -> None:
        params = inspect.signature(self.create().evaluate).parameters
        assert len(params) >= 1, "evaluate(request) must take the request"

    def test_evaluate_scores_in_percent(self, tmp_path: Path) -> None:
        request = self.eval_request(tmp_path)
        if request is None:
            pytest.skip("no eval_request() given: override it to run a real evaluation")
        result = self.create().evaluate(request)
        assert 0.0 <= result.score <= 100.0, f"score {result.score} is not a percentage"
        assert result.n > 0, "the evaluation counted no example"
        json.dumps(dict(result.metrics), default=str)


class AgentConformance(PluginConformance):
    """An agent's launch is argv strings plus an environment that leaks no host secret."""

    kind: ClassVar[str] = "agent"
    agent_options: ClassVar[Mapping[str, Any]] = {}
    driver: ClassVar[str | None] = None

    def agent_context(self, tmp_path: Path) -> Any:
        return agent_context(
            tmp_path, task="conformance", driver=self.driver, options=self.agent_options
        )

    def test_launch_is_well_formed(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        secret = "host-secret-that-must-not-leak"
        for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "AUTORL_ADMIN"):
            monkeypatch.setenv(var, secret)
        launch = self.create().launch(self.agent_context(tmp_path))
        assert launch.argv and all(isinstance(a, str) for a in launch.argv), (
            f"AgentLaunch.argv must be a non-empty tuple of str, got {launch.argv!r}"
        )
        for key, value in launch.env.items():
            assert isinstance(key, str) and isinstance(value, str), f"env {key!r} is not str"
            assert secret not in value, f"env {key} leaks a host secret into the sandbox"


class ModelConformance(PluginConformance):
    """A model materialises into a Hugging Face directory (opt-in: it may convert weights)."""

    kind: ClassVar[str] = "model"
    materialize: ClassVar[bool] = False
    """Set True when materialising is cheap (a shipped tiny model)."""

    def test_materialize_gives_a_model_directory(self, tmp_path: Path) -> None:
        if not self.materialize:
            pytest.skip("set materialize = True to convert the model in the test")
        info = self.create().materialize(tmp_path / "cache")
        assert (Path(info.path) / "config.json").is_file(), f"{info.path} has no config.json"


class SandboxConformance(PluginConformance):
    """A sandbox starts a real process in the workspace with only the declared environment,
    logs it, shows the declared paths, keeps ``read_only_inside`` read-only, and kills it on
    ``terminate``. Runs with the agent runtime's Python (the harness's packages are not in it).

    ``isolated = True`` (the default) adds the boundary checks: nothing of the run directory
    but the workspace and HOME is visible, a forwarded port reaches the harness's unix socket,
    and no other loopback port of the host is reachable.
    """

    kind: ClassVar[str] = "sandbox"
    isolated: ClassVar[bool] = True

    def _request(
        self,
        tmp_path: Path,
        code: str,
        env: Mapping[str, str] | None = None,
        forwards: tuple[Any, ...] = (),
    ) -> Any:
        """The run directory :func:`autorl_testing.sandbox.sandbox_request` lays out, with
        ``code`` as the agent's ``agent.py``."""
        from autorl_testing.sandbox import sandbox_request

        return sandbox_request(
            tmp_path, code, dict(env or {}), run_id="conformance", forwards=forwards
        )

    def _start(self, tmp_path: Path, code: str, env: Mapping[str, str] | None = None) -> Any:
        return self.create().start(self._request(tmp_path, code, env))

    def _log(self, tmp_path: Path) -> str:
        return (tmp_path / "run" / "agent.log").read_text(encoding="utf-8")

    def _run(self, tmp_path: Path, code: str) -> str:
        """Run ``code`` in the sandbox to a clean exit; its log."""
        proc = self._start(tmp_path, code)
        assert proc.wait(60) == 0, self._log(tmp_path)
        return self._log(tmp_path)

    def test_runs_in_the_workspace_with_declared_env(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("AUTORL_CONFORMANCE_SECRET", "leaked")
        code = (
            "import os; print('cwd=' + os.getcwd()); "
            "print('declared=' + os.environ.get('DECLARED', '')); "
            "print('secret=' + os.environ.get('AUTORL_CONFORMANCE_SECRET', 'none'))"
        )
        proc = self._start(tmp_path, code, {"DECLARED": "yes"})
        assert proc.wait(60) == 0, f"the sandboxed process did not exit 0:\n{self._log(tmp_path)}"
        log = self._log(tmp_path)
        assert f"cwd={(tmp_path / 'run' / 'workspace').resolve()}" in log, f"not in cwd:\n{log}"
        assert "declared=yes" in log, f"declared env missing from the log:\n{log}"
        assert "secret=none" in log, "a host variable leaked into the sandbox"

    def test_read_only_inside_stays_read_only(self, tmp_path: Path) -> None:
        code = (
            "import os\n"
            "try:\n open('data/train.jsonl', 'a').write('x'); print('wrote=yes')\n"
            "except OSError: print('wrote=no')\n"
            "open('code.txt', 'w').write('mine'); print('workspace=ok')\n"
        )
        log = self._run(tmp_path, code)
        assert "workspace=ok" in log, f"the workspace is not writable:\n{log}"
        if self.isolated:
            assert "wrote=no" in log, "data/ (read_only_inside) was writable"
            assert (tmp_path / "run" / "workspace" / "data" / "train.jsonl").read_text() == "{}\n"

    def test_harness_records_are_not_visible(self, tmp_path: Path) -> None:
        if not self.isolated:
            pytest.skip("not an isolating sandbox")
        code = (
            "import os\n"
            "print('exists=' + str(os.path.exists('../submissions.jsonl')))\n"
            "print('pid1=' + open('/proc/1/cmdline').read().replace(chr(0), ' ')[:40])\n"
        )
        log = self._run(tmp_path, code)
        assert "exists=False" in log, f"the run directory's records are visible:\n{log}"

    def test_forwarded_port_reaches_the_harness_and_nothing_else(self, tmp_path: Path) -> None:
        if not self.isolated:
            pytest.skip("not an isolating sandbox")
        import socket
        import threading

        from autorl_serving import unix_listener

        from autorl.types import Forward

        (tmp_path / "run" / "sandbox").mkdir(parents=True, exist_ok=True)
        sock_path = tmp_path / "run" / "sandbox" / "svc.sock"
        server = unix_listener(sock_path)
        server.listen(4)
        other = socket.create_server(("127.0.0.1", 0))
        other_port = other.getsockname()[1]

        def answer() -> None:
            conn, _ = server.accept()
            conn.recv(64)
            conn.sendall(b"pong")
            conn.close()

        threading.Thread(target=answer, daemon=True).start()
        port = 18000 + (other_port % 1000)
        code = (
            "import socket\n"
            f"s = socket.create_connection(('127.0.0.1', {port}), timeout=10)\n"
            "s.sendall(b'ping'); print('forward=' + s.recv(16).decode())\n"
            "try:\n"
            f"    socket.create_connection(('127.0.0.1', {other_port}), timeout=3)\n"
            "    print('host_port=reached')\n"
            "except OSError:\n"
            "    print('host_port=refused')\n"
        )
        request = self._request(tmp_path, code, forwards=(Forward("svc", port, sock_path),))
        proc = self.create().start(request)
        try:
            assert proc.wait(60) == 0, self._log(tmp_path)
        finally:
            server.close()
            other.close()
        log = self._log(tmp_path)
        assert "forward=pong" in log, f"the forwarded port did not reach the harness:\n{log}"
        assert "host_port=refused" in log, f"a host loopback port was reachable:\n{log}"

    def test_terminate_stops_a_running_process(self, tmp_path: Path) -> None:
        code = (
            "import os, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork(): os._exit(0)\n"
            "    time.sleep(600)\n"
            "time.sleep(600)\n"
        )
        proc = self._start(tmp_path, code)
        time.sleep(1.0)
        assert proc.poll() is None, f"the process ended before terminate():\n{self._log(tmp_path)}"
        started = time.monotonic()
        proc.terminate(grace=1.0)
        assert proc.poll() is not None, "terminate() left the process running"
        assert time.monotonic() - started < 30, "terminate() took longer than 30 s"
        time.sleep(0.5)
        alive = getattr(proc, "alive_processes", lambda: [])()
        assert alive == [], f"processes outlived terminate(): {alive}"


class ReportConformance(PluginConformance):
    """A report renders files inside ``out_dir`` from a run directory the subclass builds."""

    kind: ClassVar[str] = "report"

    def run_dir(self, tmp_path: Path) -> Path | None:
        """Return a finished run directory to render, or None to skip the rendering check."""
        return None

    def test_render_writes_inside_out_dir(self, tmp_path: Path) -> None:
        run_dir = self.run_dir(tmp_path)
        if run_dir is None:
            pytest.skip("no run_dir() given: override it to render a real run")
        out_dir = tmp_path / "report-out"
        out_dir.mkdir()
        paths = self.create().render(run_dir, out_dir)
        assert paths, "render() returned no file"
        for path in paths:
            assert Path(path).is_file(), f"render() returned {path}, which does not exist"
            assert Path(path).resolve().is_relative_to(out_dir.resolve()), (
                f"render() wrote {path} outside out_dir"
            )


class DriverConformance(PluginConformance):
    """A driver answers chat messages with text and token usage (opt-in: it may call an API)."""

    kind: ClassVar[str] = "driver"
    messages: ClassVar[list[dict[str, Any]] | None] = None
    """Messages for a real ``complete`` call, or None to skip it."""
    complete_params: ClassVar[Mapping[str, Any]] = {}
    model: ClassVar[str | None] = None
    """With a model, the driver is created as ``{"model": model, "env": env}``, ``env`` being
    the test's ``env`` fixture (say, a fake provider's URL and key): ``complete`` over real HTTP
    without a real API."""

    @pytest.fixture(autouse=True)
    def _driver_env(self, request: pytest.FixtureRequest) -> None:
        if self.model is not None:
            self.component_options = {"model": self.model, "env": request.getfixturevalue("env")}

    def test_complete_returns_text_and_usage(self) -> None:
        if self.messages is None:
            pytest.skip("set messages = [...] to call complete()")
        reply = self.create().complete(self.messages, **self.complete_params)
        assert isinstance(reply.get("text"), str), f"reply has no 'text': {reply!r}"
        usage = reply.get("usage") or {}
        for key in ("input_tokens", "output_tokens"):
            assert isinstance(usage.get(key), int), f"usage lacks {key}: {reply!r}"


def _square(x: int) -> int:
    return x * x


def _square_placed(x: int, placement: Any) -> int:
    if x < 0:
        raise ValueError(f"negative item {x}")
    return x * x


class ExecutorConformance(PluginConformance):
    """An executor maps a picklable function over items and keeps their order."""

    kind: ClassVar[str] = "executor"

    def test_map_keeps_order(self) -> None:
        items = [3, 1, 2, 5, 4]
        assert self.create().map(_square, items) == [9, 1, 4, 25, 16]

    def test_map_of_nothing_is_empty(self) -> None:
        assert list(self.create().map(_square, [])) == []

    def test_as_completed_yields_every_job_once_with_its_error(self) -> None:
        from autorl.executors import Slot

        items = [3, -1, 2]
        done = list(self.create().as_completed(_square_placed, items, [Slot()] * len(items)))
        assert sorted(d.index for d in done) == [0, 1, 2], done
        by_index = {d.index: d for d in done}
        assert (by_index[0].result, by_index[2].result) == (9, 4)
        assert by_index[1].error is not None and "negative" in by_index[1].error


class SearchBackendConformance(PluginConformance):
    """A search backend returns at most ``k`` hits, each a dict of strings with a title."""

    kind: ClassVar[str] = "search_backend"
    query: ClassVar[str | None] = None
    """A query with results, or None to skip the search checks (e.g. a backend needing a key)."""

    def test_search_returns_at_most_k_hits(self) -> None:
        if self.query is None:
            pytest.skip("set query = '...' to run a real search")
        backend = self.create()
        hits = backend.search(self.query, 2)
        assert isinstance(hits, list) and 1 <= len(hits) <= 2, (
            f"search({self.query!r}, 2) returned {hits!r}: expected 1 or 2 hits"
        )
        for hit in hits:
            assert isinstance(hit, dict) and isinstance(hit.get("title"), str), (
                f"a hit must be a dict with a 'title' string, got {hit!r}"
            )
            assert all(isinstance(v, str) for v in hit.values()), f"non-string value in {hit!r}"
            json.dumps(hit)

    def test_search_of_nothing_is_empty_or_a_list(self) -> None:
        if self.query is None:
            pytest.skip("set query = '...' to run a real search")
        assert isinstance(self.create().search(self.query, 0), list)


class GatewayConformance(PluginConformance):
    """A gateway opens a driver by name and serves it on loopback (opt-in: set ``driver`` to a
    driver name the test environment has, e.g. ``scripted/<script>``)."""

    kind: ClassVar[str] = "gateway"
    driver: ClassVar[str | None] = None

    def test_serves_a_driver_on_loopback(self, tmp_path: Path) -> None:
        if self.driver is None:
            pytest.skip("set driver = 'scripted/<script.yaml>' to serve one")
        from autorl.registry import get_registry

        gateway = self.create()
        driver = gateway.open_driver(self.driver, {}, get_registry())
        running = gateway.serve(driver, token="t", log_path=tmp_path / "calls.jsonl")
        try:
            assert running.url.startswith("http://127.0.0.1:"), running.url
            assert isinstance(running.budget.spend(), dict)
        finally:
            running.stop()


class GraderConformance(PluginConformance):
    """A grader fingerprints a model directory stably, and serves a run's queue on loopback
    where an unauthenticated submission is refused and the token's owner reads the budget."""

    kind: ClassVar[str] = "grader"

    def test_fingerprints_are_stable_digests(self, tmp_path: Path) -> None:
        from autorl_testing.grading import write_sparse_checkpoint

        model = write_sparse_checkpoint(tmp_path / "model", 64, b"weights")
        first = self.create().fingerprint(model)
        assert first == self.create().fingerprint(model)
        assert all(isinstance(h, str) and h for h in first), first
        (model / "tokenizer.json").write_text('{"changed": true}')
        assert self.create().files_hash(model) != first[1], "a changed file must change the hash"

    def test_describes_its_api_for_the_agent(self) -> None:
        """``instructions`` gives the sections the engine puts in ``instructions.md``: the
        quota in ``budget``, the run's URL in ``api``, a ``score`` under either protocol."""
        for protocol in ("sealed", "reference"):
            text = self.create().instructions(
                url="http://127.0.0.1:4321", max_submissions=7, protocol=protocol
            )
            assert {"budget", "api", "score"} <= set(text), sorted(text)
            assert "7" in text["budget"] and "http://127.0.0.1:4321" in text["api"], text
            assert all(isinstance(v, str) and v.endswith("\n") for v in text.values()), text

    def test_serves_the_api_on_loopback_with_the_token(self, tmp_path: Path) -> None:
        import httpx
        from autorl_runner.budget import BudgetClock
        from autorl_runner.records_io import SubmissionLog

        from autorl_testing.grading import write_sparse_checkpoint

        base = write_sparse_checkpoint(tmp_path / "base", 64)
        (tmp_path / "workspace" / "output").mkdir(parents=True)
        grader = self.create()
        clock = BudgetClock(60)
        clock.start()
        service = grader.service(
            base_model=base,
            workspace=tmp_path / "workspace",
            storage=tmp_path / "submissions",
            log=SubmissionLog(tmp_path / "submissions.jsonl"),
            clock=clock,
            max_submissions=2,
            baseline_score=0.0,
            base_weight_hash=grader.fingerprint(base)[0],
            evaluate=lambda sid, path, info: (1.0, {}),
        )
        server = grader.serve(service, token="t", unix_socket=tmp_path / "g.sock", on_refused=None)
        try:
            assert server.url.startswith("http://127.0.0.1:"), server.url
            refused = httpx.post(f"{server.url}/submit", json={"model_path": "output/x"})
            assert refused.status_code == 401, refused.text
            budget = httpx.get(f"{server.url}/budget", headers={"Authorization": "Bearer t"})
            assert budget.status_code == 200 and budget.json()["max_submissions"] == 2
        finally:
            server.stop()
            service.close()


class RuntimeConformance(PluginConformance):
    """A runtime runs Python with the training stack and cannot import the harness."""

    kind: ClassVar[str] = "runtime"

    def test_runs_python_without_the_harness(self) -> None:
        import subprocess

        runtime = self.create().build()
        code = "import importlib.util as u; print(u.find_spec('autorl') is None)"
        proc = subprocess.run(
            [str(runtime.python), "-I", "-c", code], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "True", "the agent runtime can import autorl"
        assert all(Path(p).is_absolute() for p in runtime.read_only), runtime.read_only


class EgressConformance(PluginConformance):
    """An egress proxy serves on loopback, refuses a host off the list and logs each request."""

    kind: ClassVar[str] = "egress"

    def test_refuses_a_host_off_the_list_and_logs_it(self, tmp_path: Path) -> None:
        import socket

        log = tmp_path / "egress.jsonl"
        proxy = self.create().start(["allowed.invalid"], log, tmp_path / "egress.sock")
        try:
            assert proxy.url.startswith("http://127.0.0.1:"), proxy.url
            with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as conn:
                conn.sendall(b"CONNECT denied.invalid:443 HTTP/1.1\r\nHost: x\r\n\r\n")
                assert conn.recv(64).split()[1] == b"403"
            assert proxy.denied >= 1 and "denied.invalid" in log.read_text()
            assert proxy.url in proxy.env().values(), "the agent must be told the proxy"
        finally:
            proxy.stop()


CONFORMANCE_BY_KIND: dict[str, type[PluginConformance]] = {
    name: globals()[kind.conformance] for name, kind in KINDS.items() if kind.conformance
}
"""Kind -> conformance class, from :mod:`autorl.kinds`."""

__all__ = [*(c.__name__ for c in CONFORMANCE_BY_KIND.values()), "PluginConformance"]
