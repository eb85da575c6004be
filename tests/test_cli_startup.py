"""CLI start-up imports no heavy library, whatever plugins are installed.

Each command runs in a fresh interpreter (the test process has torch loaded by other tests), with
the fixture plugin installed too, and reports which heavy modules ended up in ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from autorl_testing import HEAVY_MODULES

PROBE = """
import json, sys
from autorl.cli.main import main
sys.argv = ["autorl", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
mods = sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)
print("@@PROBE@@" + json.dumps({"code": code, "heavy": mods, "all": sorted(sys.modules)}))
"""

COMMANDS = [("--help",), ("plugins", "list"), ("plugins", "list", "--json"), ("list", "task")]


def clean_env(**extra: str) -> dict[str, str]:
    """No AUTORL_* switch of the caller leaks in (an allow-list would hide plugins)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTORL_")}
    return {**env, **extra}


def probe(args: tuple[str, ...], pythonpath: str, heavy: tuple[str, ...] = HEAVY_MODULES) -> dict:
    code = f"HEAVY = {set(heavy)!r}\n" + PROBE
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(list(args))],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(PYTHONPATH=pythonpath),
    )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("@@PROBE@@")), None)
    assert line is not None, f"probe of autorl {' '.join(args)} failed:\n{proc.stderr}"
    return json.loads(line.removeprefix("@@PROBE@@"))


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_start_up_imports_no_heavy_library(args: tuple[str, ...], installed_fixtures) -> None:
    result = probe(args, str(installed_fixtures["plugin"]))
    assert result["code"] in (0, None)
    assert result["heavy"] == [], f"autorl {' '.join(args)} imported {result['heavy']}"


def test_help_does_not_import_plugin_factories_or_rich(installed_fixtures) -> None:
    loaded = set(probe(("--help",), str(installed_fixtures["plugin"]))["all"])
    assert "autorl_fixture_plugin.plugin" in loaded  # the hookimpl module: yes
    assert "autorl_fixture_plugin.commands" not in loaded  # the command's module: not yet
    assert "autorl_fixture_plugin.task" not in loaded
    assert not {"rich", "fastapi", "uvicorn", "autorl_runner.cli"} & loaded


def test_the_probe_would_see_a_heavy_import(installed_fixtures) -> None:
    """Guard against a probe that can never fail: click is imported, so it must be reported."""
    result = probe(("--help",), str(installed_fixtures["plugin"]), heavy=("click",))
    assert "click" in result["heavy"]


def test_bench_script_runs(tmp_path: Path) -> None:
    bench = Path(__file__).resolve().parents[1] / "bench" / "cli_startup.py"
    proc = subprocess.run(
        [sys.executable, str(bench), "--runs", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [r["command"] for r in rows] == [
        "python -c pass",
        "autorl --help",
        "autorl plugins list",
    ]
    assert all(r["median_s"] > 0 for r in rows)
