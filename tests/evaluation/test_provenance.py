"""What a benchmark records it was measured with: the processor read from /proc/cpuinfo's text."""

import os
import platform

from evaluation.provenance import processor

TWO_CORES = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse2 avx avx2 avx512f avx512_vnni sha_ni

processor\t: 1
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse2 avx avx2 avx512f avx512_vnni sha_ni
"""


def test_the_processor_is_its_model_its_cores_and_the_int8_kernels_flags():
    found = processor(TWO_CORES)
    assert found["model"] == "AMD EPYC 7B13"
    assert found["flags"] == ["avx2", "avx512f", "avx512_vnni"]  # not sse2, not sha_ni
    assert found["cores"] == os.cpu_count()


def test_without_cpuinfo_the_architecture_names_the_processor():
    found = processor("")
    assert found["model"] == platform.machine() and found["flags"] == []
