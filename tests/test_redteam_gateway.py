"""The red team against the LLM gateway: oversized bodies, a flood of stop strings and malformed
``count_tokens``.

The red-team run has no driver (so no gateway); these attacks run here against a real gateway
(the scripted driver behind it), from the same script, as the agent would send them: a
subprocess that knows only ``AUTORL_GATEWAY_URL`` and ``AUTORL_TOKEN``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import autorl_driver_scripted  # noqa: F401
import pytest
from autorl_agent_redteam.agent import SCRIPT, outcomes
from autorl_llm.drivers import open_driver
from autorl_llm.gateway import Gateway

TOKEN = "redteam-gateway-token"
ATTACKS = ("gateway_huge_body", "gateway_count_tokens", "gateway_stop_flood")
SCRIPT_REPLIES = {"replies": ["ok"], "when_exhausted": "repeat_last"}
CALL_LOG_CAP = 4 * 1024**2
"""The call log after two 16/64 MiB bodies and five malformed ones: far below one body."""


def _attack(tmp_path: Path, gateway: Gateway, attacks: tuple[str, ...]) -> tuple[list, str]:
    """Run the red team's ``attacks`` against ``gateway`` as the agent would: a subprocess
    that knows only the gateway's URL and token; its results and its output."""
    workspace = tmp_path / "workspace"
    here = workspace / "code" / "redteam"
    here.mkdir(parents=True, exist_ok=True)
    (here / "attacks.py").write_bytes(SCRIPT.read_bytes())
    targets = {"only": list(attacks), "kill_parents": 0, "gateway_body_bytes": 16 * 1024**2}
    (here / "targets.json").write_text(json.dumps(targets))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "AUTORL_GATEWAY_URL": gateway.url,
        "AUTORL_TOKEN": TOKEN,
        "AUTORL_WORKSPACE": str(workspace),
    }
    done = subprocess.run(
        [sys.executable, str(here / "attacks.py"), "--targets", str(here / "targets.json")],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    return json.loads((here / "results.json").read_text()), done.stdout[-2000:] + done.stderr[
        -2000:
    ]


def test_gateway_refuses_huge_bodies_and_survives_malformed_count_tokens(tmp_path: Path) -> None:
    log = tmp_path / "driver_calls.jsonl"
    driver = open_driver("scripted/redteam-gateway", script=SCRIPT_REPLIES)
    with Gateway(driver, token=TOKEN, log_path=log) as gateway:
        results, output = _attack(tmp_path, gateway, ATTACKS)
        # the gateway still answers a normal call after the attacks
        import httpx

        answer = httpx.post(
            f"{gateway.url}/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            headers={"authorization": f"Bearer {TOKEN}"},
            timeout=30,
        )
    seen = outcomes(results)
    assert set(seen) == set(ATTACKS), (seen, output)
    landed = {r["attack"]: r["detail"] for r in results if r["outcome"] != "blocked"}
    assert landed == {}, json.dumps(landed, indent=1)
    assert answer.status_code == 200, answer.text[:300]
    # the call log is bounded and whole: every line parses, none holds a huge body
    assert log.stat().st_size < CALL_LOG_CAP, log.stat().st_size
    lines = log.read_text().splitlines()
    assert lines and all(isinstance(json.loads(line), dict) for line in lines)


def test_the_stop_flood_lands_on_a_gateway_without_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attack can fail: with the bound on stop strings lifted, its requests are taken."""
    from autorl_llm.drivers import types

    monkeypatch.setattr(types, "MAX_STOP_STRINGS", 10**9)
    driver = open_driver("scripted/redteam-gateway", script=SCRIPT_REPLIES)
    with Gateway(driver, token=TOKEN, log_path=tmp_path / "calls.jsonl") as gateway:
        results, output = _attack(tmp_path, gateway, ("gateway_stop_flood",))
    assert outcomes(results) == {"gateway_stop_flood": "succeeded"}, output
