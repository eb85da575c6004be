"""No eval question reaches the agent: a workspace built by the run engine holds no eval id,
question text or eval answer list in any file, and the kit's environment refuses every eval id."""

from __future__ import annotations

import json

import pytest
from autorl_task_deepsearchqa.corpus import load_questions
from autorl_task_deepsearchqa.task import DeepSearchQATask
from autorl_testing.workspace import REFUSES, built_workspace, run_kit, workspace_texts


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("leak")
    with built_workspace(DeepSearchQATask(), "deepsearchqa", root) as (workspace, prepared):
        yield workspace, load_questions(prepared.eval_path), load_questions(prepared.train_files[0])


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
    texts = workspace_texts(root)
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
    out = run_kit(root, REFUSES, json.dumps([q.session_id for q in evals]))
    assert out == {"refused": len(evals), "train": len(train)}
