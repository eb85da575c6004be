"""Submission intake and the evaluation queue, independent of HTTP.

Every status change is appended to the submissions log (and fsynced) before the agent hears
about it, so a crash never loses a submission. A submission is only *received* on the request
thread (cheap checks, the code snapshot); an intake thread then copies, validates and hashes the
checkpoint in order, so a huge checkpoint never holds the service's lock and queries stay
answered. Evaluations run one at a time on a worker thread; they keep running after the
deadline for submissions received before it.

Selection (docs/scoring.md): the agent may declare its final submission (``final`` on submit,
or :meth:`GradingService.declare_final`); :meth:`GradingService.selection` names the one the
harness scores on the sealed test split after the agent's phase. The graded directories of the
candidates (the declared one, the best on dev; every scored one with ``keep_scored``) are kept
for that evaluation instead of being deleted after their dev evaluation.
"""

from __future__ import annotations

import json
import queue
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autorl_runner.budget import BudgetClock
from autorl_runner.records_io import SubmissionLog, utc_now

from autorl.events import SubmissionEvent
from autorl_grading import fingerprint, reasons
from autorl_grading.checkpoints import (
    HARNESS_ERRNOS,
    CheckpointError,
    CheckpointInfo,
    confine,
    copy_checkpoint,
    validate,
)
from autorl_grading.graded import assemble, check_config

FINAL = {"scored", "failed", "duplicate"}
FINALS_LOG = "final.jsonl"
DECLARATIONS_PER_SUBMISSION = 4
HARNESS_RETRY_S = (0.5, 1.0, 2.0, 4.0, 8.0)
"""Waits before the intake is tried again when the harness is out of descriptors or memory."""
"""``POST /final`` answers at most this many declarations per submission of the quota: each one
is an fsynced line and may copy a checkpoint in again, so an agent alternating declarations
must not turn the harness's disk into its own (a flood is answered 429, nothing recorded)."""
"""The agent's declarations of its final submission, beside the submissions log."""


class SubmissionRefused(Exception):
    """The submission is not accepted at all (bad path, deadline, quota): an HTTP 4xx."""

    def __init__(self, status_code: int, detail: str) -> None:
        super().__init__(detail)
        self.status_code = status_code
        self.detail = detail


@dataclass
class Submission:
    submission_id: int
    model_path: str
    received_elapsed_s: float
    status: str = "received"
    score: float | None = None
    reason: str | None = None
    weight_hash: str | None = None
    code_revision: str | None = None
    duplicate_of: int | None = None
    copy_of_base: bool = False
    done: threading.Event = field(default_factory=threading.Event, repr=False)
    taken_in: threading.Event = field(default_factory=threading.Event, repr=False)
    """Set once the intake is over (queued, or already final)."""


EvaluateFn = Callable[[int, Path, CheckpointInfo], tuple[float, dict[str, Any]]]
"""``evaluate(submission_id, checkpoint_dir, info) -> (score, extra record fields)``."""


class GradingService:
    """Owns submissions of one run. Thread-safe; the HTTP layer is a thin wrapper over it."""

    def __init__(
        self,
        *,
        workspace: Path,
        storage: Path,
        log: SubmissionLog,
        clock: BudgetClock,
        max_submissions: int,
        baseline_score: float,
        base_weight_hash: str,
        evaluate: EvaluateFn,
        snapshot: Callable[[str], str | None] = lambda message: None,
        notify: Callable[[SubmissionEvent], None] = lambda event: None,
        run_id: str = "",
        keep_checkpoints: bool = False,
        max_checkpoint_bytes: int | None = None,
        base_model_bytes: int | None = None,
        intake_wait_s: float = 2.0,
        base_dir: Path | None = None,
        tokenizer: str = "base",
        keep_scored: bool = False,
    ) -> None:
        self.workspace = workspace
        self.output_dir = workspace / "output"
        self.storage = storage
        self.log = log
        self.clock = clock
        self.max_submissions = max_submissions
        self.baseline_score = baseline_score
        self.base_weight_hash = base_weight_hash
        self._evaluate = evaluate
        self._snapshot = snapshot
        self._notify = notify
        self.run_id = run_id
        self.keep_checkpoints = keep_checkpoints
        self.max_checkpoint_bytes = max_checkpoint_bytes
        self.base_model_bytes = base_model_bytes
        self.intake_wait_s = intake_wait_s
        self.base_dir = base_dir
        """The base model: its config, tokenizer and generation config frame every graded
        directory (``graded.assemble``). None only in tests of the intake alone."""
        self.tokenizer = tokenizer
        self.keep_scored = keep_scored
        """Keep every scored submission's graded directory (``scoring.test_all``)."""
        self._final: int | None = None
        self._finals: SubmissionLog | None = None
        self._declarations = 0
        self._kept: dict[int, Path] = {}
        """Graded directories kept after their evaluation, for the sealed one."""
        self._lock = threading.RLock()
        self._submit_lock = threading.Lock()  # one submission at a time; queries never wait on it
        self._closed: str | None = None
        self._subs: dict[int, Submission] = {}
        self._by_hash: dict[str, int] = {}
        self._intake_queue: queue.Queue[tuple[Submission, Path] | None] = queue.Queue()
        self._queue: queue.Queue[tuple[Submission, Path, CheckpointInfo] | None] = queue.Queue()
        self._intaker = threading.Thread(
            target=self._intake_loop, name="autorl-intake", daemon=True
        )
        self._worker = threading.Thread(target=self._work, name="autorl-evaluator", daemon=True)
        self._intaker.start()
        self._worker.start()

    # queries ----------------------------------------------------------------------------------

    @property
    def used(self) -> int:
        """Submissions that count against the quota (duplicates do not)."""
        with self._lock:
            return sum(1 for s in self._subs.values() if s.status != "duplicate")

    def best_score(self) -> float | None:
        with self._lock:
            scores = [s.score for s in self._subs.values() if s.status == "scored"]
        return max(scores) if scores else None

    @property
    def final(self) -> int | None:
        """The submission the agent declared final (None: none declared)."""
        return self._final

    def _original(self, sid: int | None) -> Submission | None:
        """The submission ``sid`` stands for: a duplicate's original, else itself."""
        sub = self._subs.get(sid) if sid is not None else None
        seen: set[int] = set()
        while sub is not None and sub.duplicate_of is not None and sub.submission_id not in seen:
            seen.add(sub.submission_id)
            sub = self._subs.get(sub.duplicate_of)
        return sub

    def _best_dev(self) -> Submission | None:
        """The scored submission with the best dev score; ties: the later."""
        scored = [s for s in self._subs.values() if s.status == "scored" and s.score is not None]
        return max(scored, key=lambda s: (s.score, s.submission_id), default=None)

    def selection(self) -> dict[str, Any]:
        """The checkpoint the run's score is measured on: the declared final if it is scored (a
        duplicate stands for its original; a copy of the base is scored), else the best dev
        score (ties: the later), else none. ``graded_dir`` is its kept graded directory (None
        for a copy of the base, whose test score is the baseline's)."""
        with self._lock:
            declared = self._original(self._final)
            if declared is not None and declared.status == "scored":
                chosen, rule = declared, "declared"
            else:
                chosen = self._best_dev()
                rule = "best_dev" if chosen is not None else "none"
            return {
                "submission_id": chosen.submission_id if chosen else None,
                "rule": rule,
                "declared": self._final,
                "dev_score": chosen.score if chosen else None,
                "copy_of_base": bool(chosen and chosen.copy_of_base),
                "graded_dir": self._kept.get(chosen.submission_id) if chosen else None,
                "best_dev": self.best_score(),
                "scored": {
                    s.submission_id: self._kept.get(s.submission_id)
                    for s in self._subs.values()
                    if s.status == "scored"
                },
            }

    def _candidates(self) -> set[int]:
        """Whose graded directories are kept: the declared one and the best on dev (every
        scored one with ``keep_scored``)."""
        if self.keep_scored:
            return {s.submission_id for s in self._subs.values() if s.status == "scored"}
        ids = set()
        for sub in (self._original(self._final), self._best_dev()):
            if sub is not None:
                ids.add(sub.submission_id)
        return ids

    def _prune(self) -> None:
        """Delete the kept graded directories that are no longer candidates."""
        if self.keep_checkpoints:
            return
        with self._lock:
            keep = self._candidates()
            gone = {sid: path for sid, path in self._kept.items() if sid not in keep}
            for sid in gone:
                del self._kept[sid]
        for path in gone.values():
            shutil.rmtree(path, ignore_errors=True)

    def release(self) -> None:
        """Delete every kept graded directory (after the sealed evaluation), unless
        ``keep_checkpoints``."""
        if self.keep_checkpoints:
            return
        with self._lock:
            kept, self._kept = self._kept, {}
        for path in kept.values():
            shutil.rmtree(path, ignore_errors=True)

    def declare_final(self, submission_id: int) -> dict[str, Any]:
        """The agent names an earlier submission as its final one. It must exist and not have
        failed; a duplicate stands for its original. A scored one whose graded copy was
        already let go (it was no candidate) is taken in again from its path in the workspace,
        and refused if its weights there changed. Recorded in the log before the answer."""
        with self._submit_lock:
            with self._lock:
                self._refuse_if_closed()
                limit = DECLARATIONS_PER_SUBMISSION * self.max_submissions
                if self._declarations >= limit:
                    raise SubmissionRefused(
                        429,
                        f"final declarations used up ({limit}, {DECLARATIONS_PER_SUBMISSION} per "
                        "submission of the quota): your last declaration stands",
                    )
                self._declarations += 1
                if submission_id < 1:
                    raise SubmissionRefused(
                        400,
                        f"submission_id must be a submission's number (1 or more), "
                        f"not {submission_id}",
                    )
                sub = self._subs.get(submission_id)
                if sub is None:
                    raise SubmissionRefused(
                        404,
                        f"no submission {submission_id}: GET /submissions lists yours "
                        f"({len(self._subs)} so far)",
                    )
                original = self._original(submission_id) or sub
                if sub.status == "failed" or original.status == "failed":
                    raise SubmissionRefused(
                        409,
                        f"submission {submission_id} failed ({sub.reason or 'no score'}): "
                        "it cannot be your final checkpoint; declare a scored one",
                    )
                retake = (
                    original.status == "scored"
                    and not original.copy_of_base
                    and original.submission_id not in self._kept
                    and not self.keep_checkpoints
                )
            if retake:
                self._retake(sub, original)
            with self._lock:
                self._declare(sub)
                return self.view(sub)

    def _retake(self, sub: Submission, original: Submission) -> None:
        """Copy ``sub``'s checkpoint in again for the sealed evaluation of ``original`` (its
        graded copy was deleted after its dev evaluation); the weights must hash as scored."""
        changed = SubmissionRefused(
            409,
            f"submission {sub.submission_id}'s weights are no longer at {sub.model_path} "
            "(the directory changed or is gone since it was scored): submit it again with "
            '"final": true',
        )
        try:
            source = confine(self.workspace, self.output_dir, sub.model_path)
        except CheckpointError:
            raise changed from None
        dest = self.storage / str(original.submission_id) / "checkpoint"
        shutil.rmtree(dest.parent, ignore_errors=True)
        try:
            info, graded = self._take_in(source, dest)
        except (CheckpointError, OSError):
            shutil.rmtree(dest.parent, ignore_errors=True)
            raise changed from None
        if info.weight_hash != original.weight_hash:
            shutil.rmtree(dest.parent, ignore_errors=True)
            raise changed
        if graded != dest:
            shutil.rmtree(dest, ignore_errors=True)
        with self._lock:
            self._kept[original.submission_id] = graded

    def _finals_path(self) -> Path:
        return Path(self.log.path).with_name(FINALS_LOG)

    def _declare(self, sub: Submission) -> None:
        """Record the declaration in ``final.jsonl`` beside the submissions log (fsynced; the
        last line counts), then take it."""
        if self._finals is None:
            self._finals = SubmissionLog(self._finals_path())
        self._finals.append(
            {
                "submission_id": sub.submission_id,
                "time": utc_now(),
                "elapsed_s": round(self.clock.elapsed(), 3),
            }
        )
        self._final = sub.submission_id
        self._prune()

    def _restored_final(self) -> int | None:
        """The last declaration a run whose harness died recorded (None: none)."""
        try:
            lines = self._finals_path().read_text(encoding="utf-8").splitlines()
        except OSError:
            return None
        declared = None
        for line in lines:
            try:
                sid = json.loads(line).get("submission_id")
            except (ValueError, AttributeError):
                continue  # a line cut by the crash
            if isinstance(sid, int) and not isinstance(sid, bool):
                declared = sid
        return declared

    def view(self, sub: Submission) -> dict[str, Any]:
        best = self.best_score()
        copy_of_base = sub.copy_of_base
        if sub.duplicate_of is not None:  # the original may have been scored since
            original = self._subs[sub.duplicate_of]
            sub.score = original.score
            copy_of_base = original.copy_of_base
        return {
            "submission_id": sub.submission_id,
            "status": sub.status,
            "model_path": sub.model_path,
            "score": sub.score,
            "baseline_score": self.baseline_score,
            "improvement": None if sub.score is None else round(sub.score - self.baseline_score, 4),
            "best_score": best,
            "reason": sub.reason,
            "duplicate_of": sub.duplicate_of,
            "copy_of_base": copy_of_base,
            "weight_hash": sub.weight_hash,
            "final": self._final == sub.submission_id,
        }

    def get(self, submission_id: int) -> dict[str, Any] | None:
        with self._lock:
            sub = self._subs.get(submission_id)
        return None if sub is None else self.view(sub)

    def all(self) -> list[dict[str, Any]]:
        with self._lock:
            subs = list(self._subs.values())
        return [self.view(s) for s in subs]

    def pending(self) -> int:
        with self._lock:
            return sum(1 for s in self._subs.values() if s.status not in FINAL)

    # intake -----------------------------------------------------------------------------------

    def _record(self, sub: Submission, status: str, **fields: Any) -> None:
        """Append the status change to the log first, then update memory and observers."""
        entry = {
            "submission_id": sub.submission_id,
            "status": status,
            "time": utc_now(),
            "elapsed_s": round(self.clock.elapsed(), 3),
            **fields,
        }
        self.log.append(entry)
        sub.status = status
        if status != "received":
            sub.taken_in.set()
        self._notify(
            SubmissionEvent(
                run_id=self.run_id,
                submission_id=sub.submission_id,
                status=status,
                score=fields.get("score"),
                reason=fields.get("reason"),
                record=entry,
            )
        )

    def _refuse_if_closed(self) -> None:
        if self._closed is not None:
            raise SubmissionRefused(
                409, f"the agent has stopped ({self._closed}): no more submissions"
            )

    def _admit(self, model_path: str) -> Path:
        """The cheap checks: stopped, deadline, path confinement, quota."""
        with self._lock:
            self._refuse_if_closed()
            if self.clock.expired():
                raise SubmissionRefused(
                    409, "the budget's deadline has passed: no more submissions"
                )
        try:
            source = confine(self.workspace, self.output_dir, model_path)
        except CheckpointError as exc:
            raise SubmissionRefused(400, str(exc)) from None
        with self._lock:
            if self.used >= self.max_submissions:
                raise SubmissionRefused(
                    409,
                    f"submission quota used up ({self.max_submissions} of {self.max_submissions})",
                )
        return source

    def submit(
        self,
        model_path: str,
        wait: bool = False,
        timeout: float | None = None,
        final: bool = False,
    ) -> dict:
        """Receive a submission and hand it to the intake thread.

        With ``wait``, answer once it is final (or ``timeout`` passes). Without, answer once the
        intake is over or after ``intake_wait_s``, whichever comes first: a small checkpoint is
        answered ``queued`` or with its refusal, a huge one ``received``. No lock is held while
        waiting, so queries are answered meanwhile. ``final`` declares it the agent's final
        submission (if it then fails, selection falls back to the best dev score).
        """
        with self._submit_lock:
            source = self._admit(model_path)
            with self._lock:
                self._refuse_if_closed()  # the agent may have been stopped meanwhile
                sid = len(self._subs) + 1
                sub = Submission(sid, model_path, self.clock.elapsed())
                try:  # logged before it is registered: no submission exists unrecorded
                    self._record(sub, "received", model_path=model_path)
                except OSError:
                    raise SubmissionRefused(
                        503, "the grader cannot record submissions right now: try again shortly"
                    ) from None
                self._subs[sid] = sub
                if final:
                    self._declare(sub)
            try:  # may take a while: not under _lock
                sub.code_revision = self._snapshot(f"submission {sid}")
            except Exception:  # a history that cannot be written never loses the submission
                sub.code_revision = None
            with self._lock:
                self._intake_queue.put((sub, source))
                result = self.view(sub)
        if wait:
            sub.done.wait(timeout)
        elif self.intake_wait_s > 0:
            sub.taken_in.wait(self.intake_wait_s)
        else:
            return result
        return self.view(sub)

    def _intake_loop(self) -> None:
        """Copy, validate, hash and deduplicate each received submission, in order."""
        while True:
            item = self._intake_queue.get()
            if item is None:
                return
            sub, source = item
            try:
                self._intake(sub, source)
            except Exception as exc:  # a bug must not stop the intake of later submissions
                shutil.rmtree(self.storage / str(sub.submission_id), ignore_errors=True)
                with self._lock:
                    if sub.status not in FINAL:
                        failed = f"intake failed: {type(exc).__name__}"
                        self._fail(sub, reasons.text(reasons.HARNESS, failed))
            finally:
                self._intake_queue.task_done()

    def _graded(self, dest: Path) -> tuple[CheckpointInfo, Path]:
        """Validate the stored copy and build the directory the evaluator reads: the base
        model's frame around exactly the tensors the fingerprint hashed (``graded.py``)."""
        info = validate(dest)
        if self.base_dir is None:
            return info, dest
        check_config(dest, self.base_dir, tokenizer=self.tokenizer)
        graded = dest.parent / "graded"
        shutil.rmtree(graded, ignore_errors=True)
        return info, assemble(dest, self.base_dir, graded, tokenizer=self.tokenizer)

    def _take_in(self, source: Path, dest: Path) -> tuple[CheckpointInfo, Path]:
        """Copy the agent's checkpoint into harness storage (confined, size-capped), then
        validate it and build its graded directory."""
        copy_checkpoint(
            source,
            dest,
            self.workspace,
            max_bytes=self.max_checkpoint_bytes,
            base_bytes=self.base_model_bytes,
        )
        return self._graded(dest)

    def _copy(
        self, sub: Submission, source: Path, dest: Path
    ) -> tuple[CheckpointInfo, Path] | None:
        """The slow part, holding no lock; None (the submission failed) if it cannot be used.
        Out of descriptors or memory (the harness's, not the checkpoint's fault: an agent's
        socket flood can take every descriptor for a while) the copy is tried again."""
        waits = iter(HARNESS_RETRY_S)
        while True:
            try:
                return self._take_in(source, dest)
            except CheckpointError as exc:
                reason = reasons.invalid(str(exc))
            except OSError as exc:  # never the harness's own paths in a reason the agent reads
                wait = next(waits, None) if exc.errno in HARNESS_ERRNOS else None
                if wait is not None:
                    shutil.rmtree(dest.parent, ignore_errors=True)
                    time.sleep(wait)
                    continue
                reason = reasons.invalid(
                    f"could not copy the checkpoint: {exc.strerror or type(exc).__name__}"
                )
            break
        shutil.rmtree(dest.parent, ignore_errors=True)
        with self._lock:
            if sub.status not in FINAL:
                self._fail(sub, reason)
        return None

    def _intake(self, sub: Submission, source: Path) -> None:
        dest = self.storage / str(sub.submission_id) / "checkpoint"
        taken = self._copy(sub, source, dest)
        if taken is None:
            return
        info, graded = taken
        with self._lock:
            if sub.status in FINAL:  # finalized while it was being copied
                shutil.rmtree(dest.parent, ignore_errors=True)
                return
            sub.weight_hash = info.weight_hash
            earlier = self._by_hash.get(info.weight_hash)
            if earlier is not None:
                self._duplicate(sub, earlier)
                original = self._subs[earlier]
                if (
                    self._final == sub.submission_id
                    and original.status == "scored"
                    and not original.copy_of_base
                    and earlier not in self._kept
                ):  # declared final: this copy stands in for the original's, let go before
                    self._kept[earlier] = graded
                    if graded != dest:
                        shutil.rmtree(dest, ignore_errors=True)
                    return
            elif info.weight_hash == self.base_weight_hash:
                self._by_hash[info.weight_hash] = sub.submission_id
                self._copy_of_base(sub)
            else:
                self._by_hash[info.weight_hash] = sub.submission_id
                self._record(
                    sub,
                    "queued",
                    weight_hash=info.weight_hash,
                    kind=info.kind,
                    graded_files=list(info.weight_files),
                    code_revision=sub.code_revision,
                )
                self._queue.put((sub, graded, info))
                return
        shutil.rmtree(dest.parent, ignore_errors=True)

    def _duplicate(self, sub: Submission, earlier: int) -> None:
        original = self._subs[earlier]
        sub.duplicate_of, sub.score, sub.reason = earlier, original.score, original.reason
        self._finish(
            sub,
            "duplicate",
            duplicate_of=earlier,
            score=original.score,
            reason=reasons.text(
                reasons.DUPLICATE, f"same weights as submission {earlier}; not evaluated again"
            ),
        )

    def _copy_of_base(self, sub: Submission) -> None:
        sub.copy_of_base = True
        sub.reason = reasons.text(
            reasons.COPY_OF_BASE, "identical to the base model: scored as the baseline"
        )
        self._scored(sub, self.baseline_score, reason=sub.reason)

    def _scored(self, sub: Submission, score: float, wake: bool = True, **fields: Any) -> None:
        sub.score = score
        self._finish(sub, "scored", wake=wake, score=score, copy_of_base=sub.copy_of_base, **fields)

    def _fail(self, sub: Submission, reason: str, wake: bool = True, **fields: Any) -> None:
        sub.reason = reason
        self._finish(sub, "failed", wake=wake, reason=reason, **fields)

    def _finish(self, sub: Submission, status: str, wake: bool = True, **fields: Any) -> None:
        """Record ``sub``'s final ``status`` (``fields`` with the hashes intake found) and wake
        whoever waits for it; an evaluation wakes them only after its clean-up
        (``_after_evaluation``), so an answer never shows a graded directory about to go."""
        self._record(
            sub, status, weight_hash=sub.weight_hash, code_revision=sub.code_revision, **fields
        )
        if wake:
            sub.done.set()

    # the end of the run -----------------------------------------------------------------------

    def close_intake(self, reason: str) -> None:
        """Refuse every later submission (the agent has stopped); those received keep going."""
        with self._lock:
            if self._closed is None:
                self._closed = reason

    def finalize(self, reason: str) -> list[int]:
        """Fail every submission not yet final, with ``reason``, so no report shows one still
        pending; for a run that must end before its evaluations complete. Closes the intake.
        Returns the ids failed."""
        with self._lock:
            self.close_intake(reason)
            pending = [s for s in self._subs.values() if s.status not in FINAL]
            for sub in pending:
                self._fail(sub, reasons.text(reasons.DEADLINE, reason))
        return [s.submission_id for s in pending]

    # resuming a run whose harness died ------------------------------------------------------

    def restore(self, entries: list[dict[str, Any]]) -> list[int]:
        """Rebuild the submissions from the log of a run whose harness died, and carry on with
        those that were not final: ``received`` ones are taken in again from the workspace (the
        copy may be partial), ``queued``/``evaluating`` ones are evaluated from the harness's own
        copy. Intake stays closed (the agent is gone). Returns the ids resumed."""
        latest: dict[int, dict[str, Any]] = {}
        declared = self._restored_final()
        for entry in entries:
            sid = entry.get("submission_id")
            if isinstance(sid, int) and not isinstance(sid, bool):
                latest.setdefault(sid, {}).update(entry)
        resumed = []
        with self._lock:
            self.close_intake("the run was resumed after its harness stopped")
            for sid in sorted(latest):
                fields = latest[sid]
                sub = Submission(
                    sid,
                    str(fields.get("model_path", "")),
                    float(fields.get("elapsed_s") or 0.0),
                    status=str(fields.get("status")),
                    score=fields.get("score"),
                    reason=fields.get("reason"),
                    weight_hash=fields.get("weight_hash"),
                    code_revision=fields.get("code_revision"),
                    duplicate_of=fields.get("duplicate_of"),
                    copy_of_base=bool(fields.get("copy_of_base")),
                )
                self._subs[sid] = sub
                if sub.status in FINAL:
                    sub.done.set()
                    sub.taken_in.set()
                    if sub.weight_hash and sub.status != "duplicate":
                        self._by_hash.setdefault(sub.weight_hash, sid)
                    graded = self.storage / str(sid) / "graded"
                    if sub.status == "scored" and graded.is_dir():  # kept for the sealed one
                        self._kept[sid] = graded
                    continue
                resumed.append(sid)
            if declared in self._subs:
                self._final = declared
            for sid in resumed:
                self._resume_one(self._subs[sid])
        return resumed

    def _resume_one(self, sub: Submission) -> None:
        dest = self.storage / str(sub.submission_id) / "checkpoint"
        if sub.status == "received":
            shutil.rmtree(dest.parent, ignore_errors=True)
            try:
                source = confine(self.workspace, self.output_dir, sub.model_path)
            except CheckpointError as exc:
                self._fail(sub, str(exc))
                return
            self._intake_queue.put((sub, source))
            return
        try:
            info, graded = self._graded(dest)
        except (CheckpointError, OSError):
            self._fail(
                sub,
                reasons.text(
                    reasons.HARNESS, "the harness stopped before this checkpoint was stored whole"
                ),
            )
            return
        if sub.weight_hash:
            self._by_hash.setdefault(sub.weight_hash, sub.submission_id)
        self._queue.put((sub, graded, info))

    # evaluation -------------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            sub, dest, info = item
            try:
                self._evaluate_one(sub, dest, info)
            except Exception as exc:  # a bug must not stop the evaluation of later submissions
                reason, error = reasons.from_exception(exc)
                with self._lock:
                    if sub.status not in FINAL:
                        self._fail(sub, reason, wake=False, **error)
            finally:
                try:
                    self._after_evaluation(sub, dest)
                finally:
                    sub.done.set()
                    self._queue.task_done()

    def _after_evaluation(self, sub: Submission, graded: Path) -> None:
        """Delete the stored copy, keeping the graded directory of a selection candidate (a
        hard-linked tree, so the copy beside it can go)."""
        if self.keep_checkpoints:
            return
        raw = graded.parent / "checkpoint"
        if raw != graded:
            shutil.rmtree(raw, ignore_errors=True)
        with self._lock:
            if sub.status == "scored":
                self._kept[sub.submission_id] = graded
            else:
                shutil.rmtree(graded, ignore_errors=True)
        self._prune()

    def _evaluate_one(self, sub: Submission, dest: Path, info: CheckpointInfo) -> None:
        with self._lock:
            if sub.status in FINAL:  # finalized while queued
                return
            self._record(sub, "evaluating")
        observed = self._observe(dest)
        try:
            score, extra = self._evaluate(sub.submission_id, dest, info)
            score = float(score)
        except Exception as exc:
            reason, error = reasons.from_exception(exc)
            with self._lock:
                if sub.status not in FINAL:
                    self._fail(sub, reason, wake=False, **error, **observed)
            return
        with self._lock:
            if sub.status in FINAL:  # finalized while evaluating: the late score is dropped
                return
            self._scored(sub, score, wake=False, **observed, **extra)

    def _observe(self, graded: Path) -> dict[str, Any]:
        """The fingerprint of exactly what is graded (distance to the base); a check that
        cannot run is recorded as a problem, never skipped silently."""
        if self.base_dir is None:
            return {}
        try:
            return fingerprint.observe(graded, self.base_dir)
        except Exception as exc:  # a fingerprint bug must not fail the submission
            return {
                "base_distance": None,
                "fingerprint_problem": f"the distance to the base could not be computed "
                f"({type(exc).__name__})",
            }

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every submission is final; True if none is left."""
        with self._lock:
            subs = list(self._subs.values())
        return all(not (sub.status not in FINAL and not sub.done.wait(timeout)) for sub in subs)

    def close(self, timeout: float = 5.0) -> None:
        """Stop the intake and evaluation threads (after what they are doing)."""
        self._intake_queue.put(None)
        self._intaker.join(timeout=timeout)
        self._queue.put(None)
        self._worker.join(timeout=timeout)
