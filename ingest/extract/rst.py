"""reStructuredText to the product's markdown, read by docutils' own parser (no regexes).

Each section keeps its docutils id (`## Install {#install}`), the id Sphinx gives it on the
published site, so a citation opens the same place there. Sphinx's roles and common directives are
known, so a Sphinx tree reads without errors. No file is included and no raw HTML passed on
(`file_insertion_enabled`, `raw_enabled` off), whatever the document asks.
"""

from __future__ import annotations

from docutils import nodes, utils
from docutils.core import publish_doctree
from docutils.parsers.rst import Directive, directives, roles
from docutils.parsers.rst.directives.body import CodeBlock

from ingest.errors import DocumentCorrupt

SETTINGS = {
    "file_insertion_enabled": False,
    "raw_enabled": False,
    "report_level": 5,
    "halt_level": 5,
    "doctitle_xform": False,
    "sectsubtitle_xform": False,
    "auto_id_prefix": "id",
    "syntax_highlight": "none",
    "input_encoding": "utf-8-sig",
    "warning_stream": False,
    "smart_quotes": False,
    "language_code": "en",
}
SPHINX_ROLES = (
    "ref",
    "doc",
    "term",
    "func",
    "class",
    "meth",
    "mod",
    "attr",
    "data",
    "exc",
    "obj",
    "const",
    "option",
    "envvar",
    "file",
    "program",
    "command",
    "kbd",
    "abbr",
    "samp",
    "download",
    "numref",
    "keyword",
    "menuselection",
    "guilabel",
    "dfn",
    "mailheader",
    "makevar",
    "manpage",
    "regexp",
    "pep",
    "rfc",
    "any",
    "token",
    "confval",
    "setting",
)
DOMAINS = ("py", "c", "cpp", "js", "rst", "std", "std:ref", "math")
ALIASES = {"code-block": CodeBlock, "sourcecode": CodeBlock}
CONTENT_DIRECTIVES = (
    "versionadded",
    "versionchanged",
    "deprecated",
    "seealso",
    "only",
    "glossary",
    "centered",
    "hlist",
    "productionlist",
    "rubric",
    "index",
    "tabularcolumns",
    "highlight",
    "toctree",
    "literalinclude",
    "automodule",
    "autoclass",
    "autofunction",
    "automethod",
    "autodata",
    "currentmodule",
    "module",
    "function",
    "class",
    "method",
    "attribute",
    "data",
    "exception",
    "describe",
    "object",
    "envvar",
    "option",
    "program",
    "cmdoption",
    "confval",
    "setting",
    "testcode",
    "testoutput",
    "doctest",
    "plot",
    "graphviz",
    "ifconfig",
    "tab",
    "tabs",
)
DROPPED = {
    "toctree",
    "literalinclude",
    "index",
    "tabularcolumns",
    "highlight",
    "currentmodule",
    "automodule",
    "autoclass",
    "autofunction",
    "automethod",
    "autodata",
    "plot",
    "graphviz",
}


def _text_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """A Sphinx cross-reference reads as its title: `Install <install>` is "Install"."""
    title = utils.unescape(text)
    if title.endswith(">") and " <" in title:
        title = title[: title.rindex(" <")]
    return [nodes.literal(rawtext, title.lstrip("~!"))], []


class _Content(Directive):
    """A Sphinx directive docutils does not know: its arguments as a line and its content parsed
    (an API entry's signature and description), or nothing for a directive that only arranges
    the site (`toctree`, `index`)."""

    has_content, optional_arguments, final_argument_whitespace = True, 10, True
    option_spec = None

    def run(self):
        if self.name in DROPPED:
            return []
        container = nodes.container()
        if self.arguments:
            container += nodes.paragraph(text=f"{self.name}: {' '.join(self.arguments)}")
        self.state.nested_parse(self.content, self.content_offset, container)
        return [container]


class _AnyOptions(dict):
    def __missing__(self, key):
        return directives.unchanged


_Content.option_spec = _AnyOptions()
for _name in SPHINX_ROLES:
    roles.register_local_role(_name, _text_role)
    for _domain in DOMAINS:
        roles.register_local_role(f"{_domain}:{_name}", _text_role)
for _name, _directive in ALIASES.items():
    directives.register_directive(_name, _directive)
for _name in CONTENT_DIRECTIVES:
    directives.register_directive(_name, _Content)
    directives.register_directive(f"py:{_name}", _Content)


def rst_to_markdown(
    body: bytes, source_path: str = "", heading_lines: dict[str, int] | None = None
) -> tuple[str, str]:
    """(title, markdown) of a reStructuredText document: its first section's title, and its text
    with a heading per section, each with the section's id; `heading_lines`, when given, gets
    each section id's title line in the file (docutils' own position of the title)."""
    text = body.decode("utf-8-sig", errors="replace")
    writer = _Writer(heading_lines if heading_lines is not None else {})
    try:  # docutils and the writer recurse once per nested list, quote or directive
        document = publish_doctree(
            text, source_path=source_path or None, settings_overrides=dict(SETTINGS)
        )
        writer.blocks(document, 0)
    except RecursionError as exc:
        raise DocumentCorrupt(
            f"{source_path or 'The document'!r} nests its lists, quotes or directives too deeply "
            "to be read (Python's recursion limit)."
        ) from exc
    title = next(
        (section.next_node(nodes.title).astext() for section in document.findall(nodes.section)), ""
    )
    return title, "\n\n".join(block for block in writer.out if block.strip()) + "\n"


class _Writer:
    def __init__(self, heading_lines: dict[str, int]):
        self.out: list[str] = []
        self.heading_lines = heading_lines

    def blocks(self, node: nodes.Node, depth: int, indent: str = "") -> None:
        for child in node.children:
            self.block(child, depth, indent)

    def block(self, node: nodes.Node, depth: int, indent: str) -> None:
        if isinstance(
            node,
            (
                nodes.system_message,
                nodes.comment,
                nodes.substitution_definition,
                nodes.target,
                nodes.raw,
                nodes.problematic,
            ),
        ):
            return
        if isinstance(node, nodes.section):
            ids = node.get("ids") or []
            anchor = f" {{#{ids[0]}}}" if ids else ""
            title = node.next_node(nodes.title)
            if ids and title is not None and title.line:  # docutils counts the underline's line
                self.heading_lines[ids[0]] = max(1, title.line - 1)
            self.out.append(f"{'#' * min(depth + 1, 6)} {_inline(title) if title else ''}{anchor}")
            self.blocks(node, depth + 1, indent)
        elif isinstance(node, nodes.title):
            return  # written with its section
        elif isinstance(node, (nodes.literal_block, nodes.doctest_block)):
            language = next(
                (c for c in node.get("classes", []) if c not in ("code", "literal-block")), ""
            )
            code = node.astext().rstrip("\n")
            fence = "~~~~" if "```" in code else "```"
            self.out.append(_indented(f"{fence}{language}\n{code}\n{fence}", indent))
        elif isinstance(node, (nodes.bullet_list, nodes.enumerated_list)):
            for number, item in enumerate(node.children, start=1):
                marker = f"{number}. " if isinstance(node, nodes.enumerated_list) else "- "
                self._item(item, marker, depth, indent)
        elif isinstance(node, nodes.definition_list):
            for item in node.children:
                term = item.next_node(nodes.term)
                self.out.append(_indented(f"**{_inline(term)}**" if term else "", indent))
                definition = item.next_node(nodes.definition)
                if definition is not None:
                    self.blocks(definition, depth, indent + "  ")
        elif isinstance(node, nodes.field_list):
            for field in node.children:
                name, value = (
                    field.children[0].astext(),
                    field.children[1].astext() if len(field.children) > 1 else "",
                )
                self.out.append(_indented(f"- **{name}**: {' '.join(value.split())}", indent))
        elif isinstance(node, nodes.Admonition):
            label = node.tagname if node.tagname != "admonition" else ""
            title = node.next_node(nodes.title)
            heading = " ".join(
                part for part in (label.capitalize(), _inline(title) if title else "") if part
            )
            self.out.append(_indented(f"> **{heading}**", indent))
            self.blocks(node, depth, indent)
        elif isinstance(node, nodes.table):
            self._table(node, indent)
        elif isinstance(node, nodes.paragraph) or isinstance(node, nodes.TextElement):
            self.out.append(_indented(_inline(node), indent))
        else:
            self.blocks(node, depth, indent)

    def _item(self, item: nodes.Node, marker: str, depth: int, indent: str) -> None:
        start = len(self.out)
        self.blocks(item, depth, indent + " " * len(marker))
        if len(self.out) > start:
            self.out[start] = indent + marker + self.out[start][len(indent) + len(marker) :]
        else:
            self.out.append(indent + marker.rstrip())

    def _table(self, table: nodes.table, indent: str) -> None:
        rows = [
            [" ".join(entry.astext().split()) for entry in row.findall(nodes.entry)]
            for row in table.findall(nodes.row)
        ]
        if not rows:
            return
        width = max(len(row) for row in rows)
        lines = ["| " + " | ".join(row + [""] * (width - len(row))) + " |" for row in rows]
        lines.insert(1, "|" + " --- |" * width)
        self.out.append(_indented("\n".join(lines), indent))


def _inline(node: nodes.Node) -> str:
    parts = []
    for child in node.children:
        if isinstance(child, nodes.Text):
            parts.append(child.astext().replace("\n", " "))
        elif isinstance(child, nodes.literal):
            parts.append(f"`{child.astext()}`")
        elif isinstance(child, nodes.strong):
            parts.append(f"**{_inline(child)}**")
        elif isinstance(child, nodes.emphasis):
            parts.append(f"*{_inline(child)}*")
        elif isinstance(child, nodes.reference) and child.get("refuri", "").startswith(
            ("http://", "https://")
        ):
            parts.append(f"[{_inline(child)}]({child['refuri']})")
        elif isinstance(
            child, (nodes.system_message, nodes.target, nodes.footnote_reference, nodes.problematic)
        ):
            continue
        else:
            parts.append(_inline(child) if isinstance(child, nodes.Element) else child.astext())
    return "".join(parts).strip()


def _indented(text: str, indent: str) -> str:
    return "\n".join(indent + line if line else line for line in text.split("\n"))
