"""What a benchmark's figures were measured with, written beside them (`kb_bench --json`): the
processor, the packages whose arithmetic makes the embeddings and the scores, and the database.

The documents' int8 embeddings can differ between machines, and with them the quality figures,
where PyTorch's agree to the digit (docs/benchmarks.md, "An int8 figure belongs to its machine"): a
figure compares only with one measured on the same processor and packages."""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path

# the packages that compute what the figures measure: the model's runtimes and tokenizer, and the
# arrays the channels' scores and the metrics are computed in
PACKAGES = (
    "onnxruntime",
    "torch",
    "sentence-transformers",
    "transformers",
    "tokenizers",
    "numpy",
)
# the instruction-set extensions ONNX Runtime's int8 kernels choose between
KERNEL_FLAGS = ("avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni", "amx_int8")
CPUINFO = Path("/proc/cpuinfo")


def processor(cpuinfo: str | None = None) -> dict:
    """The processor's model name, the cores this process may run on and which of `KERNEL_FLAGS`
    it has, from
    /proc/cpuinfo where the system has one (elsewhere only the architecture, `platform.machine()`,
    which starts no process as `platform.processor()` does)."""
    if cpuinfo is None:
        cpuinfo = CPUINFO.read_text(encoding="utf-8", errors="replace") if CPUINFO.exists() else ""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        name, colon, value = line.partition(":")
        if colon and name.strip() not in fields:
            fields[name.strip()] = value.strip()
    flags = set(fields.get("flags", "").split())
    return {
        "model": fields.get("model name") or platform.machine(),
        "cores": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "flags": [flag for flag in KERNEL_FLAGS if flag in flags],
    }


def package_versions() -> dict[str, str | None]:
    """Each of `PACKAGES`' installed version, None where it is not installed."""
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def database_versions(connection) -> dict[str, str | None]:
    """The PostgreSQL server's version and pgvector's, through a Django `connection`."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('server_version')")
        server = cursor.fetchone()[0]
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    return {"postgresql": server, "pgvector": row[0] if row else None}


def measured_with(connection) -> dict:
    """The whole record, as `kb_bench --json` writes it under `measured_with`."""
    return {
        "processor": processor(),
        "python": platform.python_version(),
        "packages": package_versions(),
        "database": database_versions(connection),
    }
