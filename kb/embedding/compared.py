"""Which of a namespace's passages a query's vector can be compared with: those embedded by the
model that embeds the query. Another model's vectors have the same length and mean nothing beside
it, which is what a namespace holds between a change of the deployment's model and the end of its
re-embed. Pure: the search (retrieval.candidates.meaning_models) and the console read it."""

from __future__ import annotations

from dataclasses import dataclass

REEMBED = (
    "Re-embed all documents"  # the sources' admin action that embeds them with the configured model
)


@dataclass(frozen=True)
class Foreign:
    """A namespace's passages embedded by other models than the query's."""

    passages: int
    embedded: int  # every passage with a vector
    models: str  # the other models, named

    @property
    def whole(self) -> bool:
        """No passage is the query model's own: meaning has nothing to compare with."""
        return self.passages == self.embedded

    def said(self) -> str:
        """What a reader is told, in the search's note and on the namespace's console page."""
        return f"{self.clause('The')}."

    def clause(self, the: str = "the") -> str:
        """`said` as a clause (a search's weights give it as their reason), `the` its first word
        where the passages are all another model's."""
        if self.whole:
            return (
                f"{the} passages here were embedded by another model ({self.models}) than the "
                "one that reads "
                "queries, so results are ranked by their words alone until they are embedded "
                f"again ({REEMBED})"
            )
        return (
            f"{self.passages:,} of the {self.embedded:,} passages here were embedded by another "
            "model "
            f"({self.models}): they are found by their words alone until they are embedded again "
            f"({REEMBED})"
        )


def foreign_passages(passage_models: dict[str, int], model_id: str) -> Foreign | None:
    """`passage_models`: passages per embedding model (`Namespace.passage_models`); None when every
    embedded passage is `model_id`'s (or none is embedded yet)."""
    embedded = sum(passage_models.values())
    own = passage_models.get(model_id, 0)
    if own == embedded:
        return None
    others = sorted(m or "an unnamed model" for m in passage_models if m != model_id)
    return Foreign(embedded - own, embedded, ", ".join(others))
