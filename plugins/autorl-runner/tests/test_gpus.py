"""The run's GPUs: the agent's and the grader's disjoint and on the machine, the grader kept off
the agent's GPUs, GPU-hours metered and budgeted, and evaluation time charged or not. Fake
device lists stand in for NVML (no GPU here); NVML itself is checked to refuse clearly."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from autorl_runner.budget import BudgetClock
from autorl_runner.gpus import GpuMeter, NvmlProbe, load_probe, plan
from autorl_testing.gpus import FakeProbe

from autorl.config import load_config
from autorl.errors import ConfigError


def config(tmp_path: Path, text: str) -> object:
    path = tmp_path / "run.toml"
    path.write_text(text)
    return load_config(path)


def test_config_refuses_a_gpu_given_to_both_and_bad_lists(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"GPU 1 is in both limits.gpus .* and grader.gpus"):
        config(tmp_path, "[limits]\ngpus = [0, 1]\n[grader]\ngpus = [1]\n")
    with pytest.raises(ConfigError, match="named twice"):
        config(tmp_path, "[grader]\ngpus = [2, 2]\n")
    with pytest.raises(ConfigError, match="0 or more"):
        config(tmp_path, "[limits]\ngpus = [-1]\n")
    with pytest.raises(ConfigError, match="max_gpu_hours needs GPUs"):
        config(tmp_path, "[budget]\nmax_gpu_hours = 2\n")
    with pytest.raises(ConfigError, match="evaluation_time"):
        config(tmp_path, "[budget]\nevaluation_time = 'sometimes'\n")
    ok = config(
        tmp_path,
        "[limits]\ngpus = [0, 1]\n[grader]\ngpus = [2]\n"
        "[budget]\nmax_gpu_hours = 1.5\nevaluation_time = 'excluded'\n",
    )
    assert ok.limits.gpus == [0, 1] and ok.grader.gpus == [2]
    assert ok.budget.max_gpu_hours == 1.5 and ok.budget.evaluation_time == "excluded"


def isolate_cuda_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """plan() writes the process's CUDA variables: have monkeypatch record them first (set,
    then removed), so the test's end restores them and no later test (Ray's) inherits a GPU."""
    for name in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"):
        monkeypatch.setenv(name, "recorded")
        monkeypatch.delenv(name)
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "FASTEST_FIRST")


def test_plan_confines_the_harness_to_the_graders_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """The grader evaluates on its own GPUs and the harness's CUDA sees nothing else (vLLM
    included); device-node numbers map to CUDA's (NVML/PCI) order, not assumed equal."""

    def visible(agent: list[int], grader: list[int], probe: FakeProbe, start: str | None) -> str:
        if start is None:
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", start)
        assert plan(agent, grader, "auto", probe) == "cuda"
        return os.environ["CUDA_VISIBLE_DEVICES"]

    isolate_cuda_env(monkeypatch)
    probe = FakeProbe("0=0,1=0,2=0,3=0")
    assert visible([0, 1], [3], probe, None) == "3"
    assert os.environ["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert visible([0, 1], [2, 3], probe, None) == "2,3"
    assert visible([0, 1], [], probe, None) == "2"  # the first GPU that is not the agent's
    assert visible([], [7], FakeProbe("7=0,5=0"), None) == "0"  # node 7 is NVML's first
    assert visible([0], [], probe, "0,3") == "3"  # a campaign cell's harness
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    with pytest.raises(ConfigError, match="may not use"):
        plan([2], [1], "auto", probe)
    assert plan([1], [], "cpu", probe) == "cpu"


def test_plan_refuses_what_cannot_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_cuda_env(monkeypatch)
    probe = FakeProbe("0=0,1=0")
    with pytest.raises(ConfigError, match=r"GPU 4 is not on this machine \(its GPUs: 0, 1\)"):
        plan([0], [4], "auto", probe)
    with pytest.raises(ConfigError, match="every GPU the harness sees is the agent's") as err:
        plan([0, 1], [], "auto", probe)
    assert "grader.gpus" in (err.value.hint or "")
    with pytest.raises(ConfigError, match="device = 'cpu'"):
        plan([], [1], "cpu", probe)


def test_nvml_refuses_clearly_without_a_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine has nvidia-ml-py but no NVIDIA driver: a run naming GPUs stops with a
    message, never runs unmetered."""
    monkeypatch.delenv("AUTORL_GPU_PROBE", raising=False)
    with pytest.raises(ConfigError, match="NVML cannot start here") as err:
        NvmlProbe()
    assert "limits.gpus" in (err.value.hint or "")
    with pytest.raises(ConfigError, match="NVML"):
        load_probe()
    monkeypatch.setenv("AUTORL_GPU_PROBE", "no_such_module:Probe")
    with pytest.raises(ConfigError, match="does not name a GPU probe"):
        load_probe()


def test_meter_charges_utilisation_times_time_and_trips_its_cap() -> None:
    meter = GpuMeter(FakeProbe("0=100,1=50,2=0"), [0, 1], limit_hours=1.0)
    meter.sample(1800)  # half an hour: GPU 0 busy, GPU 1 half busy
    snap = meter.snapshot()
    assert snap["gpu_hours"] == pytest.approx(0.75)
    assert snap["per_gpu_hours"] == {"0": 0.5, "1": 0.25}
    assert snap["gpu_hours_remaining"] == pytest.approx(0.25) and not meter.exceeded
    meter.sample(1200)
    assert meter.exceeded and meter.snapshot()["gpu_hours_remaining"] == 0.0


def test_an_unreadable_gpu_is_never_free() -> None:
    class Broken(FakeProbe):
        def utilization(self, minor: int) -> float:
            raise RuntimeError("GPU fell off the bus")

    meter = GpuMeter(Broken("0=0"), [0])
    meter.sample(3600)
    assert meter.hours() == 1.0 and meter.snapshot()["read_errors"] == 1


def test_meter_thread_samples_until_stopped() -> None:
    meter = GpuMeter(FakeProbe("0=100"), [0], period=0.05).start()
    time.sleep(0.3)
    meter.stop()
    used = meter.hours() * 3600
    assert 0.15 < used < 0.6
    time.sleep(0.1)
    assert meter.hours() * 3600 == used


def test_excluded_evaluation_time_moves_the_deadline_only_while_the_agent_runs() -> None:
    clock = BudgetClock(0.3)
    clock.credit(5.0)  # before the start: nothing to give back
    assert clock.credited == 0.0
    clock.start()
    clock.credit(0.4)
    time.sleep(0.35)
    assert not clock.expired() and clock.remaining() > 0.2
    clock.meters["gpu"] = lambda: {"gpu_hours": 0.1}
    assert clock.usage() == {"gpu_hours": 0.1}
    clock.stop()
    clock.credit(10.0)
    assert clock.credited == pytest.approx(0.4)
