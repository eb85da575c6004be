"""HTTP layer of the grading service. Imported only when a run starts (FastAPI is not cheap).

No endpoint sets the baseline or writes a score: the agent can submit and read, nothing else.
"""

from __future__ import annotations

import hmac
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

from autorl.grading.service import GradingService, SubmissionRefused


class SubmitBody(BaseModel):
    model_path: str = Field(
        ...,
        description="Checkpoint directory under output/, relative to the workspace.",
    )
    wait: bool = Field(False, description="Block until the evaluation is final.")


def create_app(service: GradingService, token: str) -> FastAPI:
    app = FastAPI(
        title="autorl grading API",
        version="1",
        description="Submit checkpoints for evaluation on the held-out split; read results "
        "and the remaining budget. Every endpoint but /health needs the run's bearer token.",
    )
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
            result = service.submit(body.model_path, wait=body.wait)
        except SubmissionRefused as exc:
            raise HTTPException(status_code=exc.status_code, detail=exc.detail) from None
        if result["status"] in {"scored", "failed", "duplicate"}:
            response.status_code = 200
        return result

    @app.get("/submissions", dependencies=[Depends(authorize)])
    def submissions() -> dict[str, Any]:
        return {"submissions": service.all()}

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
            "warnings": clock.warnings,
        }

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Any:  # pragma: no cover
        from fastapi.responses import JSONResponse

        return JSONResponse(status_code=500, content={"detail": f"internal error: {exc}"})

    return app
