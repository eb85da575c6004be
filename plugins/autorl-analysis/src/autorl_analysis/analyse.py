"""Build the :class:`~autorl_analysis.model.Analysis` of one run from its records.

Only harness-owned records are read (see :mod:`.sources` for how agent-written bytes the
harness kept are handled). Every analyser that cannot read what it needs adds a line to
``problems`` and the rest goes on.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from autorl_records import RunRecord, load_run, posix_time, read_calls, read_log

from autorl_analysis import failures as fail
from autorl_analysis import integrity, routes
from autorl_analysis.model import Analysis, Evidence, Flag, Route, SubmissionAnalysis, TimelineEvent
from autorl_analysis.routes import Line
from autorl_analysis.sources import CodeHistory, read_capped, read_jsonl
from autorl_analysis.trajectory import (
    commands,
    declared_trajectory,
    load_trajectory,
    trajectory_lines,
)

AGENT_CLOCK_RE = re.compile(r"^\[[\w.-]+\s+(\d+(?:\.\d+)?)s\]")
"""A log line stamped with the agent's own elapsed seconds (``[recipe   8.4s] ...``)."""
MAX_EVAL_ROWS = 5000


class RunReader:
    """What every analyser reads, read once."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.record: RunRecord = load_run(self.run_dir)
        self.problems: list[str] = []
        d = self.run_dir
        self.events = read_log(d, "events.jsonl", self.problems) or []
        self.calls = read_calls(d, self.problems) or []
        self.egress = read_log(d, "egress.jsonl", self.problems) or []
        self.log = [
            Line("agent.log", n, text)
            for n, text in enumerate(read_capped(d / "agent.log", d).splitlines(), 1)
        ]
        self.trajectory_file = declared_trajectory(self.record.agent, self.problems)
        source, self.trajectory = load_trajectory(d, self.problems, self.trajectory_file)
        self.traj_lines = trajectory_lines(source, self.trajectory)
        self.commands = commands(source, self.trajectory)
        launch = next((e for e in self.events if e.get("event") == "agent_launch"), None)
        if launch is not None and isinstance(launch.get("argv"), list):
            argv = " ".join(str(a) for a in launch["argv"])[:2000]
            self.commands.insert(0, Line("events.jsonl", 0, argv))
        self.t0 = posix_time(launch.get("timestamp")) if launch else None
        self.history = CodeHistory(d / "code-history.git", self.problems)
        self.revisions = self.history.revisions()
        self._files: dict[str, list[tuple[str, str]]] = {}

    def code(self, rev: str | None) -> list[tuple[str, str]]:
        """``(source, text)`` of the files of a code revision (the last one when None)."""
        if rev is None:
            rev = self.revisions[-1][0] if self.revisions else None
        if rev is None or not re.fullmatch(r"[0-9a-f]{7,64}", rev):
            return []
        if rev not in self._files:
            self._files[rev] = [
                (f"code-history.git:{rev[:10]}:{path}", self.history.blob(blob))
                for path, blob, _ in self.history.files(rev)
            ]
        return self._files[rev]

    def since_launch(self, ts: Any) -> float | None:
        t = posix_time(ts) if not isinstance(ts, int | float) else float(ts)
        return None if t is None or self.t0 is None else round(t - self.t0, 3)


# routes ------------------------------------------------------------------------------------------


def submission_routes(
    reader: RunReader,
) -> tuple[dict[int, Route], Route | None, dict[int, Route]]:
    """Per submission and for the whole run, and per submission the route the agent's text
    claims (the same, except where the harness observed a copy of the base)."""
    streams = [s for s in (reader.log, reader.traj_lines) if s]
    hits = {id(s): routes.scan_log(s) for s in streams}
    disabled = routes.disabled_methods(reader.commands)
    base_hash = (reader.record.manifest.get("hashes") or {}).get("base_model")
    out: dict[int, Route] = {}
    claimed: dict[int, Route] = {}
    cursor = {id(s): 0 for s in streams}
    for s in reader.record.submissions:
        executed: list[tuple[str, Evidence]] = []
        for stream in streams:
            cut = routes.cut_index(stream, s.model_path or "", cursor[id(stream)])
            if cut is not None:
                cursor[id(stream)] = cut
            limit = cut if cut is not None else len(stream)
            executed += [(m, ev) for index, m, ev in hits[id(stream)] if index < limit]
        copy = None
        if s.copy_of_base or (base_hash and s.weight_hash == base_hash):
            copy = Evidence("submissions.jsonl", f"weight_hash {s.weight_hash} = base model")
        original = out.get(s.duplicate_of) if s.duplicate_of is not None else None
        if s.status == "duplicate" and original is not None:  # the same weights: its route
            same = Evidence("submissions.jsonl", f"same weights as submission {s.duplicate_of}")
            out[s.submission_id] = Route(
                original.label, original.methods, (same, *original.evidence), original.basis
            )
            continue
        code = routes.scan_code(reader.code(s.code_revision))
        claimed[s.submission_id] = routes.attribute(executed=executed, code=code, disabled=disabled)
        out[s.submission_id] = routes.attribute(
            executed=executed, code=code, disabled=disabled, copy=copy
        )
    executed = [(m, ev) for stream in streams for _, m, ev in hits[id(stream)]]
    run_code = routes.scan_code(reader.code(None))
    if not executed and not run_code and not reader.record.submissions:
        return out, None, claimed
    run_route = routes.attribute(executed=executed, code=run_code, disabled=disabled)
    if run_route.label == "none" and out and all(r.label == "copy" for r in out.values()):
        evidence = tuple(r.evidence[0] for r in out.values())[:3]
        run_route = Route("copy", (), evidence, "observed")
    return out, run_route, claimed


# integrity ---------------------------------------------------------------------------------------


def distances(reader: RunReader) -> tuple[dict[int, integrity.WeightChange], list[Flag]]:
    """The observed change of each scored submission's weights from the base, and a
    ``fingerprint_unavailable`` flag (with a problem line) for each one whose check could not
    run. The grader's recorded ``base_distance`` wins; the checkpoint is read only for its
    per-tensor detail (the harness's kept copy) or, in runs recorded before the grader measured
    it, for the distance itself."""
    manifest = reader.record.manifest
    base_path = (manifest.get("model") or {}).get("path")
    base_hash = (manifest.get("hashes") or {}).get("base_model")
    changes: dict[int, integrity.WeightChange] = {}
    flags: list[Flag] = []

    def unavailable(sid: int, why: str, source: str) -> None:
        reader.problems.append(f"submission {sid}: no near-copy check ({why})"[:300])
        flags.append(integrity.unavailable_flag(sid, why, source))

    base_ok, base_why = _base_checkable(base_path, base_hash)
    for s in reader.record.submissions:
        if s.status != "scored" or s.copy_of_base or s.weight_hash == base_hash:
            continue
        recorded, value, problem = integrity.recorded_fingerprint(s)
        if recorded and value is None:
            unavailable(s.submission_id, f"the grader recorded: {problem}", "submissions.jsonl")
            continue
        detail = None
        if base_ok:
            detail, why = _measure(reader, s, Path(base_path), workspace_ok=not recorded)
        else:
            why = base_why
        if recorded and value is not None:  # per-tensor detail from the kept copy, if any
            changes[s.submission_id] = integrity.WeightChange(
                value,
                "submissions.jsonl",
                detail.tensors if detail is not None else None,
                detail.changed if detail is not None else None,
            )
        elif detail is not None:
            changes[s.submission_id] = detail
        else:
            unavailable(s.submission_id, why, "manifest.json" if not base_ok else "submissions")
    return changes, flags


def _base_checkable(base_path: Any, base_hash: Any) -> tuple[bool, str]:
    if not base_path or not Path(base_path).is_dir():
        return False, "the base model is gone from the cache"
    from autorl_grading.checkpoints import CheckpointError, tensor_hash

    try:
        if tensor_hash(Path(base_path)) != base_hash:
            return False, "the cached base model's hash differs from the run's"
    except (CheckpointError, OSError, ValueError) as exc:
        return False, f"the cached base model could not be hashed ({type(exc).__name__})"
    return True, ""


def _measure(
    reader: RunReader, s: Any, base: Path, *, workspace_ok: bool
) -> tuple[integrity.WeightChange | None, str]:
    directory, why = integrity.checkpoint_dir(
        reader.run_dir, s, reader.problems, workspace_ok=workspace_ok
    )
    if directory is None:
        return None, why
    source = str(directory.relative_to(reader.run_dir))
    try:
        change = integrity.weight_change(directory, base, source)
    except Exception as exc:  # a hostile file may break the reader: note it, go on
        return None, f"reading the weights failed ({exc!r})"[:200]
    if change is None:
        return None, "tensor names or shapes differ from the base (an adapter or another model)"
    return change, ""


def _pinned(run_dir: Path) -> tuple[Path, list[Path]] | None:
    """The run's own copy of its splits (``task-data/``, runs since splits are pinned)."""
    record = run_dir / "task-data" / "pinned.json"
    try:
        names = json.loads(record.read_text(encoding="utf-8"))
        eval_path = run_dir / "task-data" / "eval" / str(names["eval"])
        return eval_path, [run_dir / "task-data" / "train" / str(n) for n in names["train"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def splits(reader: RunReader) -> tuple[list[str], list[str]] | None:
    """The held-out and train rows as texts, from the run's pinned copy (``task-data/``), or for
    older runs from the task's cache, checked against the manifest's hashes (the task is
    prepared again through the registry: cached, no rebuild)."""
    from autorl.digest import file_digest
    from autorl.paths import task_cache_dir
    from autorl.registry import get_registry
    from autorl.types import TaskContext

    manifest = reader.record.manifest
    hashes = manifest.get("hashes") or {}
    cfg = reader.record.config
    task_info = manifest.get("task") or {}
    pinned = _pinned(reader.run_dir)
    try:
        if pinned is not None:
            eval_path, train_files = pinned
        else:
            task = get_registry().create("task", str(cfg.get("task")))
            version = str(task_info.get("version") or getattr(task, "version", "0"))
            seed, options = int(cfg.get("seed") or 0), dict(cfg.get("task_options") or {})
            prepared = task.prepare(
                TaskContext(
                    cache_dir=task_cache_dir(task.name, version, seed, options),
                    seed=seed,
                    options=options,
                )
            )
            eval_path = Path(prepared.eval_path)
            train_files = [Path(p) for p in prepared.train_files]
    except Exception as exc:  # any task error: the check is skipped, with the reason
        reader.problems.append(f"leakage: the task's splits could not be found ({exc!r})"[:300])
        return None
    if file_digest([eval_path]) != hashes.get("eval"):
        reader.problems.append("leakage: the eval split in the cache is not the run's (hash)")
        return None
    train_ok = file_digest(train_files) == hashes.get("train")
    if not train_ok:
        reader.problems.append("leakage: the train split differs from the run's: no calibration")

    def rows(path: Path) -> list[str]:
        parsed = read_jsonl(path, path.parent, reader.problems)[:MAX_EVAL_ROWS]
        return [integrity.row_text(r) for r in parsed]

    train = [text for p in train_files for text in rows(p)] if train_ok else []
    return rows(eval_path), train


def agent_texts(reader: RunReader) -> list[tuple[str, str]]:
    """What the agent wrote that the harness recorded: every code-history revision's files
    (deduplicated by blob) and the trajectory's commands and messages."""
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for rev, _, _ in reader.revisions:
        for path, blob, _ in reader.history.files(rev):
            if blob not in seen:
                seen.add(blob)
                text = reader.history.blob(blob)
                if path.endswith((".json", ".jsonl")):
                    text = json_strings(text)
                out.append((f"code-history.git:{rev[:10]}:{path}", text))
    out += [(f"{line.source}:{line.number}", line.text) for line in reader.traj_lines]
    return out


def json_strings(text: str) -> str:
    """The strings of a JSON or JSON-lines file, unescaped (``\\u00a3`` is a pound sign again),
    so n-grams match the held-out text; lines that do not parse are kept as they are."""
    out = []
    for line in text.splitlines():
        try:
            out.append(integrity.row_text(json.loads(line)))
        except ValueError:
            out.append(line)
    return "\n".join(out)


def flags(reader: RunReader, measured: dict[str, Any], claimed: dict[int, Route]) -> list[Flag]:
    """Every integrity flag; ``claimed`` is each submission's route as the agent's text tells it
    (before a copy of the base overrides it), to hold against what the harness observed."""
    record = reader.record
    base_hash = (record.manifest.get("hashes") or {}).get("base_model")
    changes, unavailable = distances(reader)
    measured["distance_to_base"] = {str(k): round(v.distance, 8) for k, v in changes.items()}
    measured["weight_change"] = {str(k): v.as_dict() for k, v in changes.items()}
    found = integrity.copy_flags(record.submissions, base_hash, changes)
    found += unavailable
    found += integrity.contradiction_flags(claimed, changes, record.submissions)
    leakage: dict[str, Any] = {}
    measured["leakage"] = leakage
    data = splits(reader)
    if data is not None:
        eval_rows, train_rows = data
        flag, info = integrity.leakage_flag(eval_rows, train_rows, agent_texts(reader))
        leakage.update(info)
        if flag is not None:
            found.append(flag)
    run_fields = record.run.fields if record.run is not None else {}
    for flag in (
        integrity.probing_flag(reader.events),
        integrity.network_flag(reader.run_dir, reader.events, reader.egress),
        integrity.gateway_flag(reader.calls),
        integrity.base_modified_flag(run_fields, reader.events),
    ):
        if flag is not None:
            found.append(flag)
    return found


# timeline ----------------------------------------------------------------------------------------


def timeline(reader: RunReader) -> list[TimelineEvent]:
    out: list[TimelineEvent] = []
    if reader.t0 is not None:
        argv = reader.commands[0].text if reader.commands else ""
        out.append(TimelineEvent(0.0, "command", "agent launched", {"command": argv[:300]}))
    previous = None
    for rev, when, message in reader.revisions:
        t = reader.since_launch(when)
        changes = reader.history.numstat(rev)
        if previous is not None and not changes:
            previous = rev
            continue  # a periodic snapshot with nothing new
        previous = rev
        out.append(
            TimelineEvent(
                t if t is not None else 0.0,
                "code_revision",
                f"{rev[:10]}: {len(changes)} file(s) +{sum(a for _, a, _ in changes)}"
                f"/-{sum(r for _, _, r in changes)}",
                {
                    "revision": rev,
                    "message": message[:120],
                    "files": [{"path": p, "added": a, "removed": r} for p, a, r in changes[:50]],
                },
            )
        )
    for index, method, ev in routes.scan_log(reader.log):
        match = AGENT_CLOCK_RE.match(reader.log[index].text)
        if match and routes.STEPS_RE.search(reader.log[index].text):
            out.append(
                TimelineEvent(
                    float(match.group(1)),
                    "training_finished",
                    f"{method} ({ev.text[:80]})",
                    {"method": method, "clock": "agent", "line": ev.line},
                    basis="claimed",
                )
            )
    for line in reader.commands[1:]:
        event = (
            reader.trajectory[line.number - 1] if line.number - 1 < len(reader.trajectory) else {}
        )
        t = reader.since_launch(event.get("ts"))
        if t is not None:
            out.append(
                TimelineEvent(
                    t,
                    "command",
                    line.text[:120],
                    {"line": line.number, "source": line.source},
                    basis="claimed",
                )
            )
    for s in reader.record.submissions:
        t = s.elapsed_s or 0.0
        out.append(
            TimelineEvent(
                t,
                "submission",
                f"submission {s.submission_id}: {s.status}",
                {"submission_id": s.submission_id, "status": s.status, "model_path": s.model_path},
            )
        )
        if s.valid and s.score is not None:
            end = s.updated_elapsed_s if s.updated_elapsed_s is not None else t
            out.append(
                TimelineEvent(
                    end,
                    "score",
                    f"submission {s.submission_id} scored {s.score:g}",
                    {"submission_id": s.submission_id, "score": s.score, "submitted_s": t},
                )
            )
    for e in reader.events:
        if e.get("event") in {
            "budget_warning",
            "driver_budget_exhausted",
            "disk_limit",
            "gpu_budget_exhausted",
        }:
            t = reader.since_launch(e.get("timestamp"))
            if t is not None:
                out.append(TimelineEvent(t, "budget_warning", str(e.get("message") or e["event"])))
        if e.get("event") == "agent_stopped":
            t = reader.since_launch(e.get("timestamp"))
            if t is not None:
                out.append(TimelineEvent(t, "agent_end", str(e.get("reason"))))
    tokens = cost = 0.0
    for call in reader.calls:
        t = reader.since_launch(call.get("ts"))
        usage = call.get("usage") if isinstance(call.get("usage"), dict) else {}
        tokens += float(usage.get("input_tokens") or 0) + float(usage.get("output_tokens") or 0)
        cost += float(call.get("cost_usd") or 0.0)
        if t is not None:
            out.append(
                TimelineEvent(
                    t,
                    "driver_spend",
                    f"{int(tokens)} tokens, ${cost:.4f}",
                    {"tokens": int(tokens), "cost_usd": round(cost, 6)},
                )
            )
    return sorted(out, key=lambda e: e.t)


# the whole analysis ------------------------------------------------------------------------------


FINAL = ("scored", "failed", "duplicate")


def overhead(reader: RunReader) -> dict[str, float]:
    """Where the run's wall time went, from its own records (seconds): ``setup`` (run start to
    the baseline: preparing the task and model, evaluating or reading the baseline),
    ``sandbox_start`` (baseline to the agent's launch), ``agent`` (its phase),
    ``evaluation_after_agent`` (the agent's end to the last final score),
    ``sealed_evaluation`` (then to the end of the evaluations on the sealed test split),
    ``report`` (then to the run's end), ``total``, and ``harness`` (total less the agent's
    phase); ``evaluation`` sums every submission's evaluation, much of it beside the agent.
    Phases whose events are missing (an interrupted run) are left out."""
    run = reader.record.run
    start = posix_time(run.started) if run is not None else None
    stamp = {
        name: next(
            (posix_time(e.get("timestamp")) for e in reader.events if e.get("event") == name),
            None,
        )
        for name in (
            "baseline",
            "agent_launch",
            "agent_stopped",
            "sealed_evaluation_done",
            "run_end",
        )
    }
    finals = [
        posix_time(e.get("timestamp"))
        for e in reader.events
        if e.get("event") == "submission" and e.get("status") in FINAL
    ]
    last_final = max((t for t in finals if t is not None), default=None)
    stopped = stamp["agent_stopped"]
    after = max(stopped, last_final) if stopped is not None and last_final else stopped
    sealed = stamp["sealed_evaluation_done"] if after is not None else None
    # the reports are written before the run_end event: while they are, the run's end is the
    # time run.json recorded (after the last evaluation), and the reports' own time is unknown
    end = stamp["run_end"] or (posix_time(run.ended) if run is not None else None)
    points = [
        ("setup", start, stamp["baseline"]),
        ("sandbox_start", stamp["baseline"], stamp["agent_launch"]),
        ("agent", stamp["agent_launch"], stopped),
        ("evaluation_after_agent", stopped, after),
        ("sealed_evaluation", after, sealed),
        ("report", sealed or after, stamp["run_end"]),
        ("total", start, end),
    ]
    out = {name: round(b - a, 1) for name, a, b in points if a is not None and b is not None}
    if "total" in out and "agent" in out:
        out["harness"] = round(out["total"] - out["agent"], 1)
    evals = [s.eval_seconds for s in reader.record.submissions if s.eval_seconds is not None]
    if evals:
        out["evaluation"] = round(sum(evals), 1)
    return out


def oom_kills(record: RunRecord) -> int:
    fields = record.run.fields if record.run is not None else {}
    box = fields.get("sandbox") if isinstance(fields.get("sandbox"), dict) else {}
    value = box.get("oom_kills")
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0


def analyse(run_dir: Path) -> tuple[Analysis, RunReader]:
    """The analysis, and the reader (its records, for the views)."""
    reader = RunReader(Path(run_dir))
    record = reader.record
    per_sub, run_route, claimed = submission_routes(reader)
    base = record.baseline.score if record.baseline is not None else None
    subs = []
    sub_failures = []
    for s in record.submissions:
        failure = fail.submission_failure(s, base)
        sub_failures.append(failure)
        subs.append(
            SubmissionAnalysis(
                submission_id=s.submission_id,
                status=s.status,
                score=s.score if s.valid else None,
                elapsed_s=s.elapsed_s,
                code_revision=s.code_revision,
                route=per_sub.get(s.submission_id, Route("unknown")),
                failure=failure,
            )
        )
    crash_list = fail.crashes(reader.log) + fail.crashes(reader.traj_lines)
    failures = fail.run_failures(record, sub_failures, crash_list, oom_kills(record))
    measured: dict[str, Any] = {}
    flag_list = flags(reader, measured, claimed)
    valid = [s for s in record.submissions if s.valid and s.score is not None]
    best_route = None
    if valid:
        best = max(valid, key=lambda s: s.score or 0.0)
        best_id = next(s.submission_id for s in valid if s.score == best.score)
        best_route = per_sub.get(best_id)
    analysis = Analysis(
        run_id=record.run_id,
        submissions=tuple(subs),
        route=run_route,
        best_route=best_route,
        failures=tuple(failures),
        timeline=tuple(timeline(reader)),
        flags=tuple(
            sorted(flag_list, key=lambda f: ("critical", "warning", "info").index(f.severity))
        ),
        measurements=measured,
        overhead=overhead(reader),
        problems=tuple(reader.problems),
    )
    return analysis, reader
