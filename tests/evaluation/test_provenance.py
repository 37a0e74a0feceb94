"""What a benchmark records it was measured with: the processor read from /proc/cpuinfo's text,
the packages' versions."""

import os
import platform
from importlib import metadata

from evaluation import provenance
from evaluation.provenance import processor

AVX512_VNNI = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse2 avx avx2 avx512f avx512_vnni sha_ni

processor\t: 1
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse2 avx avx2 avx512f avx512_vnni sha_ni
"""


def test_the_processor_is_its_model_its_cores_and_the_int8_kernels_flags():
    found = processor(AVX512_VNNI)
    assert found["model"] == "AMD EPYC 7B13"
    assert found["flags"] == ["avx2", "avx512f", "avx512_vnni"]  # not sse2, not sha_ni
    # the cores this process may run on, whatever the text lists
    assert found["cores"] == len(os.sched_getaffinity(0))


def test_without_cpuinfo_the_architecture_names_the_processor(monkeypatch, tmp_path):
    monkeypatch.setattr(provenance, "CPUINFO", tmp_path / "absent")
    found = processor()
    assert found["model"] == platform.machine() and found["flags"] == []


def test_a_package_not_installed_reads_none(monkeypatch):
    monkeypatch.setattr(provenance, "PACKAGES", ("numpy", "no-such-package-kb"))
    assert provenance.package_versions() == {
        "numpy": metadata.version("numpy"),
        "no-such-package-kb": None,
    }
