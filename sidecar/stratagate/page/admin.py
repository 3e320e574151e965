"""Administration on the Memory page: retry failed jobs, add and remove imports, delete a namespace. Each reuses the
code the JSON-RPC methods and the command line run (jobs/queue.py retry, imports/store.py, purge.py), as the
user, and names the audit entries it wrote."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator

from stratagate import ids, purge
from stratagate.app import App
from stratagate.errors import Invalid, NotFound
from stratagate.imports import store as imports
from stratagate.imports.parsers import parse_text
from stratagate.jobs import pipeline, queue
from stratagate.page.writes import ACTOR, NamespaceParams, Params, Written, namespace_id
from stratagate.protocol import method
from stratagate.protocol.results import ImportRemoveResult, ImportReport
from stratagate.protocol.types import Name, Result
from stratagate.redact import redact
from stratagate.storage.db import collect_audit_ids

# --- jobs ------------------------------------------------------------------------------------------------------------


class RetryParams(Params):
    job: Annotated[str, StringConstraints(min_length=1, max_length=64)] | None = Field(
        None, description="one job, 'job_7' (failed or queued)")
    # A Literal of the kinds the pipeline declares, built at import (mypy reads only literal values there).
    kind: Literal[pipeline.KINDS] | None = Field(None, description="with status 'failed': only jobs of this kind")  # type: ignore[valid-type]
    status: Literal["failed"] | None = Field(None, description="'failed': every failed job (of kind, if given)")
    namespace: Name | None = Field(None, description="only jobs of this namespace")

    @model_validator(mode="after")
    def _one(self) -> RetryParams:
        if (self.job is None) == (self.status is None):
            raise ValueError("give job (one job) or status 'failed' (every failed job, optionally of one kind)")
        if self.job is not None and self.kind is not None:
            raise ValueError("kind filters status 'failed'; a single job takes job alone")
        return self


class RetryResult(Written):
    retried: list[str]


@method("page.jobs.retry", params=RetryParams, result=RetryResult, http="POST /jobs/retry")
async def jobs_retry(app: App, p: RetryParams) -> dict[str, Any]:
    """Put failed jobs back in the queue with a fresh attempt budget (one, or every failed one)."""
    job_key = None
    if p.namespace is not None:
        async with app.db.transaction() as conn:
            await namespace_id(conn, p.namespace)
    if p.job is not None:
        job_key = ids.parse(p.job, "job")
        if job_key is None:
            raise Invalid(f"job must look like 'job_7' (got {p.job!r})", {"field": "job"})
        job = await queue.get_job(app.db, job_key)
        if job is None or (p.namespace is not None and job.namespace != p.namespace):
            raise NotFound(f"unknown job {p.job}")
        if job.status in ("running", "done"):
            raise Invalid(f"job {p.job} is {job.status}; only failed or queued jobs can be retried")
    with collect_audit_ids() as audit_ids:
        retried = await queue.retry(app.db, job_key, p.namespace, ACTOR, kind=p.kind)
    return {"retried": [ids.make("job", j) for j in retried], "audit_ids": audit_ids}


# --- imports ---------------------------------------------------------------------------------------------------------


class ImportAddParams(NamespaceParams):
    text: Annotated[str, StringConstraints(min_length=1, max_length=20 * 2**20)] = Field(
        description="the export file's text (the page reads the file in the browser)")
    filename: Name | None = Field(None, description="the file's name, recorded as the source name")
    format: Literal["mem0", "chatgpt", "markdown", "text"] | None = Field(None, description="default: detect")
    scope: Literal["project", "user"] = Field("project", description="where the imported memories live")


class ImportAddResult(ImportReport, Written):
    pass


@method("page.imports.add", params=ImportAddParams, result=ImportAddResult, http="POST /imports/add")
async def imports_add(app: App, p: ImportAddParams) -> dict[str, Any]:
    """Import an export file's text into the namespace (what `stratagate import` does)."""
    async with app.db.transaction() as conn:
        await namespace_id(conn, p.namespace)
    imports.check_scope(p.scope)
    # Parsing up to 20 MiB is blocking work: the event loop keeps serving meanwhile.
    batch = await asyncio.to_thread(parse_text, p.text, p.format, p.filename or "<page upload>")
    with collect_audit_ids() as audit_ids:
        report = await imports.run_import(app.db, p.namespace, batch, scope=p.scope, actor=ACTOR)
    return report | {"audit_ids": audit_ids}


class ImportPreviewParams(NamespaceParams):
    text: Annotated[str, StringConstraints(min_length=1, max_length=20 * 2**20)] = Field(
        description="the export file's text, as page.imports.add takes it")
    filename: Name | None = None
    format: Literal["mem0", "chatgpt", "markdown", "text"] | None = Field(None, description="default: detect")


class PreviewItem(Result):
    text: str
    source_ref: str
    created_at: str | None
    kind: str | None


class ImportPreviewResult(Result):
    format: str
    source_name: str
    count: int
    items: list[PreviewItem] = Field(description="the first 50 items")
    warnings: list[str]


@method("page.imports.preview", params=ImportPreviewParams, result=ImportPreviewResult, http="POST /imports/preview")
async def imports_preview(app: App, p: ImportPreviewParams) -> dict[str, Any]:
    """What page.imports.add would read from the text (its format and items), writing nothing: the page shows it and
    asks before adding."""
    async with app.db.transaction() as conn:
        await namespace_id(conn, p.namespace)
    batch = await asyncio.to_thread(parse_text, p.text, p.format, p.filename or "<page upload>")
    items = [{"text": redact(i.text)[:500], "source_ref": i.source_ref, "kind": i.kind,
              "created_at": i.created_at.isoformat() if i.created_at else None} for i in batch.items[:50]]
    return {"format": batch.format, "source_name": batch.source_name, "count": len(batch.items), "items": items,
            "warnings": batch.warnings}


class ImportRemoveParams(NamespaceParams):
    import_id: Annotated[str, StringConstraints(min_length=1, max_length=64)]


class ImportRemovePageResult(ImportRemoveResult, Written):
    pass


@method("page.imports.remove", params=ImportRemoveParams, result=ImportRemovePageResult, http="POST /imports/remove")
async def imports_remove(app: App, p: ImportRemoveParams) -> dict[str, Any]:
    """Remove an import: its events are archived and what they superseded is current again."""
    key = imports.parse_import_id(p.import_id)
    async with app.db.transaction() as conn:
        await namespace_id(conn, p.namespace)
    with collect_audit_ids() as audit_ids:
        result = await imports.remove_import(app.db, key, p.namespace, actor=ACTOR)
    return result | {"audit_ids": audit_ids}


# --- delete a namespace ----------------------------------------------------------------------------------------------


class DeleteParams(NamespaceParams):
    confirm: str = Field(max_length=600, description="the namespace name again, exactly")


class DeleteResult(Written):
    deleted: Literal[True]
    counts: dict[str, int]
    note: str


@method("page.namespaces.delete", params=DeleteParams, result=DeleteResult, http="POST /namespaces/delete")
async def namespaces_delete(app: App, p: DeleteParams) -> dict[str, Any]:
    """Delete every row of the namespace, for good (secure delete, then VACUUM). Not undoable."""
    if p.confirm != p.namespace:
        raise Invalid("type the namespace name to confirm", {"field": "confirm"})
    with collect_audit_ids() as audit_ids:
        counts = await purge.delete_namespace(app.db, p.namespace, ACTOR)
    return {"deleted": True, "counts": counts, "audit_ids": audit_ids,
            "note": f"{p.namespace!r} and everything in it were deleted; this cannot be undone"}
