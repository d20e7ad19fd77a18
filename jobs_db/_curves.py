"""Training curves: each job's results file, stored once as one row, read back by job."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import and_, or_, select

from jobs_db._access import Target, insert_or_update, set_columns, table_of, using
from jobs_db._filters import JOBS
from jobs_db._queries import chronological
from jobs_db._tables import FinetuneJob, TrainingCurve
from jobs_db.errors import DatabaseInputError

__all__ = ["job_curves", "jobs_missing_curves", "store_curve"]

CURVES = table_of(TrainingCurve)


def store_curve(target: Target, curve: TrainingCurve) -> None:
    """Record a job's curves (replacing any stored for it); the job must be recorded."""
    if not curve.header or curve.header[0] != "step":
        raise DatabaseInputError(
            f"curves of job {curve.job_id}: the first column must be 'step', not "
            f"{(curve.header or ['nothing'])[0]!r}"
        )
    width = len(curve.header)
    for index, row in enumerate(curve.rows):
        if len(row) != width:
            raise DatabaseInputError(
                f"curves of job {curve.job_id}: row {index + 1} has {len(row)} values for "
                f"{width} columns"
            )
    values = set_columns(curve)
    values.pop("job_id", None)
    with using(target, write=True) as session:
        if session.get(FinetuneJob, curve.job_id) is None:
            raise DatabaseInputError(
                f"fine-tuning job {curve.job_id!r} is not in the database; record it first"
            )
        insert_or_update(session, CURVES, {"job_id": curve.job_id}, values)


def job_curves(target: Target, job_ids: Iterable[str] | None = None) -> dict[str, TrainingCurve]:
    """``{job id: curves}`` for the given jobs (every job with curves when None)."""
    statement = select(TrainingCurve)
    if job_ids is not None:
        wanted = sorted(set(job_ids))
        if not wanted:
            return {}
        statement = statement.where(CURVES.c.job_id.in_(wanted))
    with using(target, write=False) as session:
        curves = list(session.scalars(statement))
    return {curve.job_id: curve for curve in sorted(curves, key=lambda c: c.job_id)}


def jobs_missing_curves(target: Target) -> list[FinetuneJob]:
    """Succeeded jobs whose results file is known but not stored yet (oldest first)."""
    joined = JOBS.outerjoin(CURVES, CURVES.c.job_id == JOBS.c.id)
    statement = (
        select(FinetuneJob)
        .select_from(joined)
        .where(
            and_(
                JOBS.c.status == "succeeded",
                JOBS.c.result_file_id.is_not(None),
                or_(CURVES.c.job_id.is_(None), CURVES.c.file_id != JOBS.c.result_file_id),
            )
        )
    )
    with using(target, write=False) as session:
        jobs = list(session.scalars(statement))
    return sorted(jobs, key=lambda job: chronological(job.created_at, job.id))
