"""Fixtures of the answer tests: a scripted model server the product is pointed at."""

import pytest

from kb.conf import kb_settings
from tests.answers.scripted_model import ScriptedModel


@pytest.fixture
def answer_model(settings):
    """Point the product at a scripted server: `answer_model(replies)` starts it."""
    servers = []

    def start(replies, timeout="2,2,5", tools="auto"):
        server = ScriptedModel(replies).__enter__()
        servers.append(server)
        settings.KB_ANSWER_URL, settings.KB_ANSWER_MODEL = server.url, server.model
        settings.KB_ANSWER_TIMEOUT, settings.KB_ANSWER_TOOLS = timeout, tools
        kb_settings.cache_clear()
        return server

    yield start
    for server in servers:
        server.__exit__()
    kb_settings.cache_clear()
