"""Load test: gunicorn with several workers serving the JSON API and the search page, wrk
(Debian) as the client.

    scripts/load [--namespace bench-scifact] [--queries ../shared/bench/scifact/queries.jsonl]
                 [--connections 8 16 32] [--duration 60] [--workers 3] [--surfaces api page]
                 [--tree ../earlier-clone]

Every request asks the next query of the BEIR queries file (a wrk Lua script cycles through
them): the API as GET /api/search with a read token made for this run and revoked after it, the
page as GET /?q= signed in as a temporary staff user deleted after it. Prints, per surface and
concurrency level, requests/s, latency p50/p95/p99 and the count of errors (socket errors,
timeouts and non-2xx answers); exits 1 if any request failed. `--tree` serves another checkout
(a clone of an earlier commit, with its own .venv and database) the same way, for a before and
after on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PORT = 8790
UNLIMITED = str(10**7)  # requests a minute: the load test measures the server, not its rate limits


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--namespace", default="bench-scifact")
    parser.add_argument(
        "--queries", default=str(ROOT.parent / "shared/bench/scifact/queries.jsonl")
    )
    parser.add_argument("--connections", type=int, nargs="+", default=[8, 16, 32])
    parser.add_argument("--duration", type=int, default=60, help="seconds per concurrency level")
    parser.add_argument("--workers", type=int, default=3, help="gunicorn worker processes")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--surfaces", nargs="+", choices=SURFACES, default=list(SURFACES))
    parser.add_argument(
        "--tree", default=str(ROOT), help="The checkout to serve (default this one)"
    )
    args = parser.parse_args()

    tree = Path(args.tree).resolve()
    python = str(tree / ".venv" / "bin" / "python")
    queries = [
        json.loads(line)["text"] for line in open(args.queries, encoding="utf-8") if line.strip()
    ]
    token_id, token = _token(python, tree, args.namespace)
    user_id, session = _session(python, tree)
    scripts = {
        surface: _lua(
            SURFACES[surface](queries, args.namespace, args.limit),
            {"api": f"Authorization: Bearer {token}", "page": f"Cookie: sessionid={session}"}[
                surface
            ],
        )
        for surface in args.surfaces
    }
    env = {**os.environ, "KB_RATE_LIMIT_STAFF": UNLIMITED}
    server = subprocess.Popen(
        [
            python,
            "-m",
            "gunicorn",
            "config.wsgi",
            "--workers",
            str(args.workers),
            "--bind",
            f"127.0.0.1:{PORT}",
            "--timeout",
            "60",
            "--log-level",
            "warning",
        ],
        cwd=tree,
        env=env,
    )
    try:
        _wait_until_up()
        _warm_up(args.namespace, token, queries[: args.workers * 4])
        print(
            f"{tree} (commit {_commit(tree)}): namespace {args.namespace}, {len(queries)} queries, "
            f"gunicorn {args.workers} workers, {args.duration}s per level, limit {args.limit}"
        )
        print(
            f"{'surface':>7} {'clients':>7} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'errors':>7}"  # noqa: E501
        )
        failed = 0
        for surface, script in scripts.items():
            for connections in args.connections:
                result = _wrk(script, connections, args.duration)
                failed += result["errors"]
                print(
                    f"{surface:>7} {connections:>7} {result['rps']:>8.1f} {result['p50']:>8.1f} "
                    f"{result['p95']:>8.1f} {result['p99']:>8.1f} {result['errors']:>7}"
                )
        return 1 if failed else 0
    finally:
        server.terminate()
        server.wait(timeout=30)
        for script in scripts.values():
            script.unlink(missing_ok=True)
        _manage(
            python,
            tree,
            "shell",
            "-c",
            (
                "from kb.models import ApiToken; from django.utils import timezone; "
                "from django.contrib.auth import get_user_model; "
                f"ApiToken.objects.filter(pk={token_id}).update(revoked_at=timezone.now()); "
                f"get_user_model().objects.filter(pk={user_id}).delete()"
            ),
        )


def _api_paths(queries: list[str], namespace: str, limit: int) -> list[str]:
    return [
        f"/api/search?{urllib.parse.urlencode({'query': q, 'namespace': namespace, 'limit': limit})}"  # noqa: E501
        for q in queries
    ]


def _page_paths(queries: list[str], namespace: str, limit: int) -> list[str]:
    return [f"/?{urllib.parse.urlencode({'q': q, 'namespace': namespace})}" for q in queries]


SURFACES = {"api": _api_paths, "page": _page_paths}


def _manage(python: str, tree: Path, *args: str) -> str:
    result = subprocess.run([python, "manage.py", *args], cwd=tree, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(result.stderr)
    return result.stdout.strip()


def _commit(tree: Path) -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True
    )
    return done.stdout.strip() or "?"


def _token(python: str, tree: Path, namespace: str) -> tuple[int, str]:
    out = _manage(
        python,
        tree,
        "shell",
        "-c",
        (
            "from kb.auth import issue_token; from kb.models import Namespace; "
            "token, secret = issue_token('load test', "
            f"namespaces=[Namespace.objects.get(slug={namespace!r})], "
            f"rate_limit_per_minute={UNLIMITED}); print(token.pk, secret)"
        ),
    )
    token_id, secret = out.splitlines()[-1].split()
    return int(token_id), secret


def _session(python: str, tree: Path) -> tuple[int, str]:
    """A temporary superuser and a session cookie for it, as a sign-in would make."""
    out = _manage(
        python,
        tree,
        "shell",
        "-c",
        (
            "import time; from django.contrib.auth import get_user_model, SESSION_KEY, "
            "BACKEND_SESSION_KEY, HASH_SESSION_KEY; from django.contrib.sessions.backends.db "
            "import SessionStore; user = "
            "get_user_model().objects.create_user(f'load-{time.time_ns()}', is_staff=True, "
            "is_superuser=True); s = SessionStore(); s[SESSION_KEY] = str(user.pk); "
            "s[BACKEND_SESSION_KEY] = 'django.contrib.auth.backends.ModelBackend'; "
            "s[HASH_SESSION_KEY] = user.get_session_auth_hash(); s.create(); print(user.pk, "
            "s.session_key)"
        ),
    )
    user_id, key = out.splitlines()[-1].split()
    return int(user_id), key


def _lua(paths: list[str], header: str) -> Path:
    name, _, value = header.partition(": ")
    lines = ",\n".join(json.dumps(p) for p in paths)
    body = f"""
local paths = {{
{lines}
}}
local counter = 0
wrk.headers[{json.dumps(name)}] = {json.dumps(value)}
function setup(thread)
  thread:set("offset", counter * 97)
  counter = counter + 1
end
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", paths[((offset + i) % #paths) + 1])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("KB_RESULT %d %d %d %d %d %d %d %d %d %d\\n", summary.requests, summary.duration,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(95), latency:percentile(99)))
end
"""  # noqa: E501
    handle = tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False)
    handle.write(body)
    handle.close()
    return Path(handle.name)


def _wait_until_up() -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{PORT}/healthz", timeout=5)
            return
        except OSError:
            time.sleep(0.5)
    sys.exit("gunicorn did not come up")


def _warm_up(namespace: str, token: str, queries: list[str]) -> None:
    """Load the embedding model in every worker before measuring."""
    for query in queries:
        url = f"http://127.0.0.1:{PORT}/api/search?" + urllib.parse.urlencode(
            {"query": query, "namespace": namespace}
        )
        urllib.request.urlopen(
            urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"}), timeout=120
        )


def _wrk(script: Path, connections: int, duration: int) -> dict:
    """One wrk run; the Lua script's done() prints exact counts and percentiles (microseconds)."""
    threads = min(connections, os.cpu_count() or 2)
    out = subprocess.run(
        [
            "wrk",
            "-t",
            str(threads),
            "-c",
            str(connections),
            "-d",
            f"{duration}s",
            "--timeout",
            "30s",
            "-s",
            str(script),
            f"http://127.0.0.1:{PORT}",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    line = next(line for line in out.splitlines() if line.startswith("KB_RESULT"))
    requests, duration_us, *errors, p50, p95, p99 = (int(n) for n in line.split()[1:])
    return {
        "rps": requests / (duration_us / 1e6),
        "p50": p50 / 1000,
        "p95": p95 / 1000,
        "p99": p99 / 1000,
        "errors": sum(errors),
        "requests": requests,
    }


if __name__ == "__main__":
    sys.exit(main())
