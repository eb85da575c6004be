"""The workspace kit (the eval prompt, the train loader) and the scripted recipe's SFT rows,
which must be in exactly the prompt format the evaluator uses."""

from __future__ import annotations

import importlib
import sys
from importlib.resources import files
from pathlib import Path

import pytest
from autorl_task_alpacaeval import kit
from autorl_task_alpacaeval.task import AlpacaEvalTask

from autorl.types import TaskContext


def test_prompt_is_the_instruction_alone_with_an_optional_input() -> None:
    assert kit.build_messages("  Say hi. ") == [{"role": "user", "content": "Say hi."}]
    assert kit.prompt_text("Translate.", "Bonjour") == "Translate.\n\nBonjour"


def test_load_train_reads_the_workspace_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepared = AlpacaEvalTask().prepare(TaskContext(cache_dir=tmp_path / "cache"))
    (tmp_path / "ws" / "data").mkdir(parents=True)
    (tmp_path / "ws" / "data" / "train.jsonl").write_bytes(prepared.train_files[0].read_bytes())
    monkeypatch.setenv("AUTORL_WORKSPACE", str(tmp_path / "ws"))
    rows = kit.load_train()
    assert len(rows) == 131 and {"instruction", "input", "output"} <= set(rows[0])
    monkeypatch.setenv("AUTORL_WORKSPACE", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="train split not found"):
        kit.load_train()


def test_recipe_trains_on_the_eval_prompt_format(monkeypatch: pytest.MonkeyPatch) -> None:
    import autorl_agent_scripted.agent as agent  # the common helpers

    assert "alpacaeval" in agent.available_recipes()
    here = files("autorl_task_alpacaeval") / "recipe"  # the recipe this package ships
    assert agent.recipe_dir("alpacaeval") == here
    for path in (agent.COMMON, here):
        monkeypatch.syspath_prepend(str(path))
    for name in ("recipe", "recipe_common", "rounds", "training"):
        sys.modules.pop(name, None)
    recipe = importlib.import_module("recipe")
    try:
        rows = recipe.sft_rows(
            kit,
            [
                {"instruction": "List two fruits.", "input": "", "output": " - Apple\n- Pear "},
                {"instruction": "Translate.", "input": "Hola", "output": "Hello"},
                {"instruction": "Empty answer", "input": "", "output": "  "},
            ],
        )
        assert rows == [
            {
                "prompt": kit.build_messages("List two fruits."),
                "completion": [{"role": "assistant", "content": "- Apple\n- Pear"}],
            },
            {
                "prompt": kit.build_messages("Translate.", "Hola"),
                "completion": [{"role": "assistant", "content": "Hello"}],
            },
        ]
        args = recipe.parse_args(["--rounds", "1", "--epochs", "0.5"])
        assert (args.mode, args.rounds, args.epochs) == ("lora", 1, 0.5)
    finally:
        for name in ("recipe", "recipe_common", "rounds", "training"):
            sys.modules.pop(name, None)
