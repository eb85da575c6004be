"""The engine's precision as a run setting (issue #33): validated like every option, resolved
once at the run's start (``auto`` from the engine's measurement), and recorded in the manifest;
the transformers path records it as not applicable. Nothing generates here."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from autorl_runner.engine import (
    BACKEND_ENV,
    PRECISION_ENV,
    REASON_ENV,
    apply_engine,
    engine_record,
)
from autorl_runner.setup import write_manifest
from click.testing import CliRunner

from autorl.cli.main import cli
from autorl.config import RunConfig, load_config, validate_config
from autorl.errors import ConfigError


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts without engine settings; monkeypatch restores what apply_engine set."""
    for name in (BACKEND_ENV, PRECISION_ENV, REASON_ENV):
        monkeypatch.setenv(name, "")  # registered, so the teardown restores it
        monkeypatch.delenv(name)


def stamped(monkeypatch: pytest.MonkeyPatch, fp32: float, bf16: float) -> None:
    """The engine's stamp holds this measurement (no engine, no measuring)."""
    from autorl_hf.engine import precision

    bench = precision.MatmulBench(fp32_gflops=fp32, bf16_gflops=bf16, size=1024, threads=1)
    monkeypatch.setattr(precision, "stamped_bench", lambda: bench)


def test_a_bad_precision_is_a_config_error_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        validate_config({"engine_precision": "fp16"}, None)
    assert "engine_precision: 'fp32', 'bf16' or 'auto' (got 'fp16')" in info.value.message
    toml = tmp_path / "run.toml"
    toml.write_text('engine_precision = "half"\n')
    with pytest.raises(ConfigError, match=f"config file {toml} is invalid"):
        load_config(toml)
    toml.write_text('engine = "vllm"\nengine_precision = "auto"\n')
    assert load_config(toml).engine_precision == "auto"


def test_the_flag_refuses_a_bad_value_without_a_traceback() -> None:
    result = CliRunner().invoke(cli, ["run", "--engine-precision", "fp16"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "'fp16' is not one of 'fp32', 'bf16', 'auto'" in result.output


def test_a_bad_environment_value_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PRECISION_ENV, "fp8")
    with pytest.raises(ConfigError) as info:
        apply_engine(RunConfig())
    assert f"${PRECISION_ENV}='fp8' is not an engine precision" in info.value.message
    assert "--engine-precision" in (info.value.hint or "")


def test_auto_is_resolved_once_and_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    stamped(monkeypatch, 130.0, 788.0)
    config = RunConfig(engine="vllm", engine_precision="auto")
    apply_engine(config)
    assert os.environ[BACKEND_ENV] == "vllm"
    assert os.environ[PRECISION_ENV] == "bf16"  # what every evaluation and the cache key see
    record = engine_record(config)
    assert record["backend"] == "vllm" and record["precision_setting"] == "auto"
    assert record["precision"] == "bf16"
    assert "788.0 GFLOP/s vs fp32 130.0" in record["reason"]

    stamped(monkeypatch, 127.0, 63.0)  # another host: no bf16 speed-up
    apply_engine(config)
    assert engine_record(config)["precision"] == "fp32"


def test_explicit_precisions_and_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    config = RunConfig(engine="vllm", engine_precision="bf16")
    apply_engine(config)
    assert engine_record(config) == {
        "backend": "vllm",
        "precision_setting": "bf16",
        "precision": "bf16",
        "reason": "set explicitly",
    }
    monkeypatch.delenv(PRECISION_ENV)
    apply_engine(RunConfig(engine="vllm"))
    record = engine_record(RunConfig(engine="vllm"))
    assert (record["precision"], record["reason"]) == ("fp32", "the default")


def test_the_transformers_path_records_precision_as_not_applicable() -> None:
    config = RunConfig(engine="transformers", engine_precision="bf16")
    apply_engine(config)
    record = engine_record(config)
    assert (record["precision"], record["precision_setting"]) == ("fp32", "bf16")
    assert record["note"].startswith("not applicable")
    auto = RunConfig(engine="transformers", engine_precision="auto")
    apply_engine(auto)  # nothing to resolve: nothing measures
    assert os.environ[PRECISION_ENV] == "auto" and engine_record(auto)["precision"] == "fp32"


def test_a_resumed_run_keeps_the_precision_its_baseline_was_graded_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stamped(monkeypatch, 100.0, 900.0)  # the host would now pick bf16
    recorded = {"backend": "vllm", "precision": "fp32", "reason": "auto: ... < 2x"}
    apply_engine(RunConfig(engine="vllm", engine_precision="auto"), recorded)
    assert os.environ[PRECISION_ENV] == "fp32"
    assert os.environ[REASON_ENV] == "auto: ... < 2x"


def test_the_manifest_names_the_engine_and_precision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stamped(monkeypatch, 130.0, 788.0)
    config = RunConfig(engine="vllm", engine_precision="auto")
    apply_engine(config)
    prepared = SimpleNamespace(
        split="test", metric="accuracy", evaluator="exact", eval_path=tmp_path / "eval.jsonl"
    )
    setup = SimpleNamespace(
        prepared=prepared,
        hashes={},
        evaluator_config={},
        contract_ref="c",
        split_sizes=None,
        model_info=SimpleNamespace(path=tmp_path / "model"),
        runtime=SimpleNamespace(root=tmp_path / "runtime", distributions=()),
        agent_engine=None,
    )
    parts = SimpleNamespace(
        task=SimpleNamespace(name="gsm8k", version="1"),
        sandbox=SimpleNamespace(describe=lambda: {"name": "local"}),
    )
    registry = SimpleNamespace(plugins=())
    write_manifest(tmp_path, "r1", config, registry, parts, setup)  # type: ignore[arg-type]
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["config"]["engine_precision"] == "auto"
    assert manifest["runtime"]["engine"] is None  # the agent's runtime had none
    engine = manifest["engine"]
    assert (engine["backend"], engine["precision_setting"], engine["precision"]) == (
        "vllm",
        "auto",
        "bf16",
    )
    assert "GFLOP/s" in engine["reason"]
