"""No eval session reaches the agent: a workspace built by the run engine holds no eval id or
instruction in any file, and the kit's environment refuses every eval id."""

from __future__ import annotations

import json

import pytest
from autorl_task_webshop.catalog import load_goals
from autorl_task_webshop.task import DATA_DIR, WebShopTask
from autorl_testing.workspace import REFUSES, built_workspace, run_kit, workspace_texts


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("leak")
    with built_workspace(WebShopTask(), "webshop", root) as (workspace, prepared):
        yield workspace, load_goals(prepared.eval_path), load_goals(prepared.train_files[0])


def test_no_file_of_the_workspace_holds_an_eval_id_or_instruction(workspace) -> None:
    root, prepared_evals, train = workspace
    evals = load_goals(DATA_DIR / "goals_eval.json")  # every shipped eval goal, used or not
    assert {g.session_id for g in prepared_evals} <= {g.session_id for g in evals}
    assert (root / "kit" / "autorl_kit.py").is_file()
    # models/base is a link to the base model, outside the workspace: not followed
    for path, text in workspace_texts(root).items():
        for goal in evals:
            assert goal.session_id.lower() not in text, (path, goal.session_id)
            assert goal.instruction.lower() not in text, (path, goal.instruction)
    # the scan can find what it looks for: the train goals are there
    data = (root / "data" / "train.jsonl").read_text().lower()
    assert train[0].session_id.lower() in data and train[0].instruction.lower() in data


def test_the_kit_env_refuses_every_eval_id(workspace) -> None:
    root, evals, train = workspace
    out = run_kit(root, REFUSES, json.dumps([g.session_id for g in evals]))
    assert out == {"refused": len(evals), "train": len(train)}
