"""load_model: eval mode, left padding, a pad token, precise errors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from autorl_hf.checkpoint import CheckpointError
from autorl_hf.loading import configure_threads, cpu_threads, load_model


def test_loaded_for_batched_generation(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    assert not model.training
    assert tokenizer.padding_side == "left"
    assert tokenizer.pad_token is not None
    assert model.generation_config.pad_token_id == tokenizer.pad_token_id
    assert str(next(model.parameters()).device) == "cpu"


def test_threads_follow_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert cpu_threads() == 3
    assert configure_threads(1000) == 3  # the environment wins
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert cpu_threads() >= 1
    assert configure_threads(1_400_000) == 1  # a tiny model runs on one thread
    assert 1 <= configure_threads(135_000_000) <= cpu_threads()


def test_busy_machines_get_fewer_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from autorl_hf.loading import free_cores

    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 1.0, 1.0))  # only ourselves
    assert free_cores(2) == 2
    monkeypatch.setattr(os, "getloadavg", lambda: (3.1, 3.0, 3.0))  # two other busy processes
    assert free_cores(2) == 1
    monkeypatch.setattr(os, "getloadavg", lambda: (2.0, 2.0, 2.0))
    assert free_cores(16) == 15


@pytest.mark.serial  # reads every other process's CPU: alone, not beside a parallel worker
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_only_the_cpus_this_process_may_use_are_measured() -> None:
    """A campaign cell pinned to some CPUs: a process spinning on another CPU takes none of
    its cores (the machine-wide reading said one busy core), one on its own CPU does."""
    import subprocess
    import sys
    import time

    from autorl_hf.loading import OtherLoad

    mine, other = sorted(os.sched_getaffinity(0))[:2]
    saved = os.sched_getaffinity(0)
    spin = "import os, sys; os.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True: pass"
    os.sched_setaffinity(0, {mine})
    try:
        readings = []
        for cpu in (other, mine):
            meter = OtherLoad()
            spinner = subprocess.Popen([sys.executable, "-c", spin, str(cpu)])
            try:
                time.sleep(0.3)
                meter.cores()
                time.sleep(1.0)
                readings.append(meter.cores())
            finally:
                spinner.kill()
                spinner.wait()
    finally:
        os.sched_setaffinity(0, saved)
    elsewhere, here = readings
    assert elsewhere is not None and elsewhere <= 0.4, readings
    assert here is not None and here >= 0.6, readings


@pytest.mark.serial  # reads every other process's CPU: alone, not beside a parallel worker
def test_the_load_of_other_processes_is_measured_between_batches() -> None:
    """A process spinning on one core reads as ~1 busy core elsewhere within a second (the
    load average would take a minute), and our own busy time is not counted."""
    import subprocess
    import sys
    import time

    from autorl_hf.loading import OtherLoad, free_cores

    meter = OtherLoad()
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    # a grader's engine runs in processes of its own: their time is ours, not another's
    ours = OtherLoad(also_ours=lambda: [spin.pid])
    try:
        time.sleep(0.3)
        meter.cores()
        ours.cores()
        end = time.monotonic() + 1.0
        while time.monotonic() < end:  # we are busy too: not counted
            pass
        busy = meter.cores()
        busy_without_it = ours.cores()
    finally:
        spin.kill()
        spin.wait()
    assert busy is not None and 0.6 <= busy <= 1.6, busy
    assert busy_without_it is not None and busy_without_it <= 0.5, busy_without_it
    assert meter.cores() is None  # asked again at once: too short to measure
    assert free_cores(2, others=busy) == 1 and free_cores(2, others=0.1) == 2


def test_not_a_model_directory(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match=r"no config.json"):
        load_model(tmp_path, device="cpu")
