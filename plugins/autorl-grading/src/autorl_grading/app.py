"""HTTP layer of the grading service. Imported only when a run starts (FastAPI is not cheap).

No endpoint sets the baseline or writes a score: the agent can submit and read, nothing else.
Everything the agent sends is hostile: bodies are capped before they are read (64 KiB: the
largest legitimate body is a ``model_path`` of at most 4096 characters), and no error answer
echoes the request or carries exception text, a traceback or a path of the harness; an
unexpected exception is one rate-limited log line (``autorl_serving.ContainErrors``), never a
traceback on the harness's terminal. Connection limits live in ``autorl_serving``.
"""

from __future__ import annotations

import hmac
import logging
from typing import Any

from autorl_serving import BodyLimit, ContainErrors
from fastapi import Depends, FastAPI, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field

from autorl_grading.service import GradingService, SubmissionRefused

MAX_BODY_BYTES = 64 * 1024
MAX_MODEL_PATH = 4096
log = logging.getLogger("autorl.grading")


class SubmitBody(BaseModel):
    model_path: str = Field(
        ...,
        max_length=MAX_MODEL_PATH,
        description="Checkpoint directory under output/, relative to the workspace.",
    )
    wait: bool = Field(False, description="Block until the evaluation is final.")
    final: bool = Field(
        False,
        description="Declare this submission your final checkpoint: the one the run's score "
        "is measured on (a sealed test after your phase), if it is scored.",
    )


class FinalBody(BaseModel):
    # strict: `true` or "1" is no submission's number; an unknown field is a mistake to say
    model_config = ConfigDict(extra="forbid", strict=True)

    submission_id: int = Field(
        ..., description="An earlier submission (not failed) to declare your final checkpoint."
    )


def _validation_errors(exc: RequestValidationError) -> list[dict[str, str]]:
    """Field and message of each error; never the input (FastAPI's default echoes it)."""
    return [
        {
            "field": ".".join(str(part) for part in error.get("loc", ()))[:200],
            "message": str(error.get("msg", "invalid value"))[:200],
        }
        for error in exc.errors()[:20]
    ]


def create_app(
    service: GradingService,
    token: str,
    *,
    max_body_bytes: int = MAX_BODY_BYTES,
    on_refused: Any = None,
) -> FastAPI:
    """``on_refused(method, path, status)`` hears of the first 200 answers >= 400 (and every
    1000th after): the record of grader probing that post-hoc analysis reads."""
    app = FastAPI(
        title="autorl grading API",
        version="1",
        description="Submit checkpoints for evaluation on the dev split; declare your final "
        "one; read results and the remaining budget. Every endpoint but /health needs the "
        "run's bearer token.",
    )
    app.add_middleware(ContainErrors, what="grading service")  # innermost: the routes' errors
    app.add_middleware(BodyLimit, limit=max_body_bytes)
    refused = [0]

    @app.middleware("http")  # added last: outermost, so it sees BodyLimit's 413s too
    async def note_refused(request: Request, call_next: Any) -> Response:
        response = await call_next(request)
        if on_refused is not None and response.status_code >= 400:
            refused[0] += 1
            if refused[0] <= 200 or refused[0] % 1000 == 0:
                on_refused(request.method[:16], request.url.path[:200], response.status_code)
        return response

    bearer = HTTPBearer(auto_error=False)

    def authorize(
        response: Response, creds: HTTPAuthorizationCredentials | None = Depends(bearer)
    ) -> None:
        if creds is None or not hmac.compare_digest(creds.credentials.encode(), token.encode()):
            raise HTTPException(
                status_code=401,
                detail="missing or wrong bearer token: send 'Authorization: Bearer $AUTORL_TOKEN'",
                headers={"WWW-Authenticate": "Bearer"},
            )
        warnings = service.clock.warnings
        if warnings:
            response.headers["X-Autorl-Budget-Warning"] = warnings[-1]

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/submit", dependencies=[Depends(authorize)], status_code=202)
    def submit(body: SubmitBody, response: Response) -> dict[str, Any]:
        try:
            result = service.submit(body.model_path, wait=body.wait, final=body.final)
        except SubmissionRefused as exc:
            raise HTTPException(status_code=exc.status_code, detail=exc.detail) from None
        if result["status"] in {"scored", "failed", "duplicate"}:
            response.status_code = 200
        return result

    @app.post("/final", dependencies=[Depends(authorize)])
    def final(body: FinalBody) -> dict[str, Any]:
        try:
            return service.declare_final(body.submission_id)
        except SubmissionRefused as exc:
            raise HTTPException(status_code=exc.status_code, detail=exc.detail) from None

    @app.get("/submissions", dependencies=[Depends(authorize)])
    def submissions() -> dict[str, Any]:
        return {"submissions": service.all(), "final": service.final}

    @app.get("/submissions/{submission_id}", dependencies=[Depends(authorize)])
    def submission(submission_id: int) -> dict[str, Any]:
        found = service.get(submission_id)
        if found is None:
            raise HTTPException(status_code=404, detail=f"no submission {submission_id}")
        return found

    @app.get("/budget", dependencies=[Depends(authorize)])
    def budget() -> dict[str, Any]:
        clock = service.clock
        return {
            "elapsed_s": round(clock.elapsed(), 1),
            "remaining_s": round(clock.remaining(), 1),
            "budget_s": clock.wall_seconds,
            "submissions_used": service.used,
            "max_submissions": service.max_submissions,
            "baseline_score": service.baseline_score,
            "best_score": service.best_score(),
            "final": service.final,
            "warnings": clock.warnings,
            "evaluation_seconds_excluded": round(clock.credited, 1),
            **clock.usage(),
        }

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": _validation_errors(exc)})

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("grading API: %s on %s %s", type(exc).__name__, request.method, request.url.path)
        return JSONResponse(
            status_code=500,
            content={"detail": "internal error in the grading service; try again later"},
        )

    return app
