"""Query analysis: each identifier pattern, the words it must leave alone, name keys and caps.
Pure."""

import pytest

from retrieval.query import (
    MAX_IDENTIFIERS,
    MAX_TOKEN_CHARS,
    analyse,
    find_identifiers,
    find_name_keys,
)


@pytest.mark.parametrize(
    "query, identifier",
    [
        pytest.param("patch CVE-2024-12345 now", "CVE-2024-12345", id="cve"),
        pytest.param("what does ORA-00942 mean", "ORA-00942", id="code-with-dash"),
        pytest.param("status HTTP404 again", "HTTP404", id="code-without-dash"),
        pytest.param("commit 3f31d21 broke it", "3f31d21", id="short-hash"),
        pytest.param("blob 0x1f2e3d4c5b", "0x1f2e3d4c5b", id="hex-with-prefix"),
        pytest.param("see ERR_CONNECTION_REFUSED", "ERR_CONNECTION_REFUSED", id="upper-snake"),
        pytest.param("call load_user_profile", "load_user_profile", id="snake"),
        pytest.param("where is getUserById defined", "getUserById", id="camel"),
        pytest.param("raise HttpClientError here", "HttpClientError", id="pascal-three-humps"),
        pytest.param("use os.path.join()", "os.path.join()", id="dotted-call"),
        pytest.param("build llama.cpp", "llama.cpp", id="dotted-name"),
        pytest.param("edit src/config/api.py", "src/config/api.py", id="path"),
        pytest.param("open docs/index.html", "docs/index.html", id="path-with-extension"),
    ],
)
def test_each_identifier_pattern_finds_its_kind(query, identifier):
    assert identifier in find_identifiers(query)


@pytest.mark.parametrize(
    "query",
    [
        pytest.param("JavaScript and AlphaBeta", id="two-hump-words"),
        pytest.param("iTregs in mice", id="mixed-case-word"),
        pytest.param("TCP/IP and/or 1/2000", id="one-separator-slashes"),
        pytest.param("deadbeef", id="hex-letters-without-a-digit"),
        pytest.param("E12 a_b", id="too-short"),
        pytest.param("the end.", id="sentence-end"),
    ],
)
def test_words_that_only_look_like_identifiers_are_left_alone(query):
    assert find_identifiers(query) == ()


def test_overlapping_matches_keep_the_longest_and_repeats_count_once():
    assert find_identifiers("ERR_CONNECTION_REFUSED ERR_CONNECTION_REFUSED") == (
        "ERR_CONNECTION_REFUSED",
    )
    assert find_identifiers("os.path.join_all.") == (
        "os.path.join_all",
    )  # a trailing full stop is not part


def test_tokens_beyond_the_length_cap_are_passed_over():
    long_token = "a_" * MAX_TOKEN_CHARS
    assert find_identifiers(long_token + " getUserById") == ("getUserById",)


@pytest.mark.parametrize(
    "query, keys",
    [
        ("Qwen 3.8 release", ("qwen38",)),
        ("gpt4o vs llama3", ("gpt4o", "llama3")),
        (
            "Python v3.11, please",
            ("v311", "pythonv311"),
        ),  # a digit-bearing token is a key by itself too
        ("release notes", ()),
        ("v2 is out", ()),  # too short to name anything
    ],
)
def test_name_keys_join_a_word_with_the_version_after_it(query, keys):
    assert find_name_keys(query) == keys


def test_caps_are_applied_and_reported():
    many = " ".join(f"ERR_CODE_{i:03d}" for i in range(MAX_IDENTIFIERS + 4))
    features = analyse(many)
    assert len(features.identifiers) == MAX_IDENTIFIERS
    assert (
        f"identifiers: the first {MAX_IDENTIFIERS} of {MAX_IDENTIFIERS + 4} were used"
        in features.capped
    )
    assert analyse("getUserById").capped == ()
