"""OpenMP threads spinning or sleeping while they wait: torch processes sharing too few cores.

    python bench/omp_wait.py [--processes 3] [--steps 25]

A test suite (three workers on two cores), a campaign's cells or a run's grader beside its agent
start several torch processes of two threads each on the same cores. GNU OpenMP's threads spin
for a while at every barrier before they sleep (``OMP_WAIT_POLICY`` unset or ``ACTIVE``):
the spinning ones take the cores the working ones wait for. This starts ``--processes`` small
trainings at once (a 4-layer Qwen2-shaped model in fp32: training steps, then greedy
generation), once with the default policy and once with ``PASSIVE``, then one alone each way,
and prints wall and CPU seconds and their ratios, measured in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

WORK = """
import sys, torch
from transformers import Qwen2Config, Qwen2ForCausalLM
torch.manual_seed(0)
cfg = Qwen2Config(vocab_size=8000, hidden_size=256, intermediate_size=704, num_hidden_layers=4,
                  num_attention_heads=4, num_key_value_heads=2)
model = Qwen2ForCausalLM(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randint(0, 8000, (4, 96))
for _ in range(int(sys.argv[1])):
    model(input_ids=x, labels=x).loss.backward()
    opt.step()
    opt.zero_grad()
model.eval()
with torch.no_grad():
    for _ in range(4):
        model.generate(x[:, :16], max_new_tokens=32, do_sample=False, pad_token_id=0)
"""


def run(processes: int, steps: int, policy: str | None) -> dict[str, float]:
    """Wall seconds of ``processes`` trainings started at once, and their CPU seconds."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    before = os.times()
    started = time.monotonic()
    procs = [
        subprocess.Popen([sys.executable, "-c", WORK, str(steps)], env=env)
        for _ in range(processes)
    ]
    if any(p.wait() != 0 for p in procs):
        raise SystemExit("a training process failed")
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return {"wall_s": round(time.monotonic() - started, 2), "cpu_s": round(cpu, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--steps", type=int, default=25)
    args = parser.parse_args(argv)
    summary: dict[str, dict[str, float]] = {}
    for label, n in ((f"{args.processes} at once", args.processes), ("alone", 1)):
        spin, sleep = run(n, args.steps, None), run(n, args.steps, "PASSIVE")
        summary[label] = {
            "spinning_wall_s": spin["wall_s"],
            "spinning_cpu_s": spin["cpu_s"],
            "passive_wall_s": sleep["wall_s"],
            "passive_cpu_s": sleep["cpu_s"],
            "wall_ratio": round(spin["wall_s"] / sleep["wall_s"], 2),
            "cpu_ratio": round(spin["cpu_s"] / sleep["cpu_s"], 2),
        }
        print(
            f"{label}: default {spin['wall_s']:.1f} s wall, {spin['cpu_s']:.1f} CPU-s; PASSIVE "
            f"{sleep['wall_s']:.1f} s, {sleep['cpu_s']:.1f} CPU-s "
            f"({summary[label]['wall_ratio']}x wall, {summary[label]['cpu_ratio']}x CPU)"
        )
    print(json.dumps({"cores": os.cpu_count(), **summary}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
