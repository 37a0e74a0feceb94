"""What `kb_sync_bench` measures: a git source's first sync, a resync with no new commit, and a
commit that edits one file, renames one and deletes one, each through the real connector,
pipeline and database, with the git HTTP requests each run made."""

from __future__ import annotations

import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from evaluation.git_http import GitHttpServer, WorkRepo
from ingest.evaluate import ingest_now
from kb.models import IngestItem, IngestRun, Namespace, Source

EDIT = "\n\nA paragraph the sync benchmark added to this file.\n"


@dataclass
class RunFacts:
    seconds: float
    git_requests: (
        int  # HTTP requests git made (a fetch is the ref advertisement and one pack request)
    )
    changed: int
    unchanged: int
    removed: int
    failed: int
    chunks_embedded: int  # chunks sent to the embedder
    outcomes: dict[str, str]  # ref -> "status: reason" of every item that is not unchanged


@dataclass
class SyncBench:
    files: int  # files in the repository
    documents: int  # documents the first sync wrote
    first: RunFacts
    noop: RunFacts
    three_changes: RunFacts
    edited: str
    renamed: tuple[str, str]
    deleted: str


def run_facts(run: IngestRun, seconds: float, requests: int) -> RunFacts:
    outcomes = {
        item.ref: f"{item.status}: {item.reason}"
        for item in run.items.exclude(status=IngestItem.Status.UNCHANGED).order_by("ref")
    }
    return RunFacts(
        round(seconds, 3),
        requests,
        run.items_changed,
        run.items_unchanged,
        run.items_removed,
        run.items_failed,
        run.chunks_total,
        outcomes if len(outcomes) <= 20 else {},
    )


def sync_bench(
    directory: Path, work: Path, *, include: list[str], exclude: list[str] = (), embedder=None
) -> SyncBench:
    """Commit `directory` as a repository under `work`, serve it on loopback, and time the runs."""
    repo = WorkRepo(work / "served" / "docs")
    shutil.copytree(directory, repo.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git"))
    repo.commit("the documentation")
    files = len(repo.git("ls-files", "-z").split("\0")) - 1
    namespace_slug = "bench-sync"
    Source.objects.filter(namespace__slug=namespace_slug).delete()
    namespace, _ = Namespace.objects.get_or_create(
        slug=namespace_slug, defaults={"title": "Sync benchmark"}
    )
    with GitHttpServer(work / "served") as server:
        source = Source.objects.create(
            namespace=namespace,
            name="docs",
            kind="git",
            location=server.url("docs/.git"),
            options={
                key: list(value)
                for key, value in (("include", include), ("exclude", exclude))
                if value
            },
        )

        def timed() -> RunFacts:
            before, started = len(server.requests), time.perf_counter()
            run = ingest_now(source, embedder)
            if run.status != IngestRun.Status.SUCCEEDED:
                raise RuntimeError(f"run #{run.pk} {run.status}: {run.error}")
            return run_facts(run, time.perf_counter() - started, len(server.requests) - before)

        first = timed()
        noop = timed()
        refs = sorted(source.documents.values_list("ref", flat=True))
        if len(refs) < 3:
            raise RuntimeError(
                f"the first sync wrote {len(refs)} documents; the benchmark changes three"
            )
        edited, renamed, deleted = refs[0], refs[1], refs[2]
        target = str(Path(renamed).with_name("renamed-" + Path(renamed).name))
        with open(repo.path / edited, "a", encoding="utf-8") as handle:
            handle.write(EDIT)
        repo.git("mv", renamed, target)
        repo.git("rm", "--quiet", deleted)
        repo.commit("edit one file, rename one, delete one")
        changes = timed()
    return SyncBench(files, len(refs), first, noop, changes, edited, (renamed, target), deleted)


def as_dict(result: SyncBench) -> dict:
    return asdict(result)
