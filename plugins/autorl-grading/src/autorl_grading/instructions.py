"""What the agent reads about the ``api`` grader in ``instructions.md``: its submission quota
and budget warnings, its HTTP API (the routes of :mod:`autorl_grading.app`) and how the run's
score is made from submissions (:meth:`GradingService.selection`). The engine writes the rest
of the file and asks the grader for these sections, so another grader describes its own API."""

from __future__ import annotations

SEALED_SCORE = """## Your score
Your run's score is the **sealed test score of one selected checkpoint**: the submission you
declare final (`"final": true` on `POST /submit`, or `POST /final`), if it is scored; if you
declare none (or it failed), the one with the best dev score (ties: the later). After your
phase the grader evaluates that checkpoint and the base model on the test split, which no
submission is scored on before and no answer reports. The gap between the selected
checkpoint's dev and test scores is reported too: climbing the dev split does not pay.
"""
REFERENCE_SCORE = (
    "Your score is the best score among your valid submissions, measured by the grader.\n"
)
FINAL_API = (
    '- `POST /final` with JSON `{"submission_id": 3}`: declare an earlier submission your final '
    "checkpoint\n  (it must exist and not have failed; the last declaration counts).\n"
)


def instructions(*, url: str, max_submissions: int, protocol: str) -> dict[str, str]:
    """``budget`` (lines of the budget section), ``api`` (the grading API section, with an
    example) and ``score`` (how a score is made) for a run under scoring ``protocol``."""
    sealed = protocol == "sealed"
    final, scores = (FINAL_API, "dev score") if sealed else ("", "score")
    budget = f"""- Submissions: at most **{max_submissions}** (re-submitting identical weights is \
free).
- Warnings come at 50 % and 90 % of the time in `GET /budget` and in the
  `X-Autorl-Budget-Warning` response header.
"""
    api = f"""## Grading API
Base URL in `$AUTORL_GRADER_URL` (now {url}); send `Authorization: Bearer $AUTORL_TOKEN`.
- `POST /submit` with JSON `{{"model_path": "output/v1", "wait": true}}`: evaluate a checkpoint;
  add `"final": true` to declare it your final one.
  A checkpoint is a full model directory (`model.save_pretrained` + `tokenizer.save_pretrained`)
  or a PEFT LoRA adapter directory (merged onto the base model by the grader).
{final}- `GET /submissions`, `GET /submissions/{{id}}`: status (`received`: being copied and
  checked, `queued`, `evaluating`, `scored`, `failed`, `duplicate`), {scores}, baseline score,
  improvement, reason, `final` (whether it is your declared final one). A checkpoint far larger
  than the base model is refused unread.
- `GET /budget`: time left, submissions used, warnings, `final` (the declared submission).
- `GET /health`; the schema at `/openapi.json`.

Example:

    curl -s -X POST "$AUTORL_GRADER_URL/submit" -H "Authorization: Bearer $AUTORL_TOKEN" \\
         -H 'Content-Type: application/json' -d '{{"model_path": "output/v1", "wait": true}}'
"""
    return {"budget": budget, "api": api, "score": SEALED_SCORE if sealed else REFERENCE_SCORE}
