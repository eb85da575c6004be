"""The ``ray`` executor on a real local Ray instance, run inside a network namespace of its own
(only ``lo``): on the host network Ray would bind the machine's non-loopback address.

One instance (2 CPUs, 2 logical GPUs: Ray assigns GPU ids without a GPU) serves the module;
jobs are functions of this module, sent by value into the namespace and on to Ray's workers.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from autorl_executor_ray.executor import RayExecutor, RayOptions
from autorl_executor_ray.netns import NetnsHost, NetnsUnavailable, ray_is_initialized, start_ray
from autorl_testing import conformance
from autorl_testing.helpers import HEAVY_MODULES

from autorl.errors import ConfigError
from autorl.executors import Done, Placement, Slot

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="network namespaces: Linux only")


def open_host() -> NetnsHost:
    try:
        return NetnsHost().__enter__()
    except NetnsUnavailable as exc:
        pytest.skip(f"no network namespace for Ray here: {exc}")


@pytest.fixture(scope="module")
def host() -> Iterator[NetnsHost]:
    host = open_host()
    try:
        host.call(start_ray, num_cpus=2, num_gpus=2)
        yield host
    finally:
        host.close()


@pytest.fixture
def executor(host: NetnsHost) -> Any:
    return host.executor(RayExecutor())


def test_the_host_is_loopback_only_and_cut_off_from_this_network(host: NetnsHost) -> None:
    probe = "import socket; print([name for _, name in socket.if_nameindex()])"
    done = host.run([sys.executable, "-c", probe])
    assert done.returncode == 0 and done.stdout.strip() == "['lo']", done
    with socket.create_server(("127.0.0.1", 0)) as server:  # this process's loopback
        port = server.getsockname()[1]
        with pytest.raises(ConnectionRefusedError):
            host.call(socket.create_connection, ("127.0.0.1", port), 5)


class TestRayConformance(conformance.ExecutorConformance):
    plugin_module = "autorl_executor_ray.plugin"
    heavy_modules = (*HEAVY_MODULES, "ray")

    @pytest.fixture(autouse=True)
    def _request(self, request: pytest.FixtureRequest) -> None:
        self.request = request

    def create(self) -> Any:
        """Built through the registry here (no Ray yet), its jobs run in the namespace."""
        return self.request.getfixturevalue("host").executor(super().create())


# jobs (run on Ray's workers) ------------------------------------------------------------------


def sleep_then_stamp(seconds: float, placement: Placement) -> dict[str, Any]:
    start = time.time()
    time.sleep(seconds)
    return {
        "start": start,
        "end": time.time(),
        "gpus": placement.gpus,
        "worker": placement.worker,
        "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


def meet(where: str, placement: Placement) -> dict[str, bool]:
    """Check in, then wait up to a minute to see another job check in: two jobs ran at once
    when each saw the other, however slowly a loaded machine starts Ray's workers (a fixed
    sleep raced the second worker's start)."""
    folder = Path(where)
    (folder / f"{os.getpid()}-{time.time_ns()}").touch()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if len(list(folder.iterdir())) >= 2:
            return {"met": True}
        time.sleep(0.05)
    return {"met": False}


def die_on_first_attempt(marker: str, placement: Placement) -> dict[str, int]:
    """The worker process is killed mid-job the first time (as an OOM kill or a lost node
    would); the marker file, written before, tells the retry apart."""
    path = Path(marker)
    if not path.exists():
        path.write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return {"pid": os.getpid(), "killed": int(path.read_text())}


def count_then_fail(log: str, placement: Placement) -> None:
    with open(log, "a") as f:
        f.write("attempt\n")
    raise RuntimeError("the cell failed on its own")


def fail_plainly(x: int) -> int:
    raise ValueError(f"no {x}")


def where(x: int, placement: Placement) -> dict[str, Any]:
    import ray

    return {
        "x": x,
        "worker": placement.worker,
        "probe": os.environ.get("AUTORL_PROBE"),
        "cluster": ray.get_runtime_context().gcs_address,
    }


def received(stream: Iterator[Done]) -> list[tuple[Done, float]]:
    """Each Done with the time it reached this process."""
    return [(done, time.time()) for done in stream]


# behaviour ------------------------------------------------------------------------------------


def test_a_fast_job_is_not_held_back_by_a_slow_one(executor: Any) -> None:
    got = received(executor.as_completed(sleep_then_stamp, [4.0, 0.2], [Slot(1), Slot(1)]))
    assert [d.index for d, _ in got] == [1, 0], got
    (fast, fast_seen), (slow, _) = got
    assert fast.error is None and slow.error is None
    assert fast_seen < slow.result["end"], "the fast result arrived only after the slow job ended"


def test_cpu_slots_limit_how_many_jobs_run_at_once(executor: Any, tmp_path: Path) -> None:
    whole = [d.result for d in executor.as_completed(sleep_then_stamp, [0.7] * 3, [Slot(2)] * 3)]
    spans = sorted((r["start"], r["end"]) for r in whole)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans)), spans
    # the control: two 1-CPU jobs on the 2-CPU instance do run at once (each sees the other)
    halves = [d.result for d in executor.as_completed(meet, [str(tmp_path)] * 2, [Slot(1)] * 2)]
    assert halves == [{"met": True}, {"met": True}], halves


def test_gpu_jobs_get_disjoint_devices_and_cuda_visible_devices(executor: Any) -> None:
    slots = [Slot(1, gpus=1), Slot(1, gpus=1), Slot(0, gpus=0)]
    done = {d.index: d.result for d in executor.as_completed(sleep_then_stamp, [1.0] * 3, slots)}
    first, second, none = done[0], done[1], done[2]
    assert len(first["gpus"]) == len(second["gpus"]) == 1
    assert set(first["gpus"]).isdisjoint(second["gpus"]), (first, second)
    assert first["cuda"] == str(first["gpus"][0]) and second["cuda"] == str(second["gpus"][0])
    assert none["gpus"] == () and none["worker"] == first["worker"] == "127.0.0.1"


def test_a_job_no_node_can_hold_fails_at_once_and_the_others_run(executor: Any) -> None:
    done = {d.index: d for d in executor.as_completed(where, [1, 2], [Slot(1, gpus=3), Slot(1)])}
    assert "needs 1 CPU(s) and 3 GPU(s)" in done[0].error and "2 CPU/2 GPU" in done[0].error
    assert done[1].result["x"] == 2


def test_a_killed_worker_is_retried_and_the_job_succeeds(executor: Any, tmp_path: Path) -> None:
    marker = tmp_path / "attempt"
    (done,) = executor.as_completed(die_on_first_attempt, [str(marker)], options={"max_retries": 1})
    assert done.error is None, done.error
    assert done.result["killed"] != done.result["pid"]  # a second worker process ran it


def test_without_retries_a_killed_worker_is_the_jobs_error(executor: Any, tmp_path: Path) -> None:
    marker = str(tmp_path / "attempt")
    (done,) = executor.as_completed(die_on_first_attempt, [marker], options={"max_retries": 0})
    assert done.result is None and done.error is not None
    assert done.error.startswith("WorkerCrashedError: The worker died"), done.error
    assert done.error.endswith("(ray max_retries=0)")


def test_an_exception_is_reported_and_not_retried(executor: Any, tmp_path: Path) -> None:
    log = tmp_path / "attempts"
    (done,) = executor.as_completed(count_then_fail, [str(log)], options={"max_retries": 3})
    assert done.error == "RuntimeError: the cell failed on its own"
    assert log.read_text() == "attempt\n"


def test_map_raises_the_jobs_own_exception(executor: Any) -> None:
    with pytest.raises(ValueError, match="no 7"):
        executor.map(fail_plainly, [7])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"workers": 2}, "unknown option(s) workers"),
        ({"max_retries": "2"}, "option max_retries must be an integer >= -1, got '2'"),
        ({"num_cpus": 0}, "option num_cpus must be an integer >= 1"),
        ({"address": ""}, "option address must be a Ray address"),
        ({"runtime_env": "x"}, "option runtime_env must be a table"),
        ({"address": "auto", "num_cpus": 2}, "num_cpus size a local Ray instance"),
    ],
)
def test_a_bad_option_is_a_clear_error(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        RayOptions.parse(options)
    assert message in str(caught.value) and "hint:" in str(caught.value)
    with pytest.raises(ConfigError):
        RayExecutor(**options)


def test_a_bad_option_stops_as_completed_before_any_job(executor: Any, tmp_path: Path) -> None:
    log = tmp_path / "attempts"
    with pytest.raises(ConfigError, match="unknown option"):
        list(executor.as_completed(count_then_fail, [str(log)], options={"gpus": [0]}))
    with pytest.raises(ConfigError, match="already connected to Ray"):
        list(executor.as_completed(count_then_fail, [str(log)], options={"address": "auto"}))
    with pytest.raises(ConfigError, match="2 item"):
        list(executor.as_completed(count_then_fail, [str(log)] * 2, [Slot()]))
    assert not log.exists()


def sleep_long(pid_file: str, placement: Placement) -> None:
    Path(pid_file).write_text(str(os.getpid()))
    time.sleep(120)


def stop_after_the_first(pid_file: str) -> dict[str, Any]:
    """In the namespace: take the fast job's Done, then drop the iterator (as Ctrl-C would)."""
    jobs = RayExecutor().as_completed(
        lambda item, placement: item if item == "fast" else sleep_long(item, placement),
        [pid_file, "fast"],
        [Slot(1), Slot(1)],
    )
    first = next(jobs)
    deadline = time.time() + 30
    while not Path(pid_file).exists() and time.time() < deadline:
        time.sleep(0.1)
    pid = int(Path(pid_file).read_text())
    started = time.time()
    jobs.close()
    while Path(f"/proc/{pid}").exists() and time.time() < started + 20:
        time.sleep(0.1)
    return {"first": first, "alive": Path(f"/proc/{pid}").exists(), "took": time.time() - started}


def test_stopping_early_cancels_the_running_jobs(host: NetnsHost, tmp_path: Path) -> None:
    got = host.call(stop_after_the_first, str(tmp_path / "pid"))
    assert got["first"].result == "fast"
    assert got["alive"] is False, "the long job's worker still runs after the iterator closed"
    assert got["took"] < 20


# connecting -----------------------------------------------------------------------------------


def own_instance_then_a_started_cluster(home: str) -> dict[str, Any]:
    """In a fresh namespace: the default (a local instance, shut down after), then `ray start
    --head` and ``address = "auto"`` joining it, as on a cluster's head node. The local
    instance runs with ``home`` as HOME, its stderr and the root logger's records captured,
    and a SIGTERM handler of ours that must still be the one called while Ray is connected."""
    import io
    import logging

    env = {"env_vars": {"AUTORL_PROBE": "yes"}}
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logging.getLogger().addHandler(handler)
    saved_home, saved_err, err = os.environ["HOME"], sys.stderr, io.StringIO()
    os.environ["HOME"], sys.stderr = home, err
    terms: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: terms.append(signum))
    try:
        own = []
        for done in RayExecutor(num_cpus=1, runtime_env=env).as_completed(where, [1]):
            os.kill(os.getpid(), signal.SIGTERM)  # with Ray connected: still ours, not Ray's
            own.append(done)
    finally:
        signal.signal(signal.SIGTERM, previous)
        os.environ["HOME"], sys.stderr = saved_home, saved_err
        logging.getLogger().removeHandler(handler)
    left_running = ray_is_initialized()
    ray = Path(sys.executable).parent / "ray"
    started = subprocess.run(
        [
            str(ray),
            "start",
            "--head",
            "--num-cpus=1",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert started.returncode == 0, started.stdout + started.stderr
    joined = list(RayExecutor().as_completed(where, [1, 2], options={"address": "auto"}))
    return {
        "own": own,
        "left_running": left_running,
        "joined": joined,
        "after": ray_is_initialized(),
        "stderr": err.getvalue(),
        "ray_records": [r.getMessage() for r in records if r.name.startswith("ray")],
        "auth_env": os.environ.get("RAY_AUTH_TOKEN"),
        "terms": terms,
    }


def test_default_starts_its_own_instance_and_address_joins_a_cluster(tmp_path: Path) -> None:
    """Also (issue #34): a local instance writes nothing into the user's home (Ray 2.5x wrote
    ~/.ray/auth_token) and prints nothing: Ray's log lines go to the application's logging."""
    host = open_host()
    home = tmp_path / "home"
    home.mkdir()
    try:
        got = host.call(own_instance_then_a_started_cluster, str(home))
        leftover = host.processes()
    finally:
        host.close()
    (own,) = got["own"]
    assert own.result["probe"] == "yes" and own.result["worker"] == "127.0.0.1"  # runtime_env
    assert got["left_running"] is False and got["after"] is False
    clusters = {d.result["cluster"] for d in got["joined"]}
    assert clusters == {"127.0.0.1:6379"}, got["joined"]  # the `ray start` one, not a new one
    assert {d.result["probe"] for d in got["joined"]} == {None}
    assert leftover, "the `ray start` cluster should still be running until the host closed"
    assert host.processes() == []  # closing the host ended them
    assert list(home.iterdir()) == [], "Ray wrote into the user's home"
    assert got["auth_env"] is None  # the instance's own token left with it
    assert got["stderr"] == "", got["stderr"]
    assert got["ray_records"], "Ray's records should reach the application's logging"
    assert got["terms"] == [signal.SIGTERM]  # the application's SIGTERM handler survived Ray


def test_the_overhead_benchmark_runs_and_reports_a_speedup(tmp_path: Path) -> None:
    bench = Path(__file__).resolve().parents[3] / "bench" / "executor_overhead.py"
    out = tmp_path / "summary.json"
    args = ["--tasks", "20", "--sleep-tasks", "2", "--cpus", "2", "--json", str(out)]
    done = subprocess.run(
        [sys.executable, str(bench), *args], capture_output=True, text=True, timeout=300
    )
    if done.returncode == 2 and "network namespace" in done.stderr:
        pytest.skip(done.stderr.strip())
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    summary = json.loads(out.read_text())
    assert summary["tasks"] == 20 and summary["startup_s"] > 0
    assert summary["overhead_ms_per_task"] < 1000
    assert summary["speedup"] > 1.3, summary  # two 1-s jobs side by side on two CPUs
