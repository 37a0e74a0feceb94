"""Code blocks: fenced with the language a generator wrote on them, from `class="language-x"`,
`lang-x`, Sphinx's `div.highlight-x`, GitHub's `highlight-source-x` or `data-lang`; Doxygen's
code drawn line by line made one block. Pure.
"""

from __future__ import annotations

from bs4 import Tag

LANGUAGE_PREFIXES = ("language-", "lang-", "highlight-source-", "highlight-")
PLAIN_LANGUAGES = {"none", "text", "default-text", "plain", "nohighlight"}


def code_block(pre: Tag) -> str:
    language = code_language(pre)
    text = pre.get_text().strip("\n")
    longest = _longest_backtick_run(text)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def code_language(pre: Tag) -> str:
    """The language a generator wrote on the block, on `<code>`, `<pre>` or a wrapping div."""
    candidates = [pre.find("code"), pre]
    candidates += [parent for _, parent in zip(range(3), pre.parents, strict=False)]
    for candidate in candidates:
        if not isinstance(candidate, Tag):
            continue
        if candidate.get("data-lang"):
            return _language_name(candidate["data-lang"])
        for cls in candidate.get("class") or ():
            for prefix in LANGUAGE_PREFIXES:
                if cls.startswith(prefix) and len(cls) > len(prefix):
                    return _language_name(cls[len(prefix) :])
        classes = candidate.get("class") or ()
        if "sourceCode" in classes and len(classes) > 1:  # pandoc
            return _language_name([c for c in classes if c != "sourceCode"][0])
    return ""


def _language_name(name: str) -> str:
    name = name.strip().lower()
    if name in PLAIN_LANGUAGES:
        return ""
    if name in ("default", "python3", "py"):
        return "python"  # Sphinx's "default" highlighter is Python 3
    return "".join(c for c in name if c.isalnum() or c in "+#.-_")


def code_lines(root: Tag) -> None:
    """Doxygen draws code as a `div.fragment` of one `div.line` per line (the line numbers
    already dropped as chrome): a code block, one line each, not a paragraph per line."""
    for fragment in root.find_all("div", class_="fragment"):
        lines = [c for c in fragment.children if isinstance(c, Tag)]
        if not lines or any(c.name != "div" or "line" not in (c.get("class") or ()) for c in lines):
            continue
        text = "\n".join(line.get_text().removeprefix("\xa0").rstrip() for line in lines)
        fragment.clear()
        fragment.name = "pre"
        fragment.append(text)


def _longest_backtick_run(text: str) -> int:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return longest
