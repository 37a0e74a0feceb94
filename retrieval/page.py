"""The search page's view model: what one results page shows, built from a SearchResult."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from django.utils.safestring import SafeString, mark_safe

from kb.conf import kb_settings
from kb.markup import plain_text
from retrieval.presenters import DOCUMENT_SCORE_RULE, explanation, location_label, snippet
from retrieval.results import Hit, SearchResult

PAGE_SIZE = 10
CHANNEL_LABELS = {
    "vector": "meaning (vector)",
    "lexical": "keywords (BM25)",
    "names": "versioned name",
    "identifiers": "exact identifier",
}


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    width: int  # percent of the widest bar in the panel
    note: str = ""

    @property
    def shown(self) -> str:
        return decimals(self.value, 3)


def decimals(value: float, places: int) -> str:
    """`value` with `places` decimals, as the page shows scores: formatted here because ten
    explanation panels hold about ninety numbers, and the template filter cost 1.5 ms a page."""
    text = f"{value:.{places}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text  # no "-0.000"


def bar_items(bars: list[Bar], *, signed: bool) -> SafeString:
    """The explanation panel's bars as list items, every value escaped. Built here rather than
    in a template loop: ten panels hold about seventy bars, and the loop cost 2 ms of a page's
    CPU (half its template); `format_html` per bar cost 1 ms of it again. `signed`: a negative
    value is drawn as such (the score's parts; a channel's score is never negative)."""
    return mark_safe(
        "\n".join(  # every interpolated value is escaped or an int
            f'<li><span class="label">{escape(b.label)}</span><span class="bar w{int(b.width)}'
            f'{" negative" if signed and b.value < 0 else ""}" aria-hidden="true"></span>'
            f'<span class="value">{escape(b.shown)}</span><span '
            f'class="note">{escape(b.note)}</span></li>'
            for b in bars
        )
    )


def _row(hit, result: SearchResult) -> dict:
    details = explanation(hit)
    parts = [
        ("base", details["base"], _base_note(details, result)),
        (
            "RRF bonus",
            details["rrf_bonus"],
            "agreement between channels"
            if len(details["channels"]) > 1
            else "its rank in the one channel that found it",
        ),
        ("recency", details["recency_boost"], ""),
        ("source priority", details["priority_boost"], ""),
        (
            "MMR penalty",
            -details["mmr_penalty"],
            "similar to a result above" if details["mmr_penalty"] else "",
        ),
    ]
    widest = max(
        [abs(v) for _, v, _ in parts] + [s["score"] for s in details["channels"].values()] + [1e-9]
    )
    channels = [
        Bar(
            f"{CHANNEL_LABELS.get(name, name)} #{s['rank']}",
            s["score"],
            round(100 * s["score"] / widest),
            f"raw {s['raw']:.4g}",
        )
        for name, s in details["channels"].items()
    ]
    bars = [
        Bar(label, value, round(100 * abs(value) / widest), note) for label, value, note in parts
    ]
    why = ["eligible" if details["eligible"] else "not eligible"]
    why.append(
        "passed the threshold by multi-channel strength"
        if details["bypassed_threshold"]
        else f"above the floor {result.summary.floor:.3f}"
    )
    return {
        "hit": hit,
        "snippet": snippet(hit.text, result.lexemes),
        "channel_bars": bar_items(channels, signed=False),
        "score_bars": bar_items(bars, signed=True),
        "location": location_label(hit.page_start, hit.page_end, hit.page_unit),
        "relevance": details["relevance"],
        "relevance_shown": decimals(details["relevance"], 3),
        "why": why,
        "sections": [],
    }


@dataclass(frozen=True)
class SectionLink:
    url: str
    label: str


LEAD_WORDS = 8  # words of a passage that tell it from another of the same section


def section_links(first: Hit, others: list[Hit]) -> list[SectionLink]:
    """A document's other sections, each named by its breadcrumb (its title without one); a name
    that the first section or another also bears is told apart by the passage's first words, so
    no two links of a result read alike."""

    def name(hit: Hit) -> str:
        return " › ".join(hit.heading_path) or hit.title

    names = [name(hit) for hit in (first, *others)]
    links = []
    for hit, label in zip(others, names[1:], strict=True):
        words = _lead_words(hit.text) if names.count(label) > 1 else []
        if words:
            label += (
                ": “"
                + " ".join(words[:LEAD_WORDS])
                + ("…" if len(words) > LEAD_WORDS else "")
                + "”"
            )
        links.append(SectionLink(hit.citation_url, label))
    return links


def _lead_words(text: str) -> list[str]:
    """A passage's words after its breadcrumb, without the headings it opens with."""
    body = text.split("\n\n", 1)[-1]
    return plain_text(
        "\n".join(line for line in body.splitlines() if not line.startswith("#"))
    ).split()


def _base_note(details: dict, result: SearchResult) -> str:
    if details["base_channel"] != "fused":
        return f"from {CHANNEL_LABELS.get(details['base_channel'], details['base_channel'])}"
    lexical = result.summary.lexical_weight
    words = (
        f" + words z {details['lexical_z']:.2f} × {lexical:.2f}"
        if details["lexical_z"] is not None
        else ""
    )
    return f"meaning z {details['vector_z']:.2f} × {1 - lexical:.2f}{words}, in cosine units"


def results_page(result: SearchResult, page: int) -> dict:
    """One page of results: documents with their best sections when the search was grouped,
    passages otherwise; pages count what is shown."""
    start = (page - 1) * PAGE_SIZE
    if result.grouped:
        rows = []
        for document in result.documents[start : start + PAGE_SIZE]:
            row = _row(document.sections[0], result)
            row["sections"] = section_links(document.sections[0], document.sections[1:])
            row["document_rank"] = document.rank
            rows.append(row)
        shown = result.document_count
    else:
        rows = [_row(hit, result) for hit in result.hits[start : start + PAGE_SIZE]]
        for row in rows:
            row["document_rank"] = row["hit"].rank
        shown = len(result.hits)
    dropped: dict[str, int] = {}
    for d in result.dropped:
        if d.dropped_by != "limit":
            dropped[d.dropped_by] = dropped.get(d.dropped_by, 0) + 1
    pages = max(1, -(-shown // PAGE_SIZE))
    # the page lists each document once: the tiers keep only documents the results do not show
    listed = {row["hit"].document_id for row in rows}
    related = [d for d in result.related if d.document_id not in listed]
    return {
        "rows": rows,
        "page": page,
        "pages": pages,
        "has_next": page < pages,
        "has_previous": page > 1,
        "dropped": dropped,
        "summary": result.summary,
        "suggested": result.suggested,
        "related": related,
        "weak_titles": result.weak_titles,
        "cited": result.cited,
        "grouped": result.grouped,
        "fusion": result.fusion,
        "document_score_rule": DOCUMENT_SCORE_RULE,
        "query_id": result.query_id,
        "lexical": result.lexical,
        # the answer above the results is asked for by static/kb/answer.js; without a model, one
        # line says so
        "answers_on": bool(kb_settings().answer_url),
    }
