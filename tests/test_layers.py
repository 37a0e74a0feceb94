"""The direction of dependencies, read from the source (every import, also those inside functions).

- `kb` is the floor: the data model, settings, conf, errors, auth and the console's base
  classes import no app. Only the project wiring (`WIRING`) may reach up into the apps.
- An app uses another app only through its public modules (`PUBLIC`): its services and its pure
  modules. Everything else in an app is its own business.
- Pure modules (`PURE`) import neither Django nor a database driver nor any module that does.

docs/architecture.md states the same rules.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
APPS = ("ingest", "retrieval", "capabilities")
PACKAGES = ("kb",) + APPS
WIRING = {"kb.urls", "kb.api", "kb.mcp", "kb.health", "kb.demo", "kb.settings", "kb.wsgi"}  # and kb.management.*
PUBLIC = {
    "ingest": {"ingest.services", "ingest.embed", "ingest.uploads", "ingest.watchdog",
               "ingest.extract.sandbox"},
    "retrieval": {"retrieval.service", "retrieval.query", "retrieval.citations", "retrieval.ranker",
                  "retrieval.bm25"},
    "capabilities": {"capabilities.service"},
}
SURFACES = (".api", ".views", ".mcp")  # what the wiring mounts: each app's API router, pages and MCP tools
PURE = {
    "kb.errors", "kb.revisions", "kb.datafiles", "kb.names", "kb.markup", "kb.vocabulary",
    "retrieval.errors", "retrieval.ranker", "retrieval.bm25", "retrieval.fusion", "retrieval.query",
    "retrieval.citations", "retrieval.evals", "retrieval.context", "retrieval.diversity",
    "ingest.errors", "ingest.chunk", "ingest.boilerplate", "ingest.scope", "ingest.decisions", "ingest.run_status",
    "ingest.extract", "ingest.extract.html", "ingest.extract.html_markdown", "ingest.extract.text",
    "ingest.extract.result", "ingest.extract.ocr", "ingest.extract.sandbox", "kb.lookalikes",
    "ingest.extract.documents", "ingest.extract.blocks", "ingest.extract.pdf", "ingest.extract.opendocument",
    "capabilities.errors", "capabilities.definitions", "capabilities.contracts",
}
IMPURE_ROOTS = {"django", "django_q", "ninja", "psycopg", "pgvector"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(source: str, known: set[str]) -> set[str]:
    """Every module an import statement names; `from a import b` names `a.b` when that is a module."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & known
            found.update(submodules or {node.module})
    return found


def project_modules() -> dict[str, str]:
    return {module_name(path): path.read_text(encoding="utf-8")
            for package in PACKAGES for path in (REPO / package).rglob("*.py") if "migrations" not in path.parts}


def violations(sources: dict[str, str]) -> list[str]:
    known = set(sources)
    found = []
    for module, source in sorted(sources.items()):
        package = module.split(".")[0]
        for imported in sorted(imports_of(source, known)):
            root = imported.split(".")[0]
            if module in PURE and (root in IMPURE_ROOTS or (imported in known and imported not in PURE)):
                found.append(f"{module} is pure but imports {imported}")
            if root not in APPS or root == package:
                continue
            if package == "kb":
                wiring = module in WIRING or module.startswith("kb.management.")
                if not wiring:
                    found.append(f"{module} is part of the floor but imports the app module {imported}")
                elif imported not in PUBLIC[root] and not imported.endswith(SURFACES):
                    found.append(f"{module} wires {imported}, which is neither public nor a surface of {root}")
            elif imported not in PUBLIC[root] and imported != root:
                found.append(f"{module} reaches into {imported}; {root}'s public modules are "
                             f"{', '.join(sorted(PUBLIC[root]))}")
    return found


def test_the_tree_keeps_the_layers():
    sources = project_modules()
    assert {"kb.models", "ingest.pipeline", "retrieval.service", "capabilities.service"} <= set(sources)
    assert PURE <= set(sources), sorted(PURE - set(sources))  # the list names real modules
    assert violations(sources) == []


def test_a_forbidden_import_is_caught():
    sources = project_modules()
    planted = {
        "kb.models": "from retrieval.service import search\n",  # the floor reaching up
        "capabilities.store": "from ingest.pipeline import IngestPipeline\n",  # an app's internals
        "retrieval.ranker": "def f():\n    from django.db import connection\n",  # a pure module doing I/O
        "kb.api": "from ingest.pipeline import IngestPipeline\n",  # wiring, but not through a public module
    }
    found = violations({**sources, **{m: sources[m] + text for m, text in planted.items()}})
    assert len(found) == len(planted), found
    for module in planted:
        assert any(line.startswith(f"{module} ") for line in found), (module, found)
