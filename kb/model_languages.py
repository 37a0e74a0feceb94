"""Which of a namespace's languages the embedding model reads, and whether its searches use
meaning: the share of documents in languages the model does not read, and a query's language
deciding where the detector places it. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from kb.language_detection import query_language
from kb.languages import QUERY_SHARE, name

UNREAD_SHARE = (
    0.5  # above this share of documents in languages the model does not read, meaning is not used
)


def unread_share(document_languages: dict[str, int], read: tuple[str, ...]) -> tuple[float, str]:
    """The share of a namespace's documents written in languages the embedding model does not
    read (`read`: the model's languages, empty for any), and those languages named, the most
    common first ("Arabic and Persian"). Documents whose language was not named count as read:
    they are short or unclear, and the default is to trust the model."""
    total = sum(document_languages.values())
    if not read or not total:
        return 0.0, ""
    unread = {
        language: n
        for language, n in document_languages.items()
        if language and language not in read
    }
    if not unread:
        return 0.0, ""
    names = [
        name(language)
        for language in sorted(unread, key=lambda language: (-unread[language], language))
    ]
    shown = (
        names if len(names) <= 4 else names[:3] + ["other languages"]
    )  # "other" is never just one
    return sum(unread.values()) / total, " and ".join(
        [", ".join(shown[:-1]), shown[-1]] if len(shown) > 1 else shown
    )


def unread_languages(document_languages: dict[str, int], read: tuple[str, ...]) -> frozenset[str]:
    """The languages, not among those the model reads (`read`), of a namespace whose documents are
    mostly in such languages (`leaves_out`); empty elsewhere."""
    share, _ = unread_share(document_languages, read)
    if not leaves_out(share):
        return frozenset()
    return frozenset(
        language for language in document_languages if language and language not in read
    )


@dataclass(frozen=True)
class MeaningDecision:
    """Whether a search without fitted weights uses meaning, and what decided it: the share of
    documents in languages the model does not read and those languages, and the query's
    language when it decided (else '')."""

    used: bool
    share: float = 0.0
    languages: str = ""
    query_language: str = ""


def meaning_decision(
    document_languages: dict[str, int], read: tuple[str, ...], query: str = ""
) -> MeaningDecision:
    """In a namespace holding documents the model does not read (`read`), the detector names the
    `query`'s language: when it is sure and QUERY_SHARE of the documents are in that language,
    the query's language decides (a German question in an English and German manual is ranked
    by its words, an English one by words and meaning, whatever the shares); otherwise more than
    UNREAD_SHARE of the documents in languages the model does not read leaves meaning out. The
    detector runs only where a query's language can change that (`languages_queries_decide`)."""
    share, languages = unread_share(document_languages, read)
    if not share:
        return MeaningDecision(True)
    words_alone, with_meaning = languages_queries_decide(document_languages, read)
    asked = query_language(query) if query and (words_alone or with_meaning) else ""
    if asked in words_alone or asked in with_meaning:
        return MeaningDecision(asked in with_meaning, share, languages, asked)
    return MeaningDecision(not leaves_out(share), share, languages)


def languages_queries_decide(
    document_languages: dict[str, int], read: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(ranked by words alone, ranked with meaning): the languages, each of at least QUERY_SHARE of
    the documents, in which a query the detector places is served otherwise than the namespace's
    share says (`meaning_decision`), most documents first. Both empty when no query's language
    can change anything: the detector is then not run."""
    share, _ = unread_share(document_languages, read)
    if not share:
        return (), ()
    total = sum(document_languages.values())
    held = sorted(
        (
            language
            for language, n in document_languages.items()
            if language and n >= QUERY_SHARE * total
        ),
        key=lambda language: (-document_languages[language], language),
    )
    if leaves_out(share):
        return (), tuple(language for language in held if language in read)
    return tuple(language for language in held if language not in read), ()


def leaves_out(unread: float) -> bool:
    """Whether a namespace with this share of documents the model does not read is searched
    without meaning (when it has no fitted weights)."""
    return unread > UNREAD_SHARE
