"""Where a search request's time goes, per component, in this tree and optionally in another.

    .venv/bin/python manage.py kb_profile_requests --namespace bench-scifact-onnx-int8 \
        --beir ../shared/bench/scifact [--against ../old --against-namespace bench-scifact]

Each tree runs in its own child process with its own settings and database, in turns, so both are
measured on the same machine in one run. A component's figure is the wall time inside it per
request, so nested components overlap; wrapping costs about a microsecond per call.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

# (label, "module:qualname", surfaces it applies to); the first that exists in a tree is timed
COMPONENTS = [
    ("whole request (server)", ["django.core.handlers.base:BaseHandler.get_response"]),
    ("view, without middleware", ["django.core.handlers.base:BaseHandler._get_response"]),
    ("authentication (principal)", ["kb.auth:principal_for"]),
    ("rate-limit counter", ["kb.ratelimit:hit"]),
    ("token last-use write", ["kb.auth:_touch", "kb.auth:touch_token"]),
    ("search service, all of it", ["retrieval.service:run_search", "retrieval.service:search"]),
    (
        "query log write",
        [
            "retrieval.service:_log",
            "retrieval.querylog:record",
            "django.db.models.query:QuerySet.create",
        ],
    ),
    ("plan (namespace row, weights)", ["retrieval.service:_plan"]),
    (
        "channels, with the wait for the embedding",
        ["retrieval.gathering:gather", "retrieval.service:_gather"],
    ),
    ("query embedding (own thread)", ["retrieval.gathering:_embed", "retrieval.service:_embed"]),
    (
        "lexical statistics",
        ["retrieval.lexical:term_statistics", "retrieval.channels:_term_statistics"],
    ),
    ("lexical channel", ["retrieval.lexical:lexical_search", "retrieval.channels:lexical_channel"]),
    ("names channel", ["retrieval.channels:names_channel"]),
    ("identifier channel", ["retrieval.channels:identifier_channel"]),
    (
        "candidate rows",
        ["retrieval.passage_rows:candidate_rows", "retrieval.channels:candidate_rows"],
    ),
    ("vector channel", ["retrieval.channels:vector_candidates"]),
    ("fusion (ranker)", ["retrieval.ranker:rank"]),
    ("hits, tiers, grouping", ["retrieval.hits:build_result", "retrieval.service:_result"]),
    ("hydration (rows shown)", ["retrieval.passage_rows:hydrate", "retrieval.channels:hydrate"]),
    ("API payload (presenters)", ["retrieval.presenters:search_payload"]),
    ("API serialisation (ninja)", ["ninja.operation:Operation._result_to_response"]),
    ("page rows (presenters)", ["retrieval.page:results_page"]),
    ("spelling suggestion", ["retrieval.views:_correction"]),
    ("template rendering", ["django.template.backends.django:Template.render"]),
]


class Command(BaseCommand):
    help = " ".join(__doc__.split("\n\n")[0].split())  # the first paragraph, on one line

    def add_arguments(self, parser):
        parser.add_argument("--namespace", required=True)
        parser.add_argument("--beir", required=True, help="BEIR folder whose queries.jsonl is sent")
        parser.add_argument("--queries", type=int, default=300)
        parser.add_argument(
            "--against", help="Another tree (a clone of an earlier commit) to measure in turn"
        )
        parser.add_argument("--against-namespace", help="Its namespace (default --namespace)")
        parser.add_argument("--rounds", type=int, default=2, help="Turns per tree, alternated")
        parser.add_argument("--json", action="store_true")

    def handle(self, **options):
        from django.conf import settings

        run(argparse.Namespace(**options), Path(settings.BASE_DIR))


def run(args: argparse.Namespace, here: Path) -> None:
    """Each tree measured `args.rounds` times in turn; the tables (and the JSON) printed."""
    trees = {"this tree": (here, args.namespace)}
    if args.against:
        trees["against"] = (Path(args.against).resolve(), args.against_namespace or args.namespace)
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for turn in range(args.rounds):
        for name, (tree, namespace) in trees.items():
            print(f"round {turn + 1}: {name} ({tree})", file=sys.stderr, flush=True)
            runs[name].append(_child(tree, namespace, args))
    report = {name: _merge(found) for name, found in runs.items()}
    _print(report, trees)
    if args.json:
        print(json.dumps(report))


def _queries(folder: Path, count: int) -> list[str]:
    with open(folder / "queries.jsonl", encoding="utf-8") as handle:
        texts = [json.loads(line)["text"] for line in handle if line.strip()]
    return texts[:count]


def _child(tree: Path, namespace: str, args) -> dict:
    python = tree / ".venv" / "bin" / "python"
    command = [
        str(python),
        str(Path(__file__).resolve()),
        "--namespace",
        namespace,
        "--beir",
        str(Path(args.beir).resolve()),
        "--queries",
        str(args.queries),
    ]
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "HF_HUB_OFFLINE": "1",
        "KB_RATE_LIMIT_STAFF": str(10**6),
    }
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise CommandError(f"{tree}: the child failed\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _merge(found: list[dict]) -> dict:
    """Samples of every turn pooled, then summarised."""
    merged: dict = {}
    for run in found:
        for surface, parts in run.items():
            for label, samples in parts.items():
                merged.setdefault(surface, {}).setdefault(label, []).extend(samples)
    return {
        surface: {label: _summary(samples) for label, samples in parts.items()}
        for surface, parts in merged.items()
    }


def _summary(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {
        "mean": round(statistics.fmean(ordered), 2),
        "p50": round(ordered[len(ordered) // 2], 2),
        "p95": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 2),
    }


def _print(report: dict, trees: dict) -> None:
    names = list(trees)
    for surface in ("search", "api", "page"):
        print(f"\n{surface}: mean / p50 / p95 ms per request")
        print("| component | " + " | ".join(names) + " |")
        print("|---|" + "---|" * len(names))
        labels = ["end to end"] + [label for label, _ in COMPONENTS]
        for label in labels:
            cells = []
            for name in names:
                figures = report[name].get(surface, {}).get(label)
                cells.append(
                    f"{figures['mean']} / {figures['p50']} / {figures['p95']}" if figures else "-"
                )
            if any(cell != "-" for cell in cells):
                print(f"| {label} | " + " | ".join(cells) + " |")


# --- the child: one tree, in-process
# --------------------------------------------------------------------------


def _measure(namespace: str, texts: list[str]) -> dict:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client

    from kb.auth import issue_token
    from kb.models import Namespace
    from retrieval.service import search

    timer = _Timer()
    user = get_user_model().objects.create_user(
        f"kb-profile-{time.time_ns()}", is_staff=True, is_superuser=True
    )
    token, secret = issue_token(
        f"kb-profile-{time.time_ns()}",
        namespaces=[Namespace.objects.get(slug=namespace)],
        rate_limit_per_minute=10**6,
    )
    try:
        api = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Bearer {secret}")
        page = Client(HTTP_HOST="localhost")
        page.force_login(user)
        surfaces = {
            "search": lambda text: search(text, namespace, limit=10),
            "api": lambda text: _ok(
                api.get("/api/search", {"query": text, "namespace": namespace, "limit": 10})
            ),
            "page": lambda text: _ok(page.get("/", {"q": text, "namespace": namespace})),
        }
        timer.install()
        found: dict[str, dict[str, list[float]]] = {}
        for surface, call in surfaces.items():
            call(texts[0])  # warm-up
            for text in texts:
                timer.reset()
                started = time.perf_counter()
                call(text)
                elapsed = (time.perf_counter() - started) * 1000
                parts = found.setdefault(surface, {})
                parts.setdefault("end to end", []).append(elapsed)
                for label, ms in timer.totals.items():
                    parts.setdefault(label, []).append(ms)
        return found
    finally:
        user.delete()
        token.delete()


def _ok(response):
    if response.status_code != 200:
        raise RuntimeError(f"answered {response.status_code}: {response.content[:300]!r}")
    return response


class _Timer:
    """Wraps the components' functions wherever they are bound (their module, every module that
    imported them by name, their class) and sums wall time per label, outermost call only."""

    def __init__(self):
        self.totals: dict[str, float] = {}
        self.depth: dict[str, int] = {}

    def reset(self) -> None:
        self.totals = {}

    def install(self) -> None:
        import importlib

        for label, candidates in COMPONENTS:
            for spec in candidates:
                module_name, qualname = spec.split(":")
                try:
                    owner = importlib.import_module(module_name)
                except ImportError:
                    continue
                *outer, name = qualname.split(".")
                for part in outer:
                    owner = getattr(owner, part, None)
                original = getattr(owner, name, None) if owner is not None else None
                if original is None:
                    continue
                wrapped = self._wrap(label, original)
                setattr(owner, name, wrapped)
                if not outer:  # `from module import name` elsewhere holds the original too
                    for module in list(sys.modules.values()):
                        for attr, value in list(vars(module).items() if module else ()):
                            if value is original:
                                setattr(module, attr, wrapped)
                break

    def _wrap(self, label: str, original):
        import functools

        timer = self

        @functools.wraps(original)
        def timed(*args, **kwargs):
            depth = timer.depth.get(label, 0)
            timer.depth[label] = depth + 1
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                timer.depth[label] = depth
                if depth == 0:
                    timer.totals[label] = (
                        timer.totals.get(label, 0.0) + (time.perf_counter() - started) * 1000
                    )

        return timed


if __name__ == "__main__":  # the child, in whichever tree's Python runs it
    child = argparse.ArgumentParser()
    child.add_argument("--namespace", required=True)
    child.add_argument("--beir", required=True)
    child.add_argument("--queries", type=int, required=True)
    options = child.parse_args()
    print(json.dumps(_measure(options.namespace, _queries(Path(options.beir), options.queries))))
