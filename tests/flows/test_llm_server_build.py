"""The llama.cpp server the LLM-judge tests ask is built for a portable x86-64 target and answers.

A library built for the build machine's CPU (``GGML_NATIVE``) held AMX instructions that another VM
of the same kind lists but does not execute: the server answered ``/v1/models`` and died with
SIGILL on its first chat completion. ``scripts/llm_server.py`` builds for x86-64-v3; these tests
hold it to that on any machine, whether or not its CPU has the trap: the scanner finds AVX-512 and
AMX where they are, the installed build is the portable one and holds none, and the started server
answers a chat completion.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import servers
from servers import llm_server  # noqa: F401 (a fixture)

llm_server_script = servers.llm_server_script()

x86_64_only = pytest.mark.skipif(platform.machine() != "x86_64", reason="the portable target is x86-64's")
needs_toolchain = pytest.mark.skipif(not (shutil.which("gcc") and shutil.which("objdump")),
                                     reason="gcc and objdump (binutils) are not installed")

_BEYOND_TARGET = r"""
#include <immintrin.h>
void amx(const void *tiles) { _tile_loadconfig(tiles); _tile_loadd(0, tiles, 64); _tile_dpbssd(2, 0, 1); _tile_release(); }
__m512 avx512(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
"""
_WITHIN_TARGET = r"""
#include <immintrin.h>
__m256 fma(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
__m256i avx2(__m256i a, __m256i b) { return _mm256_add_epi32(a, b); }
"""


def _shared_object(folder: Path, name: str, source: str, *flags: str) -> Path:
    (folder / f"{name}.c").write_text(source)
    library = folder / f"lib{name}.so"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", *flags, str(folder / f"{name}.c"), "-o", str(library)],
                   check=True, capture_output=True)
    return library


@x86_64_only
@needs_toolchain
def test_the_scan_finds_amx_and_avx512_and_passes_x86_64_v3(tmp_path):
    trapped = _shared_object(tmp_path, "trapped", _BEYOND_TARGET, "-mamx-tile", "-mamx-int8", "-mavx512f")
    found = llm_server_script.target_violations(trapped)
    assert any("tileloadd" in line for line in found) and any("tdpbssd" in line for line in found)
    assert any("zmm" in line for line in found)
    portable = _shared_object(tmp_path, "portable", _WITHIN_TARGET, "-march=x86-64-v3")
    assert llm_server_script.target_violations(portable) == []


@x86_64_only
@needs_toolchain
def test_the_installed_llama_cpp_is_the_portable_build_and_holds_nothing_beyond_it():
    libraries = llm_server_script.installed_libraries()
    if not libraries:
        pytest.skip("llama-cpp-python is not installed: bash scripts/setup.sh --browser installs it")
    marker = json.loads((Path(sys.prefix) / llm_server_script.MARKER).read_text())
    assert "-DGGML_NATIVE=OFF" in marker["cmake_args"] and "-DGGML_AMX_TILE=OFF" in marker["cmake_args"]
    cpu = [library for library in libraries if "ggml-cpu" in library.name]
    assert cpu, f"no ggml-cpu library among {[library.name for library in libraries]}"
    for library in libraries:
        assert llm_server_script.target_violations(library) == [], library


def test_the_started_server_answers_a_chat_completion(llm_server):
    reply = llm_server_script.ask_one_chat_completion(llm_server.url, timeout=120)
    assert isinstance(reply, str)
    assert llm_server.process.poll() is None, llm_server.log_tail()
