"""The plugin stays out of the way: light to import, silent until switched on, and it loads
through the registry like any plugin (there is no observer conformance class in autorl_testing,
so its common checks are made here)."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from autorl_observer_mlflow import plugin
from autorl_observer_mlflow.settings import Settings
from autorl_testing import HEAVY_MODULES, heavy_modules_imported_by, registry_with

NOT_AT_START_UP = (*HEAVY_MODULES, "mlflow", "sqlalchemy", "alembic")

PROBE = """
import json, sys
from pathlib import Path
from autorl.events import RunEndEvent, RunStartEvent, SubmissionEvent
from autorl_observer_mlflow import plugin
plugin.autorl_on_run_start(RunStartEvent("r", Path(sys.argv[1]), {"task": "gsm8k"}))
plugin.autorl_on_submission(SubmissionEvent("r", 1, "scored", 50.0))
plugin.autorl_on_run_end(RunEndEvent("r", Path(sys.argv[1])))
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("mlflow", "sqlalchemy"))))
"""


def env_without_opt_in(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AUTORL_", "MLFLOW_"))}
    return {**env, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), **extra}


def test_hookimpl_module_imports_no_heavy_library_and_no_mlflow() -> None:
    assert heavy_modules_imported_by("autorl_observer_mlflow.plugin", NOT_AT_START_UP) == []


def test_plugin_loads_with_its_three_observers_and_no_defaulted_arguments() -> None:
    registry = registry_with("autorl_observer_mlflow.plugin")
    assert registry.problems() == []
    hooks = {name for name in dir(plugin) if name.startswith("autorl_")}
    assert hooks == {"autorl_on_run_start", "autorl_on_submission", "autorl_on_run_end"}
    for name in hooks:
        params = inspect.signature(getattr(plugin, name)).parameters.values()
        assert all(p.default is inspect.Parameter.empty for p in params), name


def test_without_the_opt_in_the_hooks_import_and_write_nothing(tmp_path: Path) -> None:
    """Even with MLflow's own MLFLOW_TRACKING_URI set (a team's global setting)."""
    team_store = tmp_path / "team.db"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "run")],
        env=env_without_opt_in(MLFLOW_TRACKING_URI=f"sqlite:///{team_store}"),
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
    assert list(tmp_path.iterdir()) == []


def test_autorl_help_does_not_import_mlflow_even_when_switched_on(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom autorl.cli.main import main\nsys.argv = ['autorl', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('@@', sorted(m for m in sys.modules if m.split('.')[0] == 'mlflow'))"
    )
    env = env_without_opt_in(AUTORL_MLFLOW_TRACKING_URI=f"sqlite:///{tmp_path / 'x.db'}")
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "@@ []" in proc.stdout
    assert list(tmp_path.iterdir()) == []


def test_a_failure_message_says_what_where_and_how_without_credentials() -> None:
    settings = Settings(tracking_uri="https://alice:s3cret@mlflow.example.org")
    message = plugin.describe_failure(
        "run end", "run-1", settings, ConnectionError("refused\n  twice")
    )
    assert "s3cret" not in message and "alice" not in message
    assert "https://***@mlflow.example.org" in message
    assert "run 'run-1' (run end)" in message and "ConnectionError: refused twice" in message
    assert "AUTORL_MLFLOW_TRACKING_URI" in message and "docs/observers/mlflow.md" in message


@pytest.mark.parametrize("uri", ["bogus-scheme://nowhere", "sqlite:////proc/no/such/dir/x.db"])
def test_a_hook_that_cannot_log_raises_one_clear_error(
    uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the engine turns into an ``observer_failed`` event (the run goes on)."""
    from autorl.events import RunStartEvent

    monkeypatch.setenv("AUTORL_MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    with pytest.raises(plugin.MlflowLoggingError, match="AUTORL_MLFLOW_TRACKING_URI") as info:
        plugin.autorl_on_run_start(RunStartEvent("r", tmp_path, {"task": "gsm8k"}))
    assert "(run start)" in str(info.value) and "\n" not in str(info.value)
