"""A submission is weights (issue #30, items 1-4): the real grading service and the real exact
evaluator on the tiny model, with checkpoints an agent could write.

- a normal checkpoint scores exactly as it did when its own directory was evaluated;
- a chat template that raises the held-out question, a generation config that picks beam search,
  an index that points at the base's weights beside a decoy, a config that changes the
  architecture: none decides how the submission is graded, and no reason carries eval text;
- an evaluation that runs past its deadline fails with ``evaluation_timeout``;
- the distance to the base is measured on the graded tensors and recorded.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import autorl_model_tiny  # noqa: F401
import pytest
from autorl_evaluator_code.contract import CODE
from autorl_evaluator_exact.contract import ANSWER
from autorl_evaluator_exact.evaluator import ExactMatchEvaluator
from autorl_evaluator_rollout.contract import INTERACTIVE
from autorl_grading.checkpoints import hash_weights
from autorl_grading.graded import assemble
from autorl_grading.service import GradingService
from autorl_model_tiny.model import TinyModel
from autorl_runner.budget import BudgetClock
from autorl_runner.records_io import SubmissionLog, read_submission_log
from autorl_runner.scoring import with_deadline

from autorl.contracts import load_contract
from autorl.types import EvalRequest

pytestmark = pytest.mark.e2e  # trains checkpoints and scores them with the real evaluators

EXACT_TESTS = Path(__file__).parents[1] / "plugins-evaluators/autorl-evaluator-exact/tests"
QUESTIONS = [(2, 3), (4, 5), (1, 1), (7, 2), (12, 30), (3, 6), (8, 8), (5, 9)]
SECRET = "What is 12 + 30?"
"""An eval question: no reason the agent reads may contain it."""


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return TinyModel().materialize(tmp_path_factory.mktemp("models")).path


@pytest.fixture(scope="module")
def eval_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "eval.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": f"e{i}", "question": f"What is {a} + {b}?", "answer": str(a + b)})
            + "\n"
            for i, (a, b) in enumerate(QUESTIONS)
        )
    )
    return path


def evaluate(model_dir: Path, eval_path: Path, work: Path, base: Path, progress: Any = None):
    sys.path.insert(0, str(EXACT_TESTS))
    try:
        contract = load_contract(ANSWER, "addition_protocol")
    finally:
        sys.path.remove(str(EXACT_TESTS))
    return ExactMatchEvaluator().evaluate(
        EvalRequest(
            model_dir=model_dir,
            eval_path=eval_path,
            config={"max_new_tokens": 24, "batch_size": 4},
            work_dir=work,
            progress=progress,
            contract=contract,
            base_model_dir=base,
        )
    )


def trained(base: Path, out: Path, scale: float = 0.02, seed: int = 0) -> Path:
    """What an agent saves: the base loaded, its weights moved, saved with save_pretrained."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=generator) * scale * p.abs().mean())
    model.save_pretrained(str(out))
    AutoTokenizer.from_pretrained(str(base)).save_pretrained(str(out))
    return out


class Grader:
    """The real service, evaluating the graded directory with the real exact evaluator."""

    def __init__(self, root: Path, base: Path, eval_path: Path, **kwargs: Any) -> None:
        self.workspace = root / "workspace"
        (self.workspace / "output").mkdir(parents=True)
        (self.workspace / "code").mkdir()
        self.graded: dict[int, dict[str, str]] = {}
        self.log_path = root / "submissions.jsonl"
        clock = BudgetClock(600)
        clock.start()
        self.slow = kwargs.pop("slow", None)

        def run(sid: int, graded: Path, info: Any) -> tuple[float, dict[str, Any]]:
            self.graded[sid] = {p.name: p.read_text() for p in graded.glob("*.json*")}
            progress = with_deadline(self.slow, 0.5) if self.slow else None
            result = evaluate(graded, eval_path, root / f"work{sid}", base, progress)
            details = (result.details_path.read_text() if result.details_path else "")[:100_000]
            return result.score, {"n": result.n, "details_text": details}

        self.service = GradingService(
            workspace=self.workspace,
            storage=root / "submissions",
            log=SubmissionLog(self.log_path),
            clock=clock,
            max_submissions=8,
            baseline_score=0.0,
            base_weight_hash=hash_weights(base),
            evaluate=run,
            base_dir=base,
            **kwargs,
        )

    def submit(self, name: str) -> dict[str, Any]:
        return self.service.submit(f"output/{name}", wait=True, timeout=300)

    def entries(self, sid: int) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for entry in read_submission_log(self.log_path):
            if entry["submission_id"] == sid:
                merged.update(entry)
        return merged

    def close(self) -> None:
        self.service.close()


@pytest.fixture
def grader(tmp_path: Path, base: Path, eval_path: Path):
    g = Grader(tmp_path, base, eval_path)
    yield g
    g.close()


def test_a_normal_checkpoint_scores_as_its_own_directory_did(
    grader: Grader, base: Path, eval_path: Path, tmp_path: Path
) -> None:
    ckpt = trained(base, grader.workspace / "output" / "v1")
    before = evaluate(ckpt, eval_path, tmp_path / "direct", base)
    view = grader.submit("v1")
    assert view["status"] == "scored", view
    assert view["score"] == before.score
    after = grader.entries(1)
    assert after["details_text"] == before.details_path.read_text()
    # the distance to the base, measured on the graded tensors
    assert 0 < after["base_distance"] < 0.2 and after["fingerprint_problem"] is None
    assert after["tensors_changed"] == after["tensors_total"] > 0
    assert after["graded_files"] == ["model.safetensors"]


def test_the_checkpoints_template_and_generation_config_are_not_used(
    grader: Grader, base: Path
) -> None:
    ckpt = trained(base, grader.workspace / "output" / "v1")
    leak = "{{ raise_exception('LEAK:' ~ messages[-1]['content']) }}"
    (ckpt / "chat_template.jinja").write_text(leak)
    config = json.loads((ckpt / "tokenizer_config.json").read_text())
    (ckpt / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": leak}))
    (ckpt / "generation_config.json").write_text(
        json.dumps({"num_beams": 4, "min_new_tokens": 120, "max_new_tokens": 4096})
    )
    view = grader.submit("v1")
    assert view["status"] == "scored", view
    graded = grader.graded[1]
    assert graded["generation_config.json"] == (base / "generation_config.json").read_text()
    assert graded["config.json"] == (base / "config.json").read_text()
    assert "LEAK" not in json.dumps(graded)


def test_an_own_tokenizer_template_that_raises_eval_text_leaks_nothing(
    tmp_path: Path, base: Path, eval_path: Path
) -> None:
    g = Grader(tmp_path, base, eval_path, tokenizer="own")
    try:
        ckpt = trained(base, g.workspace / "output" / "v1")
        (ckpt / "chat_template.jinja").write_text(
            "{{ raise_exception('LEAK:' ~ messages[-1]['content']) }}"
        )
        view = g.submit("v1")
        assert view["status"] == "failed"
        assert view["reason"].startswith("evaluation_failed:"), view["reason"]
        assert "LEAK" not in json.dumps(g.service.all()) and SECRET not in json.dumps(view)
        assert "LEAK:" in g.entries(1)["error"]  # the harness keeps the text for its reader
    finally:
        g.close()


def test_the_base_behind_an_index_beside_a_decoy_is_a_copy_of_the_base(
    grader: Grader, base: Path
) -> None:
    out = grader.workspace / "output" / "v1"
    decoy = trained(base, grader.workspace / "output" / "decoy")
    out.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(base / name, out / name)
    shutil.copy(base / "model.safetensors", out / "w.safetensors")
    shutil.copy(decoy / "model.safetensors", out / "model-decoy.safetensors")
    from safetensors import safe_open

    with safe_open(str(out / "w.safetensors"), "numpy") as f:
        names = list(f.keys())
    index = {"metadata": {}, "weight_map": dict.fromkeys(names, "w.safetensors")}
    (out / "model.safetensors.index.json").write_text(json.dumps(index))
    view = grader.submit("v1")
    assert view["copy_of_base"] is True and view["reason"].startswith("copy_of_base:"), view


def test_a_config_that_changes_the_architecture_is_refused(grader: Grader, base: Path) -> None:
    ckpt = trained(base, grader.workspace / "output" / "v1")
    config = json.loads((ckpt / "config.json").read_text())
    (ckpt / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 2}))
    view = grader.submit("v1")
    assert view["status"] == "failed"
    assert view["reason"].startswith("config_changes_architecture:")
    assert "'num_hidden_layers'" in view["reason"]
    ckpt2 = trained(base, grader.workspace / "output" / "v2", seed=1)
    (ckpt2 / "config.json").write_text(
        json.dumps({**config, "auto_map": {"AutoModelForCausalLM": "evil.Model"}})
    )
    view = grader.submit("v2")
    assert view["status"] == "failed" and "remote code" in view["reason"]


def test_an_evaluation_past_its_deadline_fails_with_evaluation_timeout(
    tmp_path: Path, base: Path, eval_path: Path
) -> None:
    g = Grader(tmp_path, base, eval_path, slow=lambda done, total: time.sleep(0.4))
    try:
        trained(base, g.workspace / "output" / "v1")
        started = time.monotonic()
        view = g.submit("v1")
        assert view["status"] == "failed"
        assert view["reason"].startswith("evaluation_timeout:"), view["reason"]
        assert time.monotonic() - started < 60
    finally:
        g.close()


def test_own_tokenizer_mode_grades_with_the_checkpoints_tokenizer(
    tmp_path: Path, base: Path
) -> None:
    ckpt = trained(base, tmp_path / "ckpt")
    (ckpt / "chat_template.jinja").write_text("{{ messages[-1]['content'] }}")
    own = assemble(ckpt, base, tmp_path / "own", tokenizer="own")
    mine = assemble(ckpt, base, tmp_path / "base", tokenizer="base")
    assert (own / "chat_template.jinja").read_text() == "{{ messages[-1]['content'] }}"
    assert (mine / "chat_template.jinja").read_text() == (base / "chat_template.jinja").read_text()


def _details(result: Any) -> list[Any]:
    return [json.loads(line) for line in result.details_path.read_text().splitlines()]


def test_a_humaneval_checkpoint_scores_as_its_own_directory_did(base: Path, tmp_path: Path) -> None:
    """The code evaluator (generated programs executed in its sandbox) on the graded directory
    gives the same programs and outcomes as on the checkpoint's own directory."""
    import autorl_task_humaneval.data as data
    from autorl_evaluator_code.evaluator import CodeEvaluator

    ckpt = trained(base, tmp_path / "ckpt", seed=3)
    graded = assemble(ckpt, base, tmp_path / "graded")
    eval_path = tmp_path / "eval.jsonl"
    eval_path.write_text("".join(json.dumps(r) + "\n" for r in data.load_problems()[82:86]))

    def run(model_dir: Path, work: str) -> Any:
        return CodeEvaluator().evaluate(
            EvalRequest(
                model_dir=model_dir,
                eval_path=eval_path,
                # 30 s: with 5 one program, an assertion failing at once, was killed as a timeout
                # in one of the two evaluations on a loaded machine (CI) and failed in the other
                config={"max_new_tokens": 24, "batch_size": 4, "timeout_s": 30.0},
                work_dir=tmp_path / work,
                contract=load_contract(CODE, "autorl_task_humaneval.kit"),
            )
        )

    before, after = run(ckpt, "direct"), run(graded, "graded")
    assert after.score == before.score
    strip = [
        [{k: v for k, v in s.items() if k != "seconds"} for s in d["samples"]]
        for d in _details(before)
    ]
    assert strip == [
        [{k: v for k, v in s.items() if k != "seconds"} for s in d["samples"]]
        for d in _details(after)
    ]


def test_a_lora_adapter_scores_as_its_own_directory_did(
    base: Path, eval_path: Path, tmp_path: Path
) -> None:
    """An adapter (PeftModel.save_pretrained) is graded as the adapter and config alone, merged
    onto the base: same outputs as merging its own directory."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    peft = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    with torch.no_grad():
        for name, p in peft.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05, generator=torch.Generator().manual_seed(1))
    adapter = tmp_path / "adapter"
    peft.save_pretrained(str(adapter))
    AutoTokenizer.from_pretrained(str(base)).save_pretrained(str(adapter))
    graded = assemble(adapter, base, tmp_path / "graded")
    assert sorted(p.name for p in graded.iterdir()) == [
        "adapter_config.json",
        "adapter_model.safetensors",
    ]
    before = evaluate(adapter, eval_path, tmp_path / "direct", base)
    after = evaluate(graded, eval_path, tmp_path / "graded-work", base)
    assert after.score == before.score
    assert after.details_path.read_text() == before.details_path.read_text()


def test_a_webshop_checkpoint_plays_as_its_own_directory_did(base: Path, tmp_path: Path) -> None:
    """The rollout evaluator (the default run's task, real WebShop sessions) on the graded
    directory plays the same episodes as on the checkpoint's own directory."""
    from autorl_evaluator_rollout.evaluator import RolloutEvaluator
    from autorl_task_webshop.task import DATA_DIR

    ckpt = trained(base, tmp_path / "ckpt", seed=5)
    graded = assemble(ckpt, base, tmp_path / "graded")

    def run(model_dir: Path, work: str) -> Any:
        return RolloutEvaluator().evaluate(
            EvalRequest(
                model_dir=model_dir,
                eval_path=DATA_DIR / "goals_eval.json",
                contract=load_contract(INTERACTIVE, "autorl_task_webshop.protocol"),
                config={"max_new_tokens": 24, "batch_size": 4, "max_steps": 4, "limit": 6},
                work_dir=tmp_path / work,
            )
        )

    before, after = run(ckpt, "direct"), run(graded, "graded")
    assert after.score == before.score
    drop = {"seconds", "episodes_per_second", "load_seconds"}
    assert {k: v for k, v in after.metrics.items() if k not in drop} == {
        k: v for k, v in before.metrics.items() if k not in drop
    }
    assert after.details_path.read_text() == before.details_path.read_text()
