"""`manage.py qcluster`: django-q2's cluster, with the ingest watchdog in its main process.

That process only waits once it has forked the sentinel, so the watchdog keeps working when every
worker hangs, which a django-q2 schedule (run by a worker) cannot. It starts after the fork, and the
database connection is closed before it, so the sentinel does not inherit it.
"""

from __future__ import annotations

import logging
import os

import psutil
from django.conf import settings
from django.db import DatabaseError, connections
from django_q.cluster import Cluster
from django_q.management.commands.qcluster import Command as DjangoQCommand

from ingest.watchdog import (
    fail_stuck_runs,
    register_cluster,
    release_orphaned_tasks,
    stop_abandoned_workers,
)
from kb.conf import kb_settings

logger = logging.getLogger(__name__)


class Command(DjangoQCommand):
    help = "Starts the django-q2 cluster (the ingest workers) and its watchdog."

    def handle(self, *args, **options):
        settings.SECRET_KEY  # noqa: B018 - django-q2 signs tasks with it: fail now if it is missing
        if options.get("cluster_name"):
            os.environ["Q_CLUSTER_NAME"] = options["cluster_name"]
        started = (
            register_cluster()
        )  # before it claims a task: what a dead cluster claimed is released
        release_orphaned_tasks()
        connections.close_all()  # the sentinel forked next must not share this process's connection
        cluster = Cluster()
        cluster.start()
        if options.get("run_once", False):
            cluster.stop()
            return
        interval = kb_settings().watchdog_seconds
        _watch(started)  # records the processes just forked at once
        while cluster.sentinel is not None and cluster.sentinel.is_alive():
            cluster.sentinel.join(timeout=interval)
            if cluster.sentinel.is_alive():
                _watch(started)
        connections.close_all()


def _watch(started) -> None:
    """One watchdog pass; a database that is away now is tried again at the next pass."""
    try:
        own = {}
        for child in psutil.Process().children(recursive=True):
            try:
                own[child.pid] = child.create_time()
            except psutil.NoSuchProcess:
                continue
        register_cluster(started, family=own)
        fail_stuck_runs()
        release_orphaned_tasks()
        stop_abandoned_workers(own)
    except DatabaseError as exc:
        logger.warning("watchdog pass skipped: %s", exc)
        connections.close_all()
