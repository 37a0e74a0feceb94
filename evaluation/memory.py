"""Resident memory, read from Linux's /proc: a process's size now and its peak, and the peak of
a fresh process that embeds a sample through one document runtime (the benchmark's own process
holds every model it compared, so its peak says nothing about one runtime)."""

from __future__ import annotations

import json
from pathlib import Path

STATUS = Path("/proc/self/status")


def resident_mb() -> dict[str, float | None]:
    """{"now": VmRSS, "peak": VmHWM} in MB (None off Linux)."""
    values: dict[str, float | None] = {"now": None, "peak": None}
    try:
        lines = STATUS.read_text().splitlines()
    except OSError:
        return values
    for line in lines:
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values["now" if key == "VmRSS" else "peak"] = round(int(rest.split()[0]) / 1024, 1)
    return values


_EMBED_IN_CHILD = """
import json, sys
import django
django.setup()
from evaluation import memory
from kb.embedding.embedders import local_embedder
texts = json.load(sys.stdin)
embedder = local_embedder(sys.argv[1])
for start in range(0, len(texts), 64):
    embedder.embed_documents(texts[start:start + 64])
print(json.dumps({"runtime": embedder.document_runtime_in_use, **memory.resident_mb()}))
"""


def embedding_process_peak(runtime: str, texts: list[str]) -> dict:
    """The resident peak of a fresh process (Django set up, as a worker is) that embeds `texts`
    through `runtime`, in 64-text batches as the pipeline does: one runtime's memory, measured
    apart from everything the benchmark itself holds. {"runtime", "now", "peak"} (MB)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _EMBED_IN_CHILD, runtime],
        input=json.dumps(texts),
        text=True,
        capture_output=True,
        cwd=Path(__file__).resolve().parents[1],
        timeout=3600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {runtime} embedding process failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
