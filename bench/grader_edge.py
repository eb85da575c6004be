"""What "a submission is weights" costs: intake and evaluation, before and after, in one run.

Before (the naive way, what the grader did until issue #30): copy the checkpoint, validate and
hash it, evaluate its own directory. After: the same, plus the architecture check and the graded
directory (the base's config, tokenizer and generation config around the hard-linked weights),
plus the distance to the base on the graded tensors; the evaluation reads the graded directory.
A "trained" checkpoint (the base with its weights moved, saved with save_pretrained) is taken in
``--repeats`` times each way, alternating; the evaluation is greedy generation of ``--prompts``
chat prompts through the grader's model layer (``autorl_hf.generation.Generator``), and the
outputs of both ways are compared.

    python bench/grader_edge.py [--model smollm2-135m] [--repeats 5] [--prompts 16] [--json F]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from benchlib import registry_model, write_json


def trained(base: Path, out: Path) -> Path:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=generator) * 0.01 * p.abs().mean())
    model.save_pretrained(str(out))
    AutoTokenizer.from_pretrained(str(base)).save_pretrained(str(out))
    return out


def intake(workspace: Path, source: Path, storage: Path, base: Path, graded: bool) -> float:
    from autorl_grading.checkpoints import copy_checkpoint, validate
    from autorl_grading.graded import assemble, check_config

    shutil.rmtree(storage, ignore_errors=True)
    began = time.perf_counter()
    dest = storage / "checkpoint"
    copy_checkpoint(source, dest, workspace)
    validate(dest)
    if graded:
        check_config(dest, base)
        assemble(dest, base, storage / "graded")
    return time.perf_counter() - began


def evaluate(model_dir: Path, prompts: list[list[dict[str, str]]]) -> tuple[float, list[str]]:
    from autorl_hf.generation import Generator

    began = time.perf_counter()
    outputs = Generator(model_dir, device="cpu").generate(prompts, max_new_tokens=32)
    return time.perf_counter() - began, outputs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    base = registry_model(args.model)
    if base is None:
        return 2
    from autorl_grading.fingerprint import observe

    prompts = [
        [{"role": "user", "content": f"What is {i} + {2 * i + 1}? Answer with a number."}]
        for i in range(args.prompts)
    ]
    with tempfile.TemporaryDirectory(prefix="autorl-bench-") as tmp:
        root = Path(tmp)
        workspace = root / "workspace"
        source = trained(base, workspace / "output" / "v1")
        times: dict[str, list[float]] = {"before": [], "after": []}
        for _ in range(args.repeats):
            for way in ("before", "after"):
                storage = root / "storage" / way
                times[way].append(intake(workspace, source, storage, base, way == "after"))
        began = time.perf_counter()
        fingerprint = observe(root / "storage" / "after" / "graded", base)
        fingerprint_s = time.perf_counter() - began
        evals: dict[str, list[float]] = {"before": [], "after": []}
        outputs: dict[str, list[str]] = {}
        dirs = {"before": "before/checkpoint", "after": "after/graded"}
        for _ in range(2):  # alternated, best of two each: the machine's load moves
            for way, sub in dirs.items():
                seconds, outputs[way] = evaluate(root / "storage" / sub, prompts)
                evals[way].append(seconds)
        eval_before, eval_after = min(evals["before"]), min(evals["after"])
        out_before, out_after = outputs["before"], outputs["after"]
    median = {way: statistics.median(values) for way, values in times.items()}
    summary: dict[str, Any] = {
        "model": args.model,
        "intake_before_s": round(median["before"], 3),
        "intake_after_s": round(median["after"], 3),
        "intake_ratio": round(median["after"] / median["before"], 3),
        "fingerprint_s": round(fingerprint_s, 3),
        "base_distance": fingerprint.get("base_distance"),
        "eval_before_s": round(eval_before, 3),
        "eval_after_s": round(eval_after, 3),
        "eval_ratio": round(eval_after / eval_before, 3),
        "outputs_identical": sum(a == b for a, b in zip(out_before, out_after, strict=True)),
        "prompts": len(prompts),
    }
    print(f"model {args.model}, {args.repeats} intakes each way (median), {len(prompts)} prompts")
    print(
        f"intake: before {summary['intake_before_s']} s, after {summary['intake_after_s']} s "
        f"(x{summary['intake_ratio']}); distance to the base on the eval thread "
        f"{summary['fingerprint_s']} s"
    )
    print(
        f"evaluation: before {summary['eval_before_s']} s, after {summary['eval_after_s']} s "
        f"(best of two each, x{summary['eval_ratio']}); outputs identical "
        f"{summary['outputs_identical']}/{len(prompts)}"
    )
    write_json(args.json, summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
