"""The conformance kit fails a task whose prepare for another seed or option changes a split
prepared before (issue 30, attack 10), and passes one that writes where the harness says."""

from __future__ import annotations

from pathlib import Path

import pytest
from autorl_testing import TaskConformance
from autorl_testing.helpers import task_plugin_source

PREPARE = r"""
out = {where}
out.mkdir(parents=True, exist_ok=True)
rows = [{{"q": str(i), "a": str(i)}} for i in range(10)]
random.Random(ctx.seed).shuffle(rows)
size = int(ctx.options.get("eval_size", 3))
train, eval_path = out / "train.jsonl", out / "eval.jsonl"
train.write_text("".join(json.dumps(r) + "\n" for r in rows[size:]))
eval_path.write_text("".join(json.dumps(r) + "\n" for r in rows[:size]))
"""


def _checker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> TaskConformance:
    module = f"keying_{abs(hash(where))}"
    name = module.replace("_", "-")
    source = task_plugin_source(name, module, PREPARE.format(where=where))
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))

    class Check(TaskConformance):
        plugin_module = module
        other_task_options = {"eval_size": 2}

    return Check()


def test_kit_passes_a_task_that_writes_into_its_keyed_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check = _checker(tmp_path, monkeypatch, "ctx.cache_dir")
    check.test_another_seed_or_option_leaves_a_prepared_split_alone(tmp_path / "t")


@pytest.mark.parametrize("where", ["ctx.cache_dir.parent", "ctx.cache_dir.parent / 'shared'"])
def test_kit_fails_a_task_that_shares_one_directory_across_seeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    check = _checker(tmp_path, monkeypatch, where)
    with pytest.raises(AssertionError, match=r"preparing seed 1 .* changed the split"):
        check.test_another_seed_or_option_leaves_a_prepared_split_alone(tmp_path / "t")
