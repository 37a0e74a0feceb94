"""Health report for /healthz: database, pgvector, background worker, embedder, read replicas.

The database, pgvector and the embedder are essential (503 without one: every search embeds its
query). A missing or stuck worker, or a replica down or behind, degrades the service while search of
stored data goes on; stuck runs are read from the runs themselves (ingest/watchdog.py), not the
worker's word. A sandbox layer the kernel refuses (`parser_sandbox`) is `ok: false` with the reason,
without degrading the service.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field

from django.db import DatabaseError, connection
from django.utils import timezone

from kb.errors import KBError
from kb.replicas import replica_report


@dataclass
class HealthReport:
    database: dict = field(default_factory=dict)
    pgvector: dict = field(default_factory=dict)
    worker: dict = field(default_factory=dict)
    runs: dict = field(default_factory=dict)
    embedder: dict = field(default_factory=dict)
    replicas: list = field(default_factory=list)
    parser_sandbox: dict = field(default_factory=dict)
    answers: dict = field(
        default_factory=dict
    )  # the answer model: never fails health (answers are optional)

    @property
    def essential_ok(self) -> bool:
        return bool(self.database.get("ok") and self.pgvector.get("ok") and self.embedder.get("ok"))

    @property
    def status(self) -> str:
        if not self.essential_ok:
            return "down"
        healthy = (
            self.worker.get("ok")
            and self.runs.get("ok", True)
            and all(replica["ok"] for replica in self.replicas)
        )
        return "ok" if healthy else "degraded"

    def as_dict(self, runs_in_detail: bool = False) -> dict:
        """`runs_in_detail`: each stalled or waiting run with its id, time and reason (whose worker
        names its host and process); otherwise only how many, since runs belong to tenants and
        /healthz answers anyone."""
        report = {"status": self.status, **asdict(self)}
        if not runs_in_detail:
            report["runs"] = {
                key: len(value) if isinstance(value, list) else value
                for key, value in report["runs"].items()
            }
        return report


def health_report() -> HealthReport:
    report = HealthReport()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('server_version')")
            report.database = {"ok": True, "server_version": cursor.fetchone()[0]}
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        report.pgvector = (
            {"ok": True, "version": row[0]}
            if row
            else {"ok": False, "error": "the vector extension is not installed; run migrate"}
        )
    except (DatabaseError, KBError) as exc:
        connection.close()
        report.database = {"ok": False, "error": _first_line(exc)}
        report.pgvector = {"ok": False, "error": "database unreachable"}
        report.worker = {"ok": False, "error": "database unreachable"}
    else:
        report.worker = _worker_status()
        report.runs = _runs_status()
    report.replicas = replica_report()
    report.embedder = _embedder_status()
    report.parser_sandbox = _parser_sandbox_status()
    report.answers = _answers_status()
    return report


def _worker_status() -> dict:
    from django_q.status import Stat

    try:
        clusters = Stat.get_all()
    except DatabaseError as exc:
        return {"ok": False, "error": _first_line(exc)}
    now = timezone.now()
    alive = [c for c in clusters if (now - c.timestamp).total_seconds() < 30]
    return {
        "ok": bool(alive),
        "clusters": len(alive),
        "last_heartbeat": max((c.timestamp for c in clusters), default=None),
    }


def _runs_status() -> dict:
    """Runs that do not move: stalled (running without progress) and waiting (queued, untaken)."""
    from ingest.watchdog import stalled_runs, waiting_runs

    try:
        stalled, waiting = stalled_runs(), waiting_runs()
    except DatabaseError as exc:  # reachable but not migrated, or failing now
        connection.close()
        return {"ok": False, "error": _first_line(exc)}
    return {
        "ok": not stalled and not waiting,
        "stalled": [
            {"run": run.run_id, "no_progress_since": run.since, "reason": run.reason}
            for run in stalled
        ],
        "waiting": [
            {"run": run.run_id, "queued_at": run.since, "reason": run.reason} for run in waiting
        ],
    }


def _embedder_status() -> dict:
    from kb.embedding.embedders import check_embedder_dimension, get_embedder, strong_floor

    try:
        embedder = get_embedder()
        check_embedder_dimension(embedder)
    except KBError as exc:
        return {"ok": False, "code": exc.code, "error": exc.message}
    strong, why = strong_floor()
    return {
        "ok": True,
        "model": embedder.model_id,
        "dimension": embedder.dimension,
        "strong_cosine": strong,
        "strong_cosine_from": why,
    }


def _answers_status() -> dict:
    from answers.service import model_status

    return model_status()


@functools.cache  # the kernel's answer does not change while the process lives
def _parser_sandbox_status() -> dict:
    from ingest.extract.sandbox import LAYERS, probe, refused

    layers = probe()
    return {
        "ok": not refused(layers),
        "layers": {layer: layers.get(layer, "not entered") for layer in LAYERS},
    }


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
