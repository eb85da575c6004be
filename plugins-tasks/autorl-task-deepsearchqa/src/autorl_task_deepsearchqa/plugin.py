"""Entry point: the `deepsearchqa` task and its search backends (no heavy imports here)."""

from __future__ import annotations

from autorl_task_common.spec import task_spec

from autorl import hookimpl
from autorl.specs import SearchBackendSpec, TaskSpec


@hookimpl
def autorl_register_tasks() -> list[TaskSpec]:
    return [
        task_spec(
            "deepsearchqa",
            "autorl_task_deepsearchqa.task:DeepSearchQATask",
            evaluator="rollout",
            contract="autorl_task_deepsearchqa.protocol",
            level="L3",
            metric="accuracy",
            summary="search agent (DeepSearchQA): search[...] then answer[...] on multi-hop "
            "questions, max 6 steps; accuracy by a rule judge (offline) or an LLM judge; "
            "shipped encyclopedia with 100 train / 100 held-out questions, "
            "google/deepsearchqa with task option data_path",
        )
    ]


@hookimpl
def autorl_register_search_backends() -> list[SearchBackendSpec]:
    return [
        SearchBackendSpec(
            name="bm25",
            factory="autorl_task_deepsearchqa.search_backends:Bm25SearchBackend",
            description="offline BM25 (rank_bm25) over the shipped encyclopedia or a corpus "
            "file (option corpus_path)",
            options={"network": False},
        ),
        SearchBackendSpec(
            name="brave",
            factory="autorl_task_deepsearchqa.search_backends:BraveSearchBackend",
            description="Brave Search web API over httpx; key BRAVE_API_KEY from the harness "
            "environment (online only)",
            options={"network": True, "key_env": "BRAVE_API_KEY"},
        ),
    ]
