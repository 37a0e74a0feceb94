"""The search page's view model: what one results page shows, built from a SearchResult."""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.presenters import explanation, location_label, snippet
from retrieval.service import SearchResult

PAGE_SIZE = 10
CHANNEL_LABELS = {"vector": "meaning (vector)", "lexical": "keywords (BM25)", "names": "versioned name",
                  "identifiers": "exact identifier"}


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    width: int  # percent of the widest bar in the panel
    note: str = ""


def results_page(result: SearchResult, page: int) -> dict:
    start = (page - 1) * PAGE_SIZE
    hits = result.hits[start:start + PAGE_SIZE]
    rows = []
    for hit in hits:
        details = explanation(hit.details)
        parts = [("base", details["base"], f"best channel: {CHANNEL_LABELS.get(details['base_channel'], '')}"),
                 ("RRF bonus", details["rrf_bonus"], "agreement between channels"),
                 ("recency", details["recency_boost"], ""), ("source priority", details["priority_boost"], ""),
                 ("MMR penalty", -details["mmr_penalty"],
                  "similar to a result above" if details["mmr_penalty"] else "")]
        widest = max([abs(v) for _, v, _ in parts] + [s["score"] for s in details["channels"].values()] + [1e-9])
        channels = [Bar(f"{CHANNEL_LABELS.get(name, name)} #{s['rank']}", s["score"],
                        round(100 * s["score"] / widest), f"raw {s['raw']:.4g}")
                    for name, s in details["channels"].items()]
        bars = [Bar(label, value, round(100 * abs(value) / widest), note) for label, value, note in parts]
        why = ["eligible" if details["eligible"] else "not eligible"]
        why.append("passed the threshold by multi-channel strength" if details["bypassed_threshold"]
                   else f"above the floor {result.summary.floor:.3f}")
        rows.append({"hit": hit, "snippet": snippet(hit.text, result.lexemes), "channels": channels,
                     "location": location_label(hit.page_start, hit.page_end, hit.page_unit),
                     "bars": bars, "relevance": details["relevance"], "why": why})
    dropped: dict[str, int] = {}
    for d in result.dropped:
        if d.dropped_by != "limit":
            dropped[d.dropped_by] = dropped.get(d.dropped_by, 0) + 1
    pages = max(1, -(-len(result.hits) // PAGE_SIZE))
    return {"rows": rows, "page": page, "pages": pages, "has_next": page < pages, "has_previous": page > 1,
            "dropped": dropped, "summary": result.summary, "suggested": result.suggested,
            "related": result.related, "weak_titles": result.weak_titles, "cited": result.cited}
