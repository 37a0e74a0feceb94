"""Search results shaped for the surfaces (API and page): snippets, explanations, tiers."""

from __future__ import annotations

import dataclasses
import html
import re
from dataclasses import fields

from kb.languages import has_cjk
from kb.lookalikes import LIGATURES, unaccented
from kb.markup import plain_text
from retrieval.citations import absolute_url
from retrieval.context import ContextPassage, build_context
from retrieval.ranker import RankSummary
from retrieval.results import Hit, SearchResult

INTERNAL_SUMMARY_FIELDS = ("calibration", "lexical_weight")

SNIPPET_CHARS = 280


def snippet(text: str, lexemes: list[str], width: int = SNIPPET_CHARS) -> str:
    """An HTML-escaped window of a chunk's plain text around its first match, matches in <mark>.

    Lexemes are stems, so a word matches when it starts with one; an unaccented lexeme also marks
    the accented word ('secur' for 'sécurité'), an accented one only words written so (Vietnamese
    'má' is not 'ma'); an Arabic word also after up to three letters of prefixes; a CJK pair
    wherever it stands in its run. Matching runs before escaping, so a lexeme never marks part of an
    entity; overlapping and adjacent matches are marked as one.
    """
    body = text.split("\n\n", 1)[1] if "\n\n" in text else text
    body = " ".join(plain_text(body).split())
    stems = sorted(
        (lexeme for lexeme in lexemes if len(lexeme) >= 2 and re.fullmatch(r"[\w.]+", lexeme)),
        key=len,
        reverse=True,
    )  # the longest alternative first where two start alike
    # each pattern with the text it reads: plain stems the unaccented text (same positions), the
    # rest the text
    readings = [
        (pattern, read)
        for pattern, read in (
            (
                _pattern([stem for stem in stems if unaccented(stem) == stem], spelt_out=True),
                unaccented(body),
            ),
            (_pattern([stem for stem in stems if unaccented(stem) != stem]), body),
        )
        if pattern
    ]
    firsts = [found.start() for pattern, read in readings if (found := pattern.search(read))]
    start, end = _whole_words(body, max(0, min(firsts) - width // 4) if firsts else 0, width)
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(body) else ""
    return (
        prefix
        + _marked(body[start:end], [(pattern, read[start:end]) for pattern, read in readings])
        + suffix
    )


WORD_SLACK = (
    24  # characters a window's ends move to fall between words (less than a quarter window)
)


def _whole_words(body: str, start: int, width: int) -> tuple[int, int]:
    """The window `body[start:start + width]` with its ends moved inward, by at most WORD_SLACK
    characters, to the nearest space: a snippet opens and closes on whole words. Text without
    spaces nearby (Chinese, Japanese, a long token) keeps the cut where it falls."""
    end = start + width
    if start > 0:
        space = body.find(" ", start - 1, start + WORD_SLACK)
        if space != -1:
            start = space + 1
    if end < len(body):
        space = body.rfind(" ", end - WORD_SLACK, end + 1)
        if space > start:
            end = space
    return start, end


def _pattern(stems: list[str], spelt_out: bool = False) -> re.Pattern | None:
    """A lookahead matching every position where a word of `stems` starts, overlapping ones
    included; `spelt_out`: a stem's `oe`, `ae` and `ss` also match the ligature `unaccent` spells
    so."""
    if not stems:
        return None
    return re.compile("(?=(" + "|".join(_word(stem, spelt_out) for stem in stems) + "))", re.I)


def _marked(window: str, readings: list[tuple[re.Pattern, str]]) -> str:
    """`window` escaped, the union of each pattern's matches in its reading of the window (the
    same positions) in <mark>."""
    found = sorted(
        (match.start(1), match.end(1))
        for pattern, read in readings
        for match in pattern.finditer(read)
    )
    spans: list[list[int]] = []
    for begin, end in found:
        if spans and begin <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        elif end > begin:
            spans.append([begin, end])
    pieces, last = [], 0
    for begin, end in spans:
        pieces += [
            html.escape(window[last:begin]),
            "<mark>",
            html.escape(window[begin:end]),
            "</mark>",
        ]
        last = end
    return "".join(pieces) + html.escape(window[last:])


_ARABIC = re.compile("[\u0600-\u06ff\u0750-\u077f]")


def _word(stem: str, spelt_out: bool = False) -> str:
    """The pattern of the words a lexeme stands for in the text (`snippet`); each bounded, so
    linear."""
    escaped = re.escape(stem)
    if spelt_out:
        for ligature, spelt in LIGATURES.items():
            if ligature.islower():  # the pattern ignores case
                escaped = escaped.replace(spelt, f"(?:{spelt}|{ligature})")
    if has_cjk(stem):
        return escaped
    if _ARABIC.search(stem):
        return r"\b\w{0,3}?" + escaped + r"\w*"
    return r"\b" + escaped + r"\w*"


def explanation(hit) -> dict:
    """How a hit was scored (its `ScoreDetails`) and what embedded its passage."""
    details = hit.details
    return {
        "channels": {
            name: {"rank": s.rank, "raw": round(s.raw, 6), "score": round(s.score, 6)}
            for name, s in details.channels.items()
        },
        "base": round(details.base, 6),
        "base_channel": details.base_channel,
        "rrf_bonus": round(details.rrf_bonus, 6),
        "recency_boost": round(details.recency_boost, 6),
        "priority_boost": round(details.priority_boost, 6),
        "mmr_penalty": round(details.mmr_penalty, 6),
        "relevance": round(details.relevance, 6),
        "bypassed_threshold": details.bypassed_threshold,
        "eligible": details.eligible,
        "vector_z": _rounded(details.vector_z),
        "lexical_z": _rounded(details.lexical_z),
        "embedded_by": hit.embedded_by,
    }


def _rounded(value: float | None) -> float | None:
    return round(value, 6) if value is not None else None


DOCUMENT_SCORE_RULE = "the document's score is its best section's score"


def fusion_payload(result: SearchResult) -> dict:
    """The weights this search fused meaning and words with, and what set them."""
    weights = result.fusion
    return {
        "vector": weights.vector,
        "lexical": weights.lexical,
        "source": weights.source,
        "reason": weights.reason,
        "fitted_at": weights.fitted_at,
        "version": weights.version,
        "lexical_this_query": round(result.summary.lexical_weight, 6),
    }


def _doc(ref) -> dict:
    return {"document_id": ref.document_id, "title": ref.title, "citation_url": ref.citation_url}


def location_label(start: int | None, end: int | None, unit: str) -> str:
    """ "p. 12", "pp. 12-13", "slide 3", "sheet 2"; "" for a passage without pages."""
    if not start or not unit:
        return ""
    if unit == "page":
        return f"p. {start}" if end in (None, start) else f"pp. {start}\u2013{end}"
    return f"{unit} {start}" if end in (None, start) else f"{unit}s {start}\u2013{end}"


def _result(h, result: SearchResult, explain: bool) -> dict:
    return {
        "rank": h.rank,
        "chunk_id": h.chunk_id,
        "document_id": h.document_id,
        "title": h.title,
        "heading_path": list(h.heading_path),
        "anchor": h.anchor,
        "text": h.text,
        "snippet": snippet(h.text, result.lexemes),
        "start_byte": h.start_byte,
        "end_byte": h.end_byte,
        "citation_url": h.citation_url,
        "source": h.source_name,
        "location": location_label(h.page_start, h.page_end, h.page_unit),
        "page_start": h.page_start,
        "page_end": h.page_end,
        "scanned": h.scanned,
        "date": h.created_at,
        "score": round(h.score, 6),
        "cosine": round(h.cosine, 6) if h.cosine is not None else None,
        "explanation": explanation(h) if explain else None,
    }


def summary_counts(summary: RankSummary) -> dict:
    """The ranker's summary as the API shows it: every field of `RankSummary` but the internal
    ones (the lexical weight is shown under `fusion`), scores rounded."""
    counts = {}
    for name in (f.name for f in fields(RankSummary) if f.name not in INTERNAL_SUMMARY_FIELDS):
        value = getattr(summary, name)
        counts[name] = round(value, 6) if isinstance(value, float) else value
    counts["channel_notes"] = [dataclasses.asdict(note) for note in summary.channel_notes]
    return counts


def search_payload(result: SearchResult, *, explain: bool) -> dict:
    return {
        "query": result.query,
        "namespace": result.namespace,
        "grouped": result.grouped,
        "results": [_result(h, result, explain) for h in result.hits],
        "documents": [
            {
                "rank": d.rank,
                "document_id": d.document_id,
                "title": d.title,
                "citation_url": d.citation_url,
                "score": round(d.score, 6),
                "score_rule": DOCUMENT_SCORE_RULE,
                "sections": [_result(h, result, explain) for h in d.sections],
            }
            for d in result.documents
        ]
        if result.grouped
        else None,
        "suggested": [_doc(d) for d in result.suggested],
        "cited": [_doc(d) for d in result.cited],
        "related": [_doc(d) for d in result.related],
        "weak_titles": result.weak_titles,
        "summary": {
            **summary_counts(result.summary),
            "query_caps": list(result.features.capped),
            "fusion": fusion_payload(result),
            "lexical": dataclasses.asdict(result.lexical) if result.lexical else None,
        },
        "dropped": [
            {
                "chunk_id": d.key,
                "dropped_by": d.dropped_by,
                "reason": d.reason,
                "relevance": round(d.relevance, 6),
            }
            for d in result.dropped
            if d.dropped_by != "limit"
        ]
        if explain
        else None,
        "timings_ms": result.timings,
        "query_id": result.query_id,
    }


def context_payload(hits: list[Hit], *, max_chars: int, base_url: str = "") -> dict:
    """The spotlighted context block of search passages, with its citations: what /api/context
    and the MCP `context` tool answer (with `base_url`, citations are absolute)."""
    passages = [
        ContextPassage(
            h.title,
            absolute_url(h.citation_url, base_url) if base_url else h.citation_url,
            " > ".join(h.heading_path),
            h.text,
            location_label(h.page_start, h.page_end, h.page_unit),
        )
        for h in hits
    ]
    block = build_context(passages, max_chars=max_chars)
    return {
        "context": block.text,
        "delimiter": block.delimiter,
        "truncated": block.truncated,
        "citations": [
            {"number": c.number, "url": c.url, "title": c.title, "indices": list(c.indices)}
            for c in block.citations
        ],
    }
