"""report.md: the run header, the result, the submissions table and the process metrics."""

from __future__ import annotations

import math
from typing import Any

from autorl_records import RunRecord

from autorl.text import markdown_text
from autorl_report_basic.driver_calls import render_driver_calls
from autorl_report_basic.judge import render_judge

METRIC_HELP: dict[str, tuple[str, str]] = {
    "valid_submission_rate": ("valid submission rate", "valid / final submissions"),
    "first_valid_idx": ("first valid submission", "1-based index among all submissions"),
    "first_valid_delay_s": ("first valid after", "agent-clock time of that submission"),
    "time_to_first_improvement_s": ("first improvement after", "first score above the baseline"),
    "time_to_best_s": ("best reached after", "first submission with the best score"),
    "monotonic_ratio": ("monotonic ratio", "consecutive valid scores that did not drop"),
    "copy_model_count": ("copies of the base model", "submissions with the base model's weights"),
    "time_used_ratio": ("time used", "agent phase / wall-clock budget"),
    "last_submit_gap_s": ("idle after last submission", "agent end - last submission"),
}


def render_markdown(record: RunRecord, data: dict[str, Any], plot_name: str) -> str:
    """The whole report as Markdown; ``data`` is the run's ``summary.json`` content."""
    parts = [
        f"# autorl run `{data['run_id']}`\n",
        _not_comparable(data),
        *(c.banner_md for _, c in sorted(record.contributions.items())),
        _header(data),
        _scripted_note(data),
        _infra(data),
        _result(data),
        f"![score over time]({plot_name})\n",
        _submissions(data),
        render_driver_calls(data),
        render_judge(record),
        _process(data["process_metrics"]),
        _end(data),
        _problems(data["problems"]),
        *(c.sections_md for _, c in sorted(record.contributions.items())),
    ]
    return "\n".join(p for p in parts if p)


def _not_comparable(d: dict[str, Any]) -> str:
    """A loud first line when the score cannot be compared with others."""
    if d.get("comparable", True):
        return ""
    reasons = [p for p in d.get("problems", []) if "not comparable" in p]
    first = _cell(reasons[0], limit=500) if reasons else "see Problems below"
    lines = ["> **NOT COMPARABLE.** " + first]
    lines += [f"> {_cell(r, limit=500)}" for r in reasons[1:]]
    return "\n".join(lines) + "\n"


def _sandbox(d: dict[str, Any]) -> str:
    box = d.get("sandbox") or {}
    if not box:
        return "?"
    mode = box.get("mode")
    text = _cell(box.get("name", "?"), limit=80) + (f" ({_cell(mode, limit=80)})" if mode else "")
    return text if box.get("isolated") else text + " **not isolated**"


def _engine(d: dict[str, Any]) -> str:
    """The engine that graded, its version and precision (how ``auto`` chose it, or why a
    precision asked for does not apply); ``?`` for a run recorded before engines were."""
    engine = d.get("engine") or {}
    if not isinstance(engine, dict) or not engine:
        return "?"
    name = engine.get("name") or engine.get("backend") or "?"
    text = " ".join(str(p) for p in (name, engine.get("version")) if p)
    text += f", {engine.get('precision') or '?'}"
    if engine.get("precision_setting") == "auto" and engine.get("precision_reason"):
        text += f" ({engine['precision_reason']})"
    note = engine.get("precision_note") or engine.get("note")
    if note:
        text += f" ({engine.get('precision_setting', '?')} asked: {note})"
    return text


def _header(d: dict[str, Any]) -> str:
    budget = d.get("budget") or {}
    task = d.get("task") or "?"
    details = ", ".join(
        f"{label} {d[key]}"
        for label, key in (("version", "task_version"), ("split", "split"), ("metric", "metric"))
        if d.get(key)
    )
    rows = [
        ("task", f"{task} ({details})" if details else task),
        ("agent", d.get("agent") or "?"),
        ("driver", d.get("driver") or "none"),
        ("model", d.get("model") or "?"),
        ("seed", d.get("seed")),
        ("scoring", _protocol(d)),
        ("budget", _budget(budget)),
        ("sandbox", _sandbox(d)),
        ("graded with", _grader(d)),
        ("engine", _engine(d)),
        ("GPUs", _gpus(d)),
        ("status", d.get("status")),
        ("created", d.get("created")),
        ("versions", ", ".join(f"{k} {v}" for k, v in (d.get("versions") or {}).items())),
    ]
    lines = ["| run | |", "|---|---|"]
    lines += [f"| {k} | {_cell(v)} |" for k, v in rows]
    return "\n".join(lines) + "\n"


def _protocol(d: dict[str, Any]) -> str:
    protocol = d.get("protocol") or "reference"
    if protocol == "sealed":
        return "sealed (dev split for feedback, sealed test of one selected checkpoint)"
    return f"{protocol} (every submission on the whole held-out split, best reported)"


def _grader(d: dict[str, Any]) -> str:
    """Whose tokenizer and chat template graded the submissions, and the evaluation deadline."""
    grader = d.get("grader") or {}
    tokenizer = grader.get("tokenizer") or "?"
    who = {
        "base": "the base model's tokenizer, template and generation config",
        "own": ("the checkpoints' own tokenizer and chat template (tokenizer = own)"),
    }.get(tokenizer, str(tokenizer))
    factor, margin = grader.get("eval_timeout_factor"), grader.get("eval_timeout_margin_s")
    if factor is None:
        return who
    return f"{who}; evaluation deadline {factor:g} x the baseline's time + {margin:g} s"


def _budget(budget: dict[str, Any]) -> str:
    parts = []
    if budget.get("wall_seconds") is not None:
        parts.append(f"{_duration(budget['wall_seconds'])} wall clock")
    if budget.get("max_submissions") is not None:
        parts.append(f"{budget['max_submissions']} submissions")
    if budget.get("max_gpu_hours") is not None:
        parts.append(f"{budget['max_gpu_hours']:g} GPU-hours")
    if budget.get("evaluation_time") == "excluded":
        parts.append("evaluation time not charged")
    return ", ".join(parts) or "?"


def _gpus(d: dict[str, Any]) -> str:
    """The agent's GPU-hours as metered (NVML utilisation x time), when it had GPUs."""
    usage = d.get("gpu_usage") or {}
    if not usage:
        return "none"
    cap = usage.get("max_gpu_hours")
    used = f"{usage.get('gpu_hours', 0):.3f} GPU-hours" + (f" of {cap:g}" if cap else "")
    return f"agent: {', '.join(map(str, usage.get('gpus') or []))}; {used}"


def is_scripted(d: dict[str, Any]) -> bool:
    """No LLM drove this run: the scripted agent, or a scripted/<script> driver."""
    driver = str(d.get("driver") or "")
    return driver.startswith("scripted") or (not driver and d.get("agent") == "scripted")


def _scripted_note(d: dict[str, Any]) -> str:
    if not is_scripted(d):
        return ""
    if str(d.get("driver") or "").startswith("scripted"):
        who = "the `scripted` driver answered from a script file"
    else:
        who = "the `scripted` agent ran a fixed reference recipe"
    return (
        f"> **Note:** no LLM drove this run: {who}. Its result measures the harness and the "
        "recipe, not an agent's engineering.\n"
    )


RULES = {
    "declared": "declared final by the agent",
    "best_dev": "the best dev score (ties: the later submission); the agent declared none",
    "best": "the best score on the held-out split",
    "none": "none: no submission was scored",
}


def _infra(d: dict[str, Any]) -> str:
    """A loud line when the harness, not the agent, ended the run."""
    if d.get("end_reason") != "infra_error":
        return ""
    cause = _cell(d.get("infra_cause") or "unknown", limit=500)
    return (
        f"> **HARNESS FAILURE (infra_error): this run is not an agent result.** The run ended "
        f"because of the harness (grader, sandbox, engine or driver upstream): {cause}. "
        "Statistics leave it out; `autorl campaign run FILE --resume` runs such a cell again.\n"
    )


def _result(d: dict[str, Any]) -> str:
    if d.get("protocol") == "sealed":
        return _sealed_result(d)
    return _reference_result(d)


def _with_se(value: float | None, se: float | None, signed: bool = False) -> str:
    text = _signed(value) if signed else _score(value)
    return text if value is None or se is None else f"{text} ± {se:.2f}"


def _sealed_result(d: dict[str, Any]) -> str:
    """The sealed protocol: the agent climbed dev, one selected checkpoint scored on test."""
    metric = d.get("metric") or "score"
    selected = d.get("selected_submission")
    rule = d.get("selection_rule")
    test_n = f", {d['test_n']} examples" if d.get("test_n") else ""
    dev_n = f" ({d['dev_n']} examples)" if d.get("dev_n") else ""
    who = f"#{selected}" if selected is not None else "none"
    rows = [
        (f"baseline (test{test_n})", _with_se(d.get("baseline"), d.get("test_baseline_se"))),
        (f"selected submission {who}, sealed test score", _with_se(d["score"], d["score_se"])),
        ("improvement (test)", _with_se(d.get("improvement"), d.get("improvement_se"), True)),
        (f"dev best{dev_n}", _score(d.get("dev_best"))),
        (
            "selection gap (dev - test of the selected)",
            _with_se(d.get("selection_gap"), d.get("selection_gap_se"), True),
        ),
    ]
    if d.get("oracle_gap") is not None:
        rows.append(("oracle gap (best on test - selected)", _signed(d["oracle_gap"])))
    rows.append(("baseline (dev, what the agent saw)", _score(d.get("baseline_score"))))
    lines = ["## Result\n", f"| {metric} | value |", "|---|---|"]
    lines += [f"| {label} | {value} |" for label, value in rows]
    lines += [
        "",
        "Protocol **sealed**: every submission was scored on the dev split and the agent read "
        "only those scores; the run's score is the test score of one selected checkpoint, on a "
        "split sealed until the agent's phase ended. Selection rule: "
        f"{_cell(RULES.get(str(rule), rule or 'none'), limit=120)}. "
        "improvement = test score - baseline on test; the selection gap is how much the "
        "selected checkpoint's dev score overstates its test score (selection and adaptive "
        "overfitting to dev). Scores are percentages; ± is one standard error.",
    ]
    if d.get("score") is None:
        lines.append("\nThis run has no sealed score (no submission was selected and scored).")
    return "\n".join(lines) + "\n"


def _reference_result(d: dict[str, Any]) -> str:
    metric = d.get("metric") or "score"
    n = f" on {d['baseline_n']} held-out examples" if d.get("baseline_n") else ""
    cached = " (cached)" if d.get("baseline_cached") else ""
    lines = [
        "## Result\n",
        f"| {metric} | value |",
        "|---|---|",
        f"| baseline{cached} | {_score(d.get('baseline_score'))} |",
        f"| best valid submission | {_score(d.get('best_score'))} |",
        f"| improvement | {_signed(d.get('improvement'))} |",
        "",
        f"Scores are percentages{n}. The run's score is its best valid submission; "
        "improvement = best - baseline (none when no submission was scored).",
        "",
        "Protocol **reference**: every submission was scored on the whole held-out split and "
        "the best is reported (the paper's protocol; the best of several noisy scores is biased "
        "upward by selection).",
    ]
    se, improvement = d.get("improvement_se"), d.get("improvement")
    if se is not None and improvement is not None:
        lines[6:6] = [f"| noise (standard error of the improvement) | ±{se:.2f} |"]
        ratio = f"{improvement / se:.1f} standard errors" if se > 0 else "no measured noise"
        lines.append(
            f"The improvement is {ratio}: the evaluator's standard errors of the baseline "
            f"({_score(d.get('baseline_se'))}) and the best score ({_score(d.get('best_se'))}), "
            "from the number of held-out examples, combined as sqrt(a² + b²)."
        )
    return "\n".join(lines) + "\n"


def _submissions(d: dict[str, Any]) -> str:
    rows = d.get("submissions") or []
    if not rows:
        return "## Submissions\n\nThe agent made no submission.\n"
    baseline = d.get("baseline_score")
    sealed = d.get("protocol") == "sealed"
    lines = [
        "## Submissions\n",
        f"| # | submitted | status | {'dev score' if sealed else 'score'} | vs baseline "
        "| vs previous (SE) | weights | code | note |",
        "|---:|---:|---|---:|---:|---:|---|---|---|",
    ]
    previous: dict[str, Any] | None = None
    for r in rows:
        delta = r["score"] - baseline if r["score"] is not None and baseline is not None else None
        step = "-"
        if r.get("valid") and r["score"] is not None:
            if previous is not None:
                step = _signed(r["score"] - previous["score"])
                if r.get("score_se") is not None and previous.get("score_se") is not None:
                    step += f" (±{math.hypot(r['score_se'], previous['score_se']):.2f})"
            previous = r
        note = r.get("reason") or ""
        if r.get("duplicate_of") is not None:
            note = f"same weights as #{r['duplicate_of']}"
        if r.get("copy_of_base"):
            note = "copy of the base model" + (f"; {note}" if note else "")
        note = _cell(note, limit=160)
        if sealed and r["id"] == d.get("selected_submission"):
            note = f"**selected** (test {_with_se(d.get('score'), d.get('score_se'))})" + (
                f"; {note}" if note else ""
            )
        lines.append(
            "| "
            + " | ".join(
                [
                    str(r["id"]),
                    _duration(r.get("elapsed_s")),
                    _cell(r["status"], limit=40),
                    _score(r["score"]),
                    _signed(delta),
                    step,
                    _short(r.get("weight_hash")),
                    _short(r.get("code_revision"), keep=10),
                    note,
                ]
            )
            + " |"
        )
    note = (
        "Scores on the dev split (what the agent saw), against the baseline on dev. "
        if sealed
        else ""
    )
    note += (
        "Submitted: time on the agent's budget clock when the agent submitted. vs previous: the "
        "change from the previous valid submission (one training phase's effect when the agent "
        "submits once a phase)"
    )
    if any(r.get("score_se") is not None for r in rows):
        note += (
            ", with the two scores' standard errors combined as sqrt(a² + b²) (unpaired, so "
            "conservative: both are scored on the same held-out examples)"
        )
    lines += ["", note + "."]
    return "\n".join(lines) + "\n"


def _process(m: dict[str, Any]) -> str:
    lines = ["## Process metrics\n", "| metric | value | definition |", "|---|---:|---|"]
    for key, (label, meaning) in METRIC_HELP.items():
        value = m.get(key)
        if key.endswith("_s"):
            text = _duration(value)
        elif key.endswith("_ratio") or key.endswith("_rate"):
            text = f"{value:.0%}" if value is not None else "-"
        else:
            text = _cell(value)
        lines.append(f"| {label} | {text} | {meaning} |")
    counts = (
        f"{m['n_submissions']} submissions: {m['n_scored']} scored, {m['n_duplicate']} duplicate, "
        f"{m['n_failed']} failed, {m['n_pending']} pending."
    )
    return "\n".join([*lines, "", counts]) + "\n"


def _end(d: dict[str, Any]) -> str:
    reasons = {
        "agent_exit": "the agent exited on its own",
        "deadline": "the wall-clock budget ran out",
        "max_submissions": "the submission quota was used up",
        "error": "the harness hit an error",
        "interrupted": "the run was interrupted",
        "token_budget": "the agent stopped after its driver token budget was spent",
        "cost_budget": "the agent stopped after its driver cost budget was spent",
        "disk_limit": "the agent filled more disk than the run's limit allows",
        "gpu_hours": "the agent's GPU-hours budget was spent",
        "driver_unavailable": "the driver's model provider was down when the agent stopped",
        "infra_error": "the harness failed (grader, sandbox, engine or driver upstream): "
        "not an agent result",
        "harness_stopped": "the harness stopped mid-run (killed); the agent died with it",
    }
    reason = d.get("end_reason")
    if reason is None:
        text = "The run has not ended (no run.json): still in progress, or the harness was killed."
    else:
        text = f"End reason: **{reason}** ({reasons.get(reason, 'see events.jsonl')})"
        if d.get("agent_seconds") is not None:
            text += f", after {_duration(d['agent_seconds'])} of agent time"
        if d.get("agent_exit_code") is not None:
            text += f", agent exit code {d['agent_exit_code']}"
        text += "."
        if d.get("infra_cause"):
            text += f" Cause: {_cell(d['infra_cause'], limit=500)}."
    resumed = d.get("resumed")
    if isinstance(resumed, dict):
        graded = resumed.get("evaluated") or []
        text += (
            f"\n\nResumed at {resumed.get('at')} with `autorl run --resume`: "
            + (f"graded submission(s) {', '.join(map(str, graded))}" if graded else "nothing left")
            + " to grade; earlier scores are the ones recorded before the harness stopped."
        )
    if d.get("error"):
        text += f"\n\nError: {_cell(d['error'], limit=500)}"
    return f"## End\n\n{text}\n"


def _problems(problems: list[str]) -> str:
    if not problems:
        return ""
    return "## Problems reading the records\n\n" + "".join(
        f"- {_cell(p, limit=500)}\n" for p in problems
    )


# formatting ---------------------------------------------------------------------------------------


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = float(seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


def _short(value: str | None, keep: int = 12) -> str:
    if not value:
        return "-"
    text = value.removeprefix("sha256:")
    return f"`{text[:keep]}`"


def _cell(value: Any, limit: int = 300) -> str:
    """One Markdown table cell or inline text: a reason, a path, an error may quote what the
    agent wrote, so it is inert and escaped (:func:`autorl.text.markdown_text`: no control
    characters or newlines, HTML and Markdown escaped, bounded)."""
    return markdown_text(value, limit)
