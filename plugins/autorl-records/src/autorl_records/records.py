"""Read a run directory back into one immutable record, and derive the run's process metrics.

Everything here reads only files the harness wrote (``manifest.json``, ``baseline.json``,
``submissions.jsonl``, ``run.json``), never anything from the agent's workspace: the agent is
untrusted and nothing it can write may decide its score. Reading is tolerant because runs crash
and are listed while still running: a missing ``run.json`` or ``baseline.json``, or a torn last
line of the submissions log, gives a partial record with a note in ``RunRecord.problems``. Only a
missing or unreadable manifest is fatal: without it the directory is not a run.

The record is typed (pydantic, frozen) and versioned: ``RECORD_VERSION`` is what the engine
writes in the manifest; directories from before it (version 1: no contributions, no heartbeat,
no ``scoring`` block before the sealed protocol) are read as they are, the missing parts empty.
The definitions of the metrics are documented in ``docs/reports.md``; the layout in
``docs/architecture.md`` (the run record).
"""

from __future__ import annotations

import json
import math
from itertools import pairwise
from pathlib import Path
from typing import Any

from autorl_runner.records_io import read_submission_log
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from autorl.errors import AutorlError
from autorl_records.logs import driver_call_summary

RECORD_VERSION = 2
"""2: ``contributions/`` (plugins' results), ``run.json`` written while the agent runs
(``running``, the harness's pid, the agent's seconds). 1: everything before."""

FINAL_STATUSES: frozenset[str] = frozenset({"scored", "failed", "duplicate"})
"""A submission whose last status is not one of these is still pending (queued, evaluating)."""

SUMMARY_SCHEMA_VERSION = 2
"""2: the run's score as the harness sealed it (``protocol``, ``score``, ``baseline``...)."""

PROTOCOLS = ("sealed", "reference")
INFRA_ERROR = "infra_error"
"""The end reason of a run the harness, grader, sandbox, engine or driver upstream ended: not
an agent result (statistics leave it out, ``autorl campaign run --resume`` retries it)."""

_SUBMISSION_FIELDS = (
    "submission_id",
    "status",
    "time",
    "elapsed_s",
    "model_path",
    "score",
    "weight_hash",
    "code_revision",
    "copy_of_base",
    "reason",
    "duplicate_of",
    "eval_seconds",
    "n",
    "metrics",
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)


class Baseline(_Frozen):
    """The untouched base model's score on the held-out split (``baseline.json``)."""

    score: float | None
    n: int | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    cached: bool = False
    seconds: float | None = None


class SubmissionRecord(_Frozen):
    """One submission, folded from its status changes in ``submissions.jsonl``.

    ``time``/``elapsed_s`` are when the agent submitted it (the ``received`` entry): that is the
    agent's decision time, independent of how long the harness queue took. ``updated_*`` are the
    time of the last status change. ``fields`` holds every field ever logged for it (a later
    value overrides an earlier one, except that a later null never erases a value), so nothing
    the engine adds is lost.
    """

    submission_id: int
    status: str
    time: str | None = None
    elapsed_s: float | None = None
    updated_time: str | None = None
    updated_elapsed_s: float | None = None
    model_path: str | None = None
    score: float | None = None
    weight_hash: str | None = None
    code_revision: str | None = None
    copy_of_base: bool = False
    reason: str | None = None
    duplicate_of: int | None = None
    eval_seconds: float | None = None
    n: int | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    statuses: tuple[str, ...] = ()
    fields: dict[str, Any] = Field(default_factory=dict)

    @property
    def final(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def valid(self) -> bool:
        """Scored, or a duplicate of a scored checkpoint (a score exists and counts)."""
        return self.status in {"scored", "duplicate"} and self.score is not None


class RunInfo(_Frozen):
    """How the run ended (``run.json``, written when the run ends; while the agent runs it
    says ``running`` with the harness's ``pid`` and the agent's seconds so far)."""

    status: str
    started: str | None = None
    ended: str | None = None
    agent_seconds: float | None = None
    budget_seconds: float | None = None
    end_reason: str | None = None
    agent_exit_code: int | None = None
    error: str | None = None
    fields: dict[str, Any] = Field(default_factory=dict)


class Contribution(_Frozen):
    """A plugin's results about the run (``contributions/<name>.json``, written by the
    engine from the plugin's ``autorl_contribute_to_record``)."""

    name: str
    summary: dict[str, Any] = Field(default_factory=dict)
    data: dict[str, Any] = Field(default_factory=dict)
    banner_md: str = ""
    sections_md: str = ""


class RunRecord(_Frozen):
    """Everything the harness recorded about one run; partial while a run is in progress."""

    run_dir: Path
    manifest: dict[str, Any]
    baseline: Baseline | None
    submissions: tuple[SubmissionRecord, ...]
    run: RunInfo | None
    contributions: dict[str, Contribution] = Field(default_factory=dict)
    problems: tuple[str, ...] = ()

    @property
    def version(self) -> int:
        """The record's version (1 for a run from before versions were written)."""
        version = self.manifest.get("record_version")
        return version if isinstance(version, int) and not isinstance(version, bool) else 1

    @property
    def run_id(self) -> str:
        return str(self.manifest.get("run_id") or self.run_dir.name)

    @property
    def config(self) -> dict[str, Any]:
        cfg = self.manifest.get("config")
        return cfg if isinstance(cfg, dict) else {}

    @property
    def task(self) -> str | None:
        task = self.manifest.get("task")
        if isinstance(task, dict) and task.get("name"):
            return str(task["name"])
        return _str_or_none(self.config.get("task"))

    @property
    def agent(self) -> str | None:
        return _str_or_none(self.config.get("agent"))

    @property
    def model(self) -> str | None:
        return _str_or_none(self.config.get("model"))

    @property
    def driver(self) -> str | None:
        return _str_or_none(self.config.get("driver"))

    @property
    def status(self) -> str:
        """``run.json``'s status, or ``incomplete`` (still running, or the harness was killed)."""
        return self.run.status if self.run is not None else "incomplete"

    @property
    def budget_seconds(self) -> float | None:
        if self.run is not None and self.run.budget_seconds is not None:
            return self.run.budget_seconds
        budget = self.config.get("budget")
        if isinstance(budget, dict):
            return _float_or_none(budget.get("wall_seconds"))
        return None


# loading ------------------------------------------------------------------------------------------


def load_run(run_dir: Path | str) -> RunRecord:
    """Read a run directory; raise :class:`AutorlError` only when it is not a run at all."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise AutorlError(
            f"run directory not found: {run_dir}",
            hint="pass the directory of one run, e.g. runs/<run_id> (see 'autorl runs list')",
        )
    manifest_path = run_dir / "manifest.json"
    if not manifest_path.is_file():
        raise AutorlError(
            f"{run_dir} is not an autorl run directory: {manifest_path.name} is missing",
            hint="pass the directory of one run, e.g. runs/<run_id> (see 'autorl runs list'); "
            "a run that failed before writing its manifest has nothing to report",
        )
    manifest = _read_json_object(manifest_path)
    if isinstance(manifest, str):
        raise AutorlError(
            f"{manifest_path}: cannot read the run manifest: {manifest}",
            hint="the harness writes it atomically; restore it or remove this run directory",
        )
    problems: list[str] = []
    baseline = _load_baseline(run_dir / "baseline.json", problems)
    submissions = _load_submissions(run_dir / "submissions.jsonl", problems)
    run = _load_run_info(run_dir / "run.json", problems)
    contributions = _load_contributions(run_dir / CONTRIBUTIONS, problems)
    problems += trust_problems(manifest, run)
    return RunRecord(
        run_dir=run_dir,
        manifest=manifest,
        baseline=baseline,
        submissions=submissions,
        run=run,
        contributions=contributions,
        problems=tuple(problems),
    )


CONTRIBUTIONS = "contributions"


def _load_contributions(folder: Path, problems: list[str]) -> dict[str, Contribution]:
    """Each plugin's contribution, by name (sorted); an unreadable one is a problem."""
    found: dict[str, Contribution] = {}
    if not folder.is_dir():
        return found
    for path in sorted(folder.glob("*.json")):
        data = _read_json_object(path)
        if isinstance(data, str):
            problems.append(f"{CONTRIBUTIONS}/{path.name} {data}")
            continue
        try:
            item = Contribution.model_validate(data)
        except ValidationError as exc:
            problems.append(
                f"{CONTRIBUTIONS}/{path.name}: not a contribution ({exc.error_count()} errors)"
            )
            continue
        found[item.name] = item
    return found


def sandbox_of(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest's sandbox record; runs from before sandboxes were recorded ran ``local``."""
    info = manifest.get("sandbox")
    if isinstance(info, dict):
        return info
    cfg = manifest.get("config") if isinstance(manifest.get("config"), dict) else {}
    return {"name": cfg.get("sandbox", "local"), "isolated": False}


def grader_of(cfg: dict[str, Any]) -> dict[str, Any]:
    """How submissions were graded: whose tokenizer, and the evaluation deadline's terms
    (runs recorded before these settings existed graded with the checkpoint's own files)."""
    grader = cfg.get("grader") if isinstance(cfg.get("grader"), dict) else {}
    return {
        "tokenizer": grader.get("tokenizer", "checkpoint (recorded before graded directories)"),
        "eval_timeout_factor": grader.get("eval_timeout_factor"),
        "eval_timeout_margin_s": grader.get("eval_timeout_margin_s"),
    }


def trust_problems(manifest: dict[str, Any], run: RunInfo | None) -> list[str]:
    """Why this run's score may not be comparable: no boundary, a modified base model."""
    found = []
    sandbox = sandbox_of(manifest)
    if not sandbox.get("isolated"):
        found.append(
            f"sandbox {sandbox.get('name')!r} is not a boundary (development only): the agent "
            "could read and write the harness's files; this score is not comparable"
        )
    integrity = (run.fields.get("integrity") if run is not None else None) or {}
    if isinstance(integrity, dict) and integrity.get("base_model_modified"):
        found.append("the base model was modified during the run: this score is not comparable")
    return found


def comparable(record: RunRecord) -> bool:
    """True when the run was sandboxed and its integrity checks passed."""
    return not trust_problems(record.manifest, record.run)


def _read_json_object(path: Path) -> dict[str, Any] | str:
    """The JSON object in ``path``, or a string saying why it could not be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return f"invalid JSON ({exc})"
    if not isinstance(data, dict):
        return f"expected a JSON object, found {type(data).__name__}"
    return data


def _load_baseline(path: Path, problems: list[str]) -> Baseline | None:
    if not path.exists():
        problems.append("baseline.json missing: the baseline was not evaluated (yet)")
        return None
    data = _read_json_object(path)
    if isinstance(data, str):
        problems.append(f"baseline.json {data}")
        return None
    metrics = data.get("metrics")
    return Baseline(
        score=_float_or_none(data.get("score")),
        n=_int_or_none(data.get("n")),
        metrics=metrics if isinstance(metrics, dict) else {},
        cached=bool(data.get("cached", False)),
        seconds=_float_or_none(data.get("seconds")),
    )


def _load_run_info(path: Path, problems: list[str]) -> RunInfo | None:
    if not path.exists():
        problems.append("run.json missing: the run is still in progress, or the harness was killed")
        return None
    data = _read_json_object(path)
    if isinstance(data, str):
        problems.append(f"run.json {data}")
        return None
    return RunInfo(
        status=str(data.get("status") or "unknown"),
        started=_str_or_none(data.get("started")),
        ended=_str_or_none(data.get("ended")),
        agent_seconds=_float_or_none(data.get("agent_seconds")),
        budget_seconds=_float_or_none(data.get("budget_seconds")),
        end_reason=_str_or_none(data.get("end_reason")),
        agent_exit_code=_int_or_none(data.get("agent_exit_code")),
        error=_str_or_none(data.get("error")),
        fields=data,
    )


def _load_submissions(path: Path, problems: list[str]) -> tuple[SubmissionRecord, ...]:
    merged: dict[int, dict[str, Any]] = {}
    history: dict[int, list[str]] = {}
    first_seen: dict[int, tuple[Any, Any]] = {}
    for entry in read_submission_log(path, problems):
        sid = int(entry["submission_id"])
        known = merged.setdefault(sid, {})
        # a later value wins, but a later null never erases a value logged earlier
        known.update({k: v for k, v in entry.items() if v is not None or k not in known})
        history.setdefault(sid, []).append(entry["status"])
        # submission time: the first entry ("received"; whatever came first if it was lost)
        first_seen.setdefault(sid, (entry.get("time"), entry.get("elapsed_s")))
    records = {sid: _fold(sid, data, history[sid], first_seen[sid]) for sid, data in merged.items()}
    return tuple(_resolve_duplicates(records, problems))


def _fold(
    sid: int, data: dict[str, Any], statuses: list[str], received: tuple[Any, Any]
) -> SubmissionRecord:
    status = statuses[-1]
    metrics = data.get("metrics")
    return SubmissionRecord(
        submission_id=sid,
        status=status,
        time=_str_or_none(received[0]),
        elapsed_s=_float_or_none(received[1]),
        updated_time=_str_or_none(data.get("time")),
        updated_elapsed_s=_float_or_none(data.get("elapsed_s")),
        model_path=_str_or_none(data.get("model_path")),
        score=_float_or_none(data.get("score")) if status in {"scored", "duplicate"} else None,
        weight_hash=_str_or_none(data.get("weight_hash")),
        code_revision=_str_or_none(data.get("code_revision")),
        copy_of_base=data.get("copy_of_base") is True,
        reason=_str_or_none(data.get("reason")),
        duplicate_of=_int_or_none(data.get("duplicate_of")),
        eval_seconds=_float_or_none(data.get("eval_seconds")),
        n=_int_or_none(data.get("n")),
        metrics=metrics if isinstance(metrics, dict) else {},
        statuses=tuple(statuses),
        fields=data,
    )


def _resolve_duplicates(
    records: dict[int, SubmissionRecord], problems: list[str]
) -> list[SubmissionRecord]:
    """A duplicate takes its original's final outcome.

    The engine logs a duplicate with the original's score *at that moment*, which is null while
    the original is still being evaluated; the original's final score is the truth.
    """
    out = []
    for sid in sorted(records):
        rec = records[sid]
        if rec.status == "duplicate":
            original = records.get(rec.duplicate_of) if rec.duplicate_of is not None else None
            if original is None:
                problems.append(
                    f"submission {sid} is a duplicate of unknown submission {rec.duplicate_of}"
                )
            else:
                score = original.score if original.status == "scored" else None
                rec = rec.model_copy(
                    update={
                        "score": score,
                        "copy_of_base": rec.copy_of_base or original.copy_of_base,
                    }
                )
        out.append(rec)
    return out


# metrics ------------------------------------------------------------------------------------------


def process_metrics(record: RunRecord) -> dict[str, Any]:
    """The reference's per-run process metrics (definitions in ``docs/reports.md``)."""
    subs = list(record.submissions)
    final = [s for s in subs if s.final]
    valid = [s for s in subs if s.valid]
    baseline = record.baseline.score if record.baseline is not None else None
    best = max((s.score for s in valid if s.score is not None), default=None)
    first_valid = valid[0] if valid else None

    first_improvement = None
    if baseline is not None:
        first_improvement = next(
            (s for s in valid if s.score is not None and s.score > baseline), None
        )
    first_best = next((s for s in valid if s.score == best), None) if best is not None else None

    pairs = list(pairwise(valid))
    monotonic = sum(1 for a, b in pairs if _score(b) >= _score(a)) / len(pairs) if pairs else None

    hashes = record.manifest.get("hashes")
    base_hash = hashes.get("base_model") if isinstance(hashes, dict) else None
    copies = sum(1 for s in subs if s.copy_of_base or (base_hash and s.weight_hash == base_hash))

    agent_seconds = record.run.agent_seconds if record.run is not None else None
    budget_seconds = record.budget_seconds
    time_used = (
        agent_seconds / budget_seconds if agent_seconds is not None and budget_seconds else None
    )
    agent_end = _agent_end(agent_seconds, budget_seconds)
    last_elapsed = max((s.elapsed_s for s in subs if s.elapsed_s is not None), default=None)
    last_gap = (
        max(0.0, agent_end - last_elapsed)
        if agent_end is not None and last_elapsed is not None
        else None
    )

    return {
        "n_submissions": len(subs),
        "n_scored": sum(1 for s in subs if s.status == "scored"),
        "n_failed": sum(1 for s in subs if s.status == "failed"),
        "n_duplicate": sum(1 for s in subs if s.status == "duplicate"),
        "n_pending": len(subs) - len(final),
        "n_valid": len(valid),
        "valid_submission_rate": _ratio(sum(1 for s in final if s.valid), len(final)),
        "first_valid_idx": subs.index(first_valid) + 1 if first_valid is not None else None,
        "first_valid_delay_s": first_valid.elapsed_s if first_valid is not None else None,
        "score_trajectory": [
            {"submission_id": s.submission_id, "elapsed_s": s.elapsed_s, "score": s.score}
            for s in valid
        ],
        "time_to_first_improvement_s": (
            first_improvement.elapsed_s if first_improvement is not None else None
        ),
        "time_to_best_s": first_best.elapsed_s if first_best is not None else None,
        "monotonic_ratio": _round(monotonic),
        "copy_model_count": copies,
        "time_used_ratio": _round(time_used),
        "last_submit_gap_s": _round(last_gap, 3),
        "baseline_score": baseline,
        "best_score": best,
        "best_submission_id": first_best.submission_id if first_best is not None else None,
        "improvement": _round(best - baseline, 6)
        if best is not None and baseline is not None
        else None,
    }


def _agent_end(agent_seconds: float | None, budget_seconds: float | None) -> float | None:
    """Seconds from agent start to the end of its phase: its own end, capped at the budget."""
    if agent_seconds is None:
        return None
    return min(agent_seconds, budget_seconds) if budget_seconds else agent_seconds


def summary(record: RunRecord) -> dict[str, Any]:
    """The content of ``summary.json`` (schema in ``docs/reports.md``)."""
    metrics = process_metrics(record)
    result = scoring(record, metrics)
    cfg = record.config
    task_info = record.manifest.get("task")
    task_info = task_info if isinstance(task_info, dict) else {}
    run = record.run
    data = {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "run_id": record.run_id,
        "created": record.manifest.get("created"),
        "status": record.status,
        "task": record.task,
        "task_version": _str_or_none(task_info.get("version")),
        "split": _str_or_none(task_info.get("split")),
        "metric": _str_or_none(task_info.get("metric")),
        "agent": record.agent,
        "driver": record.driver,
        "model": record.model,
        "seed": cfg.get("seed"),
        "budget": cfg.get("budget") if isinstance(cfg.get("budget"), dict) else None,
        "baseline_score": metrics["baseline_score"],
        "baseline_n": record.baseline.n if record.baseline is not None else None,
        "baseline_cached": record.baseline.cached if record.baseline is not None else None,
        "best_score": metrics["best_score"],
        **noise(record, metrics["best_score"]),
        **{k: v for k, v in result.items() if k != "baseline_se"},
        "test_baseline_se": result["baseline_se"] if result["protocol"] == "sealed" else None,
        "submissions": [_submission_row(s) for s in record.submissions],
        "process_metrics": {
            k: v
            for k, v in metrics.items()
            if k not in {"baseline_score", "best_score", "improvement"}
        },
        "end_reason": run.end_reason if run is not None else None,
        "agent_exit_code": run.agent_exit_code if run is not None else None,
        "agent_seconds": run.agent_seconds if run is not None else None,
        "budget_seconds": record.budget_seconds,
        "started": run.started if run is not None else None,
        "ended": run.ended if run is not None else None,
        "error": run.error if run is not None else None,
        "versions": dict(record.manifest.get("versions") or {}),
        "hashes": dict(record.manifest.get("hashes") or {}),
        "sandbox": sandbox_of(record.manifest),
        "grader": grader_of(cfg),
        "engine": engine_of(record),
        "comparable": comparable(record),
        "integrity": (run.fields.get("integrity") if run is not None else None) or {},
        "resumed": (run.fields.get("resumed") if run is not None else None),
        "gpu_usage": (run.fields.get("gpu_usage") if run is not None else None),
        "evaluation_seconds_excluded": (
            run.fields.get("evaluation_seconds_excluded") if run is not None else None
        ),
        "driver_calls": driver_call_summary(record.run_dir, run.fields if run else {}),
        "record_version": record.version,
        "problems": list(record.problems),
    }
    return _with_contributions(data, record)


def _with_contributions(data: dict[str, Any], record: RunRecord) -> dict[str, Any]:
    """The contributions' columns after the harness's own; a column that would replace one of
    the harness's (a plugin cannot restate the score) is left out, with a problem."""
    data["contributions"] = sorted(record.contributions)
    for name, item in sorted(record.contributions.items()):
        for key, value in item.summary.items():
            if key in data:
                data["problems"].append(
                    f"contribution {name!r}: column {key!r} is the harness's own (left out)"
                )
            else:
                data[key] = value
    return data


def _score_se(metrics: dict[str, Any]) -> float | None:
    value = metrics.get("score_se")
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return float(value)


def noise(record: RunRecord, best: float | None) -> dict[str, float | None]:
    """Standard errors of the baseline, the best score and their difference, when the
    evaluator reports ``score_se`` (in score units) in its metrics; None otherwise."""
    base_se = _score_se(record.baseline.metrics) if record.baseline is not None else None
    best_row = next(
        (s for s in record.submissions if s.valid and s.score is not None and s.score == best),
        None,
    )
    best_se = _score_se(best_row.metrics) if best_row is not None else None
    improvement_se = None
    if base_se is not None and best_se is not None:
        improvement_se = round(math.hypot(base_se, best_se), 4)
    return {"baseline_se": base_se, "best_se": best_se, "improvement_se": improvement_se}


def protocol_of(record: RunRecord) -> str:
    """The run's scoring protocol: run.json's ``scoring`` block, else the configured one, else
    ``reference`` (runs recorded before sealed scoring existed scored every submission on the
    whole held-out split and reported the best)."""
    block = _scoring_block(record)
    found = block.get("protocol") if block else None
    if found is None:
        configured = record.config.get("scoring")
        found = configured.get("protocol") if isinstance(configured, dict) else None
    return str(found) if found in PROTOCOLS else "reference"


def engine_of(record: RunRecord) -> dict[str, Any]:
    """The engine that graded the run: ``run.json``'s ``engine`` (from the baseline's
    evaluation), else the baseline's ``metrics.engine``, else what the manifest resolved
    before any evaluation (``engine``: backend, precision); empty for a run recorded before
    engines were (graded by transformers in fp32 on a CPU)."""
    for found in (
        record.run.fields.get("engine") if record.run is not None else None,
        record.baseline.metrics.get("engine") if record.baseline is not None else None,
        record.manifest.get("engine"),
    ):
        if isinstance(found, dict) and found:
            return dict(found)
    return {}


def precision_of(record: RunRecord) -> str | None:
    """The precision the run was graded in (``fp32``, ``bf16``...); None when not recorded."""
    found = engine_of(record).get("precision")
    return str(found) if found else None


def infra_cause(record: RunRecord) -> str | None:
    """Why the harness ended the run (``end_reason = infra_error``); None for any other end."""
    if record.run is None or record.run.end_reason != INFRA_ERROR:
        return None
    cause = record.run.fields.get("infra_cause")
    return str(cause) if cause else "unknown (run.json names no infra_cause)"


def scoring(record: RunRecord, metrics: dict[str, Any] | None = None) -> dict[str, Any]:
    """The run's result as the harness scored it (the summary's ``score`` fields).

    A sealed run's score is the test-split score of its one selected checkpoint, read from
    run.json's ``scoring`` block (written by the harness after the agent's phase); until that
    block exists (a run in progress, or one the harness ended early) it has no score. A
    reference run's score is its best submission; a run recorded without a ``scoring`` block
    reads as reference, with the numbers it always had.
    """
    metrics = metrics if metrics is not None else process_metrics(record)
    protocol = protocol_of(record)
    block = _scoring_block(record)
    base_n = record.baseline.n if record.baseline is not None else None
    if block:
        selection = _dict(block.get("selection"))
        dev, test = _dict(block.get("dev")), _dict(block.get("test"))
        dev_best = _float_or_none(dev.get("best"))
        return {
            "protocol": protocol,
            "score": _float_or_none(block.get("score")),
            "score_se": _se(block.get("score_se")),
            "baseline": _float_or_none(block.get("baseline")),
            "baseline_se": _se(block.get("baseline_se")),
            "improvement": _float_or_none(block.get("improvement")),
            "improvement_se": _se(block.get("improvement_se")),
            "dev_best": dev_best if "best" in dev else metrics["best_score"],
            "selected_submission": _int_or_none(selection.get("submission_id")),
            "selection_rule": _str_or_none(selection.get("rule")),
            "selection_gap": _float_or_none(block.get("selection_gap")),
            "selection_gap_se": _se(block.get("selection_gap_se")),
            "test_n": _int_or_none(test.get("n")),
            "dev_n": _int_or_none(dev.get("n")) if "n" in dev else base_n,
            "oracle_gap": _float_or_none(block.get("oracle_gap")),
            "infra_cause": infra_cause(record),
        }
    best = metrics["best_score"]
    se = noise(record, best)
    reference = protocol == "reference"
    return {
        "protocol": protocol,
        "score": best if reference else None,
        "score_se": se["best_se"] if reference else None,
        "baseline": metrics["baseline_score"] if reference else None,
        "baseline_se": se["baseline_se"] if reference else None,
        "improvement": metrics["improvement"] if reference else None,
        "improvement_se": se["improvement_se"] if reference else None,
        "dev_best": best,
        "selected_submission": metrics["best_submission_id"] if reference else None,
        "selection_rule": ("best" if best is not None else "none") if reference else None,
        "selection_gap": None,
        "selection_gap_se": None,
        "test_n": None,
        "dev_n": base_n,
        "oracle_gap": None,
        "infra_cause": infra_cause(record),
    }


def _scoring_block(record: RunRecord) -> dict[str, Any]:
    return _dict(record.run.fields.get("scoring")) if record.run is not None else {}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _se(value: Any) -> float | None:
    found = _float_or_none(value)
    return found if found is not None and found >= 0 and math.isfinite(found) else None


def _submission_row(s: SubmissionRecord) -> dict[str, Any]:
    return {
        "id": s.submission_id,
        "time": s.time,
        "elapsed_s": s.elapsed_s,
        "score": s.score,
        "status": s.status,
        "valid": s.valid,
        "weight_hash": s.weight_hash,
        "code_revision": s.code_revision,
        "reason": s.reason,
        "duplicate_of": s.duplicate_of,
        "copy_of_base": s.copy_of_base,
        "model_path": s.model_path,
        "eval_seconds": s.eval_seconds,
        "score_se": _score_se(s.metrics),
    }


# small coercions ----------------------------------------------------------------------------------


def _score(s: SubmissionRecord) -> float:
    """The score of a valid submission (never None there)."""
    return s.score if s.score is not None else float("-inf")


def _ratio(num: int, den: int) -> float | None:
    return _round(num / den) if den else None


def _round(value: float | None, digits: int = 4) -> float | None:
    return round(value, digits) if value is not None else None


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _float_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None
