"""The real answer model behind its real server (tests/answer_model.py): made from the wheel's GGUF
once,
served offline by `transformers serve`, speaking the chat-completions protocol the product reads,
and
listed by /v1/models under the name the product is configured with. Times are kept in
test-artifacts/process-timings.json."""

import json
import time
import urllib.request

import pytest

from answers.service import model_status
from kb.conf import kb_settings
from tests.answer_model import answer_server, complete, model_folder  # noqa: F401  (the fixture)
from tests.e2e.processes import record_timing

pytestmark = pytest.mark.slow


def test_the_folder_is_made_once_and_reused():
    folder = model_folder()
    weights = folder / "model.safetensors"
    before = weights.stat().st_mtime_ns
    started = time.monotonic()
    assert model_folder() == folder
    assert time.monotonic() - started < 1  # read from the cache, not converted again
    assert weights.stat().st_mtime_ns == before
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "llama" and "quantization_config" not in config
    assert (folder / "tokenizer.json").is_file() and (folder / "chat_template.jinja").is_file()


def test_the_server_answers_offline_plain_and_streamed(answer_server):  # noqa: F811
    record_timing("answer_model_server_start_seconds", answer_server.started_in)
    with urllib.request.urlopen(f"{answer_server.base_url}/models", timeout=30) as response:
        listed = [model["id"] for model in json.loads(response.read())["data"]]
    assert answer_server.model in listed

    messages = [
        {"role": "system", "content": "Answer in one short sentence."},
        {
            "role": "user",
            "content": "Sources:\n[1] Pumpkins need sun and rich soil.\n\nWhat do pumpkins need?",
        },
    ]
    started = time.monotonic()
    body = complete(answer_server, messages, max_tokens=24)
    seconds = time.monotonic() - started
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["content"].strip()
    tokens = body["usage"]["completion_tokens"]
    assert 0 < tokens <= 24
    record_timing("answer_model_tokens_per_second", tokens / seconds)

    chunks = complete(answer_server, messages, max_tokens=12, stream=True)
    assert chunks and {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
    text = "".join(
        chunk["choices"][0]["delta"].get("content") or "" for chunk in chunks if chunk["choices"]
    )
    assert text.strip()
    assert chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length")


def test_the_product_sees_the_server_and_its_model(answer_server, settings):  # noqa: F811
    settings.KB_ANSWER_URL, settings.KB_ANSWER_MODEL = answer_server.base_url, answer_server.model
    kb_settings.cache_clear()
    try:
        assert model_status() == {
            "enabled": True,
            "ok": True,
            "model": answer_server.model,
            "reachable": True,
        }
        settings.KB_ANSWER_MODEL = "no-such-model"
        kb_settings.cache_clear()
        status = model_status()
        assert (
            status["ok"] is False
            and status["reachable"] is True
            and "no-such-model" in status["error"]
        )
    finally:
        kb_settings.cache_clear()
