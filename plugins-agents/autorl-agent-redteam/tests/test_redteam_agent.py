"""The redteam adapter: launch layout, option validation, conformance, script helpers."""

from __future__ import annotations

import ast
import json
import struct
import sys
from pathlib import Path
from typing import Any

import pytest
from autorl_agent_redteam import attacks
from autorl_agent_redteam.agent import SCRIPT, RedteamAgent, validate_options, validate_targets
from autorl_testing import agent_context, conformance

from autorl.errors import ConfigError
from autorl.registry import get_registry
from autorl.types import AgentContext


def context(tmp_path: Path, **options: Any) -> AgentContext:
    return agent_context(tmp_path, options=options)


class TestRedteamConformance(conformance.AgentConformance):
    plugin_module = "autorl_agent_redteam.plugin"
    agent_options = {"targets": {"harness_pid": 4242, "secrets": ["sk-fake-conformance"]}}


def test_registered_and_described_as_a_self_test() -> None:
    entry = get_registry().get("agent", "redteam")
    description = entry.spec.description.lower()
    assert "security self-test" in description and "not a real agent" in description
    assert entry.spec.options["driver"] is False


def test_launch_copies_the_script_and_writes_the_targets(tmp_path: Path) -> None:
    targets = {"read": ["/srv/eval.jsonl"], "harness_pid": 4242, "host_ports": [8123]}
    ctx = context(tmp_path, targets=targets)
    stale = ctx.workspace / "code" / "redteam"
    (stale / "markers").mkdir(parents=True)
    (stale / "results.json").write_text("[]")
    launch = RedteamAgent().launch(ctx)
    assert launch.argv == (
        sys.executable,
        "code/redteam/attacks.py",
        "--targets",
        "code/redteam/targets.json",
    )
    assert launch.env == {}
    directory = ctx.workspace / "code" / "redteam"
    assert (directory / "attacks.py").read_bytes() == SCRIPT.read_bytes()
    written = json.loads((directory / "targets.json").read_text())
    assert written["read"] == ["/srv/eval.jsonl"] and written["harness_pid"] == 4242
    assert written["probe_network"] is False and written["walk_roots"] == ["/"]
    assert set(written) == set(attacks.SETTINGS)
    assert not (directory / "results.json").exists() and not (directory / "markers").exists()


def test_the_script_is_standard_library_only() -> None:
    tree = ast.parse(SCRIPT.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    third_party = {name for name in imported if name not in sys.stdlib_module_names}
    assert not third_party, third_party


def test_every_attack_documents_what_succeeded_means() -> None:
    for atk in attacks.ATTACKS:
        assert "Succeeded:" in atk.doc, f"{atk.name}: say what 'succeeded' means"
    assert "Succeeded:" in (attacks.kill_parents.__doc__ or "")
    assert len(set(attacks.ATTACK_NAMES)) == len(attacks.ATTACK_NAMES)
    assert attacks.ATTACK_NAMES[-1] == "kill_parents"
    assert attacks.ATTACK_NAMES.index("outlive_daemon") == len(attacks.ATTACK_NAMES) - 2


@pytest.mark.parametrize(
    ("targets", "message"),
    [
        ("not json at all", "cannot be read as JSON"),
        (["read"], "must be a mapping"),
        ({"harnes_pid": 1}, "unknown targets keys"),
        ({"read": "/srv/eval.jsonl"}, "list of non-empty strings"),
        ({"read": ["relative/eval.jsonl"]}, "absolute host paths"),
        ({"write": [""]}, "list of non-empty strings"),
        ({"harness_pid": "123"}, "process id"),
        ({"harness_pid": True}, "process id"),
        ({"harness_pid": 1}, "process id"),
        ({"host_ports": [0]}, "TCP ports"),
        ({"host_ports": ["8080"]}, "TCP ports"),
        ({"secrets": ["abc"]}, "6 characters"),
        ({"probe_network": "yes"}, "true or false"),
        ({"memory_probe_bytes": -1}, "integer >= 0"),
        ({"pids_probe": 2.5}, "integer >= 0"),
        ({"kill_parents": -2}, "integer >= -1"),
        ({"walk_max_entries": 0}, "integer >= 1"),
        ({"hold_seconds": -1}, "number >= 0"),
        ({"hold_seconds": False}, "number >= 0"),
        ({"attack_timeout": 0}, "positive number"),
        ({"only": ["no_such_attack"]}, "unknown attacks"),
    ],
)
def test_wrong_targets_are_config_errors(targets: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        validate_targets(targets)


def test_unknown_options_and_launch_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown options"):
        validate_options({"target": {}})
    with pytest.raises(ConfigError, match="process id"):
        RedteamAgent().launch(context(tmp_path, targets={"harness_pid": "x"}))
    assert not (tmp_path / "workspace" / "code" / "redteam" / "targets.json").exists()


def test_targets_from_a_json_file_and_defaults(tmp_path: Path) -> None:
    path = tmp_path / "targets.json"
    path.write_text(
        json.dumps({"probe_network": True, "hold_seconds": 1.5, "only": ["api_no_token"]})
    )
    settings = validate_targets(str(path))
    assert settings["probe_network"] is True and settings["hold_seconds"] == 1.5
    assert validate_options({})["read"] == [] and validate_options({})["kill_parents"] == -1


def test_metadata_rewrite_keeps_tensor_bytes(tmp_path: Path) -> None:
    payload = bytes(range(256)) * 3
    source = tmp_path / "model.safetensors"
    attacks.write_tensor_file(source, payload)
    copy = tmp_path / "copy.safetensors"
    assert attacks.rewrite_safetensors_metadata(
        source, copy, {"note": "a much longer value"}
    ) == len(payload)
    raw = copy.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    assert length % 8 == 0
    assert header["__metadata__"] == {"format": "pt", "note": "a much longer value"}
    assert header["weight"]["data_offsets"] == [0, len(payload)]
    assert raw[8 + length :] == payload and raw != source.read_bytes()


def test_settings_loader_is_lenient(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"secrets": "x", "host_ports": [1], "nope": 1}))
    cfg, warnings = attacks.load_settings(str(path))
    assert cfg["secrets"] == [] and cfg["host_ports"] == [1]
    assert any("wrong type" in w for w in warnings) and any("unknown" in w for w in warnings)
    cfg, warnings = attacks.load_settings(None)
    assert cfg["walk_roots"] == ["/"] and cfg["kill_parents"] == -1 and not warnings


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("127.8.9.10", "127.8.9.10"),
        ("localhost", "127.0.0.1"),
        ("::1", "::1"),
        ("10.0.0.1", None),
        ("example.com", None),
        ("", None),
    ],
)
def test_the_api_client_contacts_only_loopback(host: str, expected: str | None) -> None:
    assert attacks.loopback_host(host) == expected
    netloc = f"[{host}]" if ":" in host else host
    api = attacks.Api(f"http://{netloc}:8000/" if host else None, "t")
    assert (api.problem is None) == (expected is not None)
    assert attacks.Api("http://[::1:8000/", "t").problem  # malformed: never contacted


def test_pth_marker_line_is_one_import_line(tmp_path: Path) -> None:
    line = attacks.marker_pth_line(tmp_path / "markers", "pth-0")
    assert line.startswith("import ") and line.count("\n") == 1
    (tmp_path / "markers").mkdir()
    exec(line, {})
    assert (tmp_path / "markers" / "pth-0").exists()
