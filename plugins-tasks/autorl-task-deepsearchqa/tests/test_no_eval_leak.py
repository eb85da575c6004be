"""No eval question reaches the agent: a workspace built by the run engine holds no eval id,
question text or eval answer list in any file, and the kit's environment refuses every eval id."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from autorl_grading.component import Grading
from autorl_runner.workspace import build_workspace, instructions, make_writable
from autorl_task_deepsearchqa.corpus import load_questions
from autorl_task_deepsearchqa.task import DeepSearchQATask

from autorl.types import TaskContext


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("leak")
    prepared = DeepSearchQATask().prepare(TaskContext(cache_dir=root / "cache", options={}))
    model = root / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    workspace = root / "workspace"
    build_workspace(workspace, prepared, model)
    (workspace / "instructions.md").write_text(
        instructions(
            task="deepsearchqa",
            metric=prepared.metric,
            budget_seconds=60,
            has_kit=prepared.kit_dir is not None,
            grading=Grading().instructions(
                url="http://127.0.0.1:9", max_submissions=3, protocol="sealed"
            ),
        )
    )
    (workspace / "description.md").write_text(prepared.description)
    yield workspace, load_questions(prepared.eval_path), load_questions(prepared.train_files[0])
    make_writable(workspace)


def _needles(question, corpus: bool = False) -> list[str]:
    """What must not appear: id, question, and a set answer as a gold list. The corpus (shared,
    documents only) may state the same facts as prose, e.g. a river entry listing its cities."""
    needles = [question.session_id, question.question]
    if question.answer_type == "set":
        needles.append(json.dumps(list(question.answer)))
        if not corpus:
            needles.append(", ".join(question.answer))
    return [n.lower() for n in needles]


def test_no_file_of_the_workspace_holds_an_eval_question(workspace) -> None:
    root, evals, train = workspace
    assert len(evals) == 100 and (root / "kit" / "autorl_kit.py").is_file()
    files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    assert len(files) >= 10, files
    texts = {p: p.read_bytes().decode("utf-8", errors="replace").lower() for p in files}
    for question in evals:
        for path, text in texts.items():
            for needle in _needles(question, corpus=path.name == "corpus.json"):
                assert needle not in text, (path, needle)
    # the scan finds what it looks for: the train questions and their answer lists are there
    data = texts[root / "data" / "train.jsonl"]
    train_set = next(q for q in train if q.answer_type == "set")
    assert all(n in data for n in _needles(train_set, corpus=True))


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
        [sys.executable, "-c", script, json.dumps([q.session_id for q in evals])],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"refused": len(evals), "train": len(train)}
