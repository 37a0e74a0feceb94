"""The direction of dependencies, read from the source (every import, also those inside functions).

- `kb` is the floor: the data model, conf, errors, auth, the embedding models and the console's
  base classes import no app and not the project.
- `config` is the roof (`PROJECT`): settings, URLs, the API and MCP mounting, middleware, health,
  the embedded server, `kb_run`. It may import every app, through their public modules and their
  surfaces (`SURFACES`), and nothing imports it.
- The apps stand in one order, `APPS` (`settings.PRODUCT_APPS`): ingest writes what retrieval
  reads, capabilities build on both, evaluation measures them all. An app imports only apps below
  it, and only through their public modules (`PUBLIC`): services, pure vocabularies and errors.
  Everything else in an app is its own business, except to the lab (`LAB`, evaluation), which
  measures the internals of every app below it and which nothing imports.
- The scripts in `scripts/` are callers from outside: they import only public modules.
- Pure modules (`PURE`) import neither Django nor a database driver nor any module that does.
- No import cycle, between apps or between modules, counting imports inside functions too.

docs/architecture.md states the same rules and draws the result.
"""

from __future__ import annotations

import ast
from pathlib import Path

from django.conf import settings

REPO = Path(__file__).resolve().parent.parent
PROJECT = "config"  # the roof: the only package that mounts the apps
PACKAGES = (*settings.PRODUCT_APPS, PROJECT)  # the floor, the apps bottom to top, the roof
APPS = settings.PRODUCT_APPS[1:]
LAB = "evaluation"
PUBLIC = {
    "ingest": {
        "ingest.service",
        "ingest.uploads",
        "ingest.watchdog",
        "ingest.errors",
        "ingest.filetypes",
        "ingest.decisions",
        "ingest.recall",
        "ingest.evaluate",
        "ingest.extract.sandbox",
        "ingest.markdown_blocks",
    },
    "retrieval": {
        "retrieval.service",
        "retrieval.results",
        "retrieval.lookups",
        "retrieval.query",
        "retrieval.citations",
        "retrieval.ranker",
        "retrieval.bm25",
        "retrieval.fusion",
        "retrieval.errors",
        "retrieval.curation",
        "retrieval.querylog",
        "retrieval.spelling",
    },
    "capabilities": {"capabilities.service", "capabilities.errors"},
    "answers": {
        "answers.service",
        "answers.citations",
        "answers.gate",
        "answers.prompt",
        "answers.errors",
    },
    "evaluation": set(),  # no app imports evaluation; only the wiring mounts its surfaces
}
SURFACES = (
    ".api",
    ".views",
    ".mcp",
)  # what the wiring mounts: each app's API router, pages and MCP tools
PURE = {
    "kb.errors",
    "kb.revisions",
    "kb.datafiles",
    "kb.names",
    "kb.markup",
    "kb.vocabulary",
    "kb.lookalikes",
    "kb.languages",
    "kb.language_detection",
    "kb.model_languages",
    "kb.spellings",
    "retrieval.breadth",
    "evaluation.provenance",
    "kb.jsonbody",
    "kb.embedding.errors",
    "kb.embedding.compared",
    "kb.embedding.http",
    "kb.settings_table",
    "kb.identity.rules",
    "retrieval.errors",
    "retrieval.candidates",
    "retrieval.scope",
    "retrieval.ranker",
    "retrieval.scoring",
    "retrieval.bm25",
    "retrieval.agreement",
    "retrieval.fusion",
    "retrieval.query",
    "retrieval.citations",
    "retrieval.context",
    "retrieval.diversity",
    "ingest.errors",
    "ingest.chunk",
    "ingest.chunk_units",
    "ingest.stylesheets",
    "ingest.markdown_blocks",
    "ingest.boilerplate",
    "ingest.links",
    "ingest.scope",
    "ingest.decisions",
    "ingest.run_status",
    "ingest.recall",
    "ingest.extract",
    "ingest.extract.html",
    "ingest.extract.html_main_content",
    "ingest.extract.html_chrome",
    "ingest.extract.html_headings",
    "ingest.extract.html_writer",
    "ingest.extract.html_tables",
    "ingest.extract.html_code",
    "ingest.extract.text",
    "ingest.extract.result",
    "ingest.extract.ocr",
    "ingest.extract.sandbox",
    "ingest.extract.documents",
    "ingest.extract.blocks",
    "ingest.extract.pdf",
    "ingest.extract.pdf_words",
    "ingest.extract.opendocument",
    "ingest.extract.word",
    "ingest.extract.numformat",
    "capabilities.errors",
    "capabilities.definitions",
    "capabilities.contracts",
    "answers.errors",
    "answers.citations",
    "answers.claim_words",
    "answers.prompt",
    "evaluation.errors",
    "evaluation.suites",
    "evaluation.metrics",
    "evaluation.site_bench",
}
IMPURE_ROOTS = {"django", "django_q", "ninja", "psycopg", "pgvector"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(source: str, known: set[str]) -> set[str]:
    """Every module an import statement names; `from a import b` names `a.b` when that is a
    module."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & known
            found.update(submodules or {node.module})
    return found


def project_modules() -> dict[str, str]:
    return {
        module_name(path): path.read_text(encoding="utf-8")
        for package in (*PACKAGES, "scripts")
        for path in (REPO / package).rglob("*.py")
        if "migrations" not in path.parts
    }


def import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """Each project module -> the project modules it imports."""
    known = set(sources)
    return {
        module: (imports_of(source, known) & known) - {module} for module, source in sources.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted: every
    import cycle, however long, is inside one of them."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(root: str) -> None:  # iterative: the graph is deep enough to trouble recursion
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def app_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Package -> the packages it imports."""
    drawn: dict[str, set[str]] = {package: set() for package in PACKAGES}
    for module, imported in graph.items():
        if module.split(".")[0] not in drawn:
            continue
        drawn[module.split(".")[0]].update(
            i.split(".")[0] for i in imported if i.split(".")[0] != module.split(".")[0]
        )
    return drawn


def violations(sources: dict[str, str]) -> list[str]:
    graph = import_graph(sources)
    found = []
    for module in sorted(graph):
        package = module.split(".")[0]
        for imported in sorted(imports_of(sources[module], set(sources))):
            root = imported.split(".")[0]
            if module in PURE and (
                root in IMPURE_ROOTS or (imported in graph and imported not in PURE)
            ):
                found.append(f"{module} is pure but imports {imported}")
            if root == PROJECT and package != PROJECT:
                found.append(f"{module} imports the project module {imported}: nothing does")
            if root not in APPS or root == package:
                continue
            if package == "kb":
                found.append(f"{module} is part of the floor but imports the app module {imported}")
            elif package == PROJECT:
                if imported not in PUBLIC.get(root, ()) and not imported.endswith(SURFACES):
                    found.append(
                        f"{module} mounts {imported}, which is neither public nor a surface "
                        f"of {root}"
                    )
            elif package not in APPS:  # a script
                if imported not in PUBLIC.get(root, ()):
                    found.append(
                        f"{module} is a script but imports {imported}, which is not public"
                    )
            elif APPS.index(root) > APPS.index(package):
                found.append(
                    f"{module} imports {imported}, but {root} stands above {package} "
                    f"(the apps, bottom to top: {', '.join(APPS)})"
                )
            elif package != LAB and imported not in PUBLIC.get(root, ()) and imported != root:
                found.append(
                    f"{module} reaches into {imported}; {root}'s public modules are "
                    f"{', '.join(sorted(PUBLIC.get(root, ()))) or 'none'}"
                )
    found += [f"import cycle between apps: {' <-> '.join(c)}" for c in cycles(app_graph(graph))]
    found += [f"import cycle between modules: {' <-> '.join(c)}" for c in cycles(graph)]
    return found


def test_the_tree_keeps_the_layers():
    sources = project_modules()
    assert {
        "kb.models",
        "ingest.pipeline",
        "retrieval.service",
        "capabilities.service",
        "evaluation.benchmark",
    } <= set(sources)
    assert PURE <= set(sources), sorted(PURE - set(sources))  # the lists name real modules
    assert set().union(*PUBLIC.values()) <= set(sources), sorted(
        set().union(*PUBLIC.values()) - set(sources)
    )
    assert violations(sources) == []


def test_the_apps_import_in_one_direction():
    """The drawing of docs/architecture.md: each app imports the floor and the apps below it
    only."""
    drawn = app_graph(import_graph(project_modules()))
    assert drawn["kb"] == set()
    assert not any(PROJECT in imported for imported in drawn.values())
    for position, app in enumerate(APPS):
        assert drawn[app] <= {"kb", *APPS[:position]}, (app, drawn[app])


def test_a_forbidden_import_is_caught():
    sources = project_modules()
    planted = {
        "kb.models": "from retrieval.service import search\n",  # the floor reaching up
        "kb.http": "def f():\n    from retrieval import views\n",  # the floor reaching up, late
        "kb.auth": "from config.settings import SECRET_KEY\n",  # the floor reading the roof
        "retrieval.views": "from config.middleware import API_PREFIX\n",  # an app reading the roof
        "capabilities.store": "from ingest.pipeline import IngestPipeline\n",  # an app's internals
        # a pure module doing I/O
        "retrieval.ranker": "def f():\n    from django.db import connection\n",
        # the roof, past a public module
        "config.api": "from ingest.pipeline import IngestPipeline\n",
        # an app importing one above it
        "ingest.report": "def f():\n    from retrieval.service import search\n",
        # an app importing the lab
        "retrieval.curation": "def f():\n    from evaluation import search_parts\n",
        # a script reaching into an app
        "scripts.planted": "from retrieval.lexical import lexical_search\n",
    }
    found = violations({**sources, **{m: sources.get(m, "") + text for m, text in planted.items()}})
    for module in planted:
        assert any(line.startswith(f"{module} ") for line in found), (module, found)


def test_an_import_cycle_is_caught_even_inside_a_function():
    sources = project_modules()
    # ingest.pipeline imports ingest.store; the store importing the pipeline back closes a cycle
    planted = {
        **sources,
        "ingest.store": sources["ingest.store"] + "def f():\n    from ingest import pipeline\n",
    }
    found = violations(planted)
    assert any(
        line.startswith("import cycle between modules:")
        and "ingest.pipeline" in line
        and "ingest.store" in line
        for line in found
    ), found
    # and one between apps, through public modules only: retrieval's service importing evaluation's
    # nothing-public module would also be an upward import, so plant ingest's service using
    # retrieval's
    upward = {
        **sources,
        "ingest.service": sources["ingest.service"]
        + "def f():\n    from retrieval import service\n",
    }
    found = violations(upward)
    assert any(
        line.startswith("import cycle between apps:") and "ingest" in line and "retrieval" in line
        for line in found
    ), found


def test_the_cycle_finder_finds_every_cycle_of_a_small_graph():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": {"a"}, "g": set()}
    assert cycles(graph) == [["a", "b", "c"], ["d", "e"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
