"""The typed settings never print a secret: a log line or an error page that shows them (as
`repr`) keeps the keys, tokens and passwords out, while the code still reads them."""

from kb.conf import kb_settings

SECRETS = {
    "KB_EMBEDDINGS_API_KEY": "embeddings-key-value",
    "KB_ANSWER_API_KEY": "answer-key-value",
    "KB_OIDC_CLIENT_SECRET": "client-secret-value",
    "KB_LDAP_BIND_PASSWORD": "bind-password-value",
}


def test_the_settings_printed_hold_no_secret(settings):
    for name, value in SECRETS.items():
        setattr(settings, name, value)
    settings.KB_GIT_TOKENS = {"FORGE": "git.example.org=git-token-value"}
    kb_settings.cache_clear()
    try:
        conf = kb_settings()
        printed = repr(conf)
    finally:
        kb_settings.cache_clear()
    assert not [value for value in [*SECRETS.values(), "git-token-value"] if value in printed], (
        printed
    )
    assert (conf.embeddings_api_key, conf.answer_api_key) == (
        "embeddings-key-value",
        "answer-key-value",
    )
    assert conf.git_tokens == {"FORGE": "git.example.org=git-token-value"}
