"""No eval session reaches the agent: a workspace built by the run engine holds no eval id or
instruction in any file, and the kit's environment refuses every eval id."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from autorl_grading.component import Grading
from autorl_runner.workspace import build_workspace, instructions, make_writable
from autorl_task_webshop.catalog import load_goals
from autorl_task_webshop.task import DATA_DIR, WebShopTask

from autorl.types import TaskContext


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("leak")
    prepared = WebShopTask().prepare(TaskContext(cache_dir=root / "cache", options={}))
    model = root / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    workspace = root / "workspace"
    build_workspace(workspace, prepared, model)
    (workspace / "instructions.md").write_text(
        instructions(
            task="webshop",
            metric=prepared.metric,
            budget_seconds=60,
            has_kit=prepared.kit_dir is not None,
            grading=Grading().instructions(
                url="http://127.0.0.1:9", max_submissions=3, protocol="sealed"
            ),
        )
    )
    yield workspace, load_goals(prepared.eval_path), load_goals(prepared.train_files[0])
    make_writable(workspace)


def test_no_file_of_the_workspace_holds_an_eval_id_or_instruction(workspace) -> None:
    root, prepared_evals, train = workspace
    evals = load_goals(DATA_DIR / "goals_eval.json")  # every shipped eval goal, used or not
    assert {g.session_id for g in prepared_evals} <= {g.session_id for g in evals}
    assert (root / "kit" / "autorl_kit.py").is_file()
    # rglob does not enter models/base (a link to the base model, outside the workspace)
    files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    assert len(files) >= 10, files
    for path in files:
        text = path.read_bytes().decode("utf-8", errors="replace").lower()
        for goal in evals:
            assert goal.session_id.lower() not in text, (path, goal.session_id)
            assert goal.instruction.lower() not in text, (path, goal.instruction)
    # the scan can find what it looks for: the train goals are there
    data = (root / "data" / "train.jsonl").read_text().lower()
    assert train[0].session_id.lower() in data and train[0].instruction.lower() in data


def test_the_kit_env_refuses_every_eval_id(workspace) -> None:
    root, evals, train = workspace
    script = (
        "import json, sys; sys.path.insert(0, 'kit'); import autorl_kit as kit\n"
        "env = kit.make_env(); refused = 0\n"
        "for sid in json.loads(sys.argv[1]):\n"
        "    try: env.reset(sid)\n"
        "    except KeyError: refused += 1\n"
        "env.reset(env.session_ids[0])\n"
        "print(json.dumps({'refused': refused, 'train': len(env.session_ids)}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps([g.session_id for g in evals])],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"refused": len(evals), "train": len(train)}
