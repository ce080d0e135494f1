"""How fast the LLM metrics ask: requests per second against a real endpoint, the client's own
overhead per request (against an endpoint that answers at once), and what the cache saves.

    .venv/bin/python benchmarks/bench_llm_judge.py                      # starts llama.cpp's server with SmolLM2-135M
    .venv/bin/python benchmarks/bench_llm_judge.py --base-url URL --model NAME   # any OpenAI-compatible endpoint

Every pass asks new questions (a fresh cache), except the cached pass, which asks the same ones again.
"""

from __future__ import annotations

import argparse
import http.server
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from topicbench.core.metrics.llm_judging import JudgeSettings, rating_request  # noqa: E402
from topicbench.tasks.llm.judge import EndpointJudge, LLMEndpoint  # noqa: E402

WORDS = ["budget", "tax", "deficit", "spending", "revenue", "economy", "jobs", "cut", "senate", "vote", "war", "troops"]


def questions(n: int, offset: int = 0) -> list:
    return [rating_request(WORDS, JudgeSettings(), seed=offset, topic=i, sample=0) for i in range(n)]


def timed_pass(endpoint: LLMEndpoint, requests: list) -> tuple[float, list]:
    judge = EndpointJudge(endpoint)
    started = time.perf_counter()
    judge.ask(requests)
    return time.perf_counter() - started, judge.take_records()


class _Instant(http.server.BaseHTTPRequestHandler):
    """An endpoint that answers every chat request at once: what is left is the client's cost."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        data = json.dumps({"choices": [{"message": {"content": "3"}}],
                           "usage": {"prompt_tokens": 60, "completion_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def client_overhead(n: int, folder: Path) -> None:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Instant)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    for concurrency in (1, 4):
        endpoint = LLMEndpoint(url, "instant", concurrency=concurrency, cache=str(folder / f"instant-{concurrency}.sqlite"))
        seconds, _ = timed_pass(endpoint, questions(n, offset=concurrency))
        cached, _ = timed_pass(endpoint, questions(n, offset=concurrency))
        print(f"instant endpoint, concurrency {concurrency}: {1000 * seconds / n:.2f} ms a request asked "
              f"(HTTP, the cache write and the record), {1000 * cached / n:.2f} ms answered from the cache")
    httpd.shutdown()


def real_endpoint(endpoint_of, n: int, folder: Path) -> None:
    for concurrency in (1, 2, 4):
        endpoint = endpoint_of(concurrency, folder / f"real-{concurrency}.sqlite")
        seconds, records = timed_pass(endpoint, questions(n, offset=100 + concurrency))
        tokens = sum(r["prompt_tokens"] + r["completion_tokens"] for r in records)
        print(f"{endpoint.model} at {endpoint.base_url}, concurrency {concurrency}: {n / seconds:.2f} requests/s "
              f"({seconds:.1f} s for {n}, {tokens / seconds:.0f} tokens/s)")
        cached, records = timed_pass(endpoint, questions(n, offset=100 + concurrency))
        assert all(r["cached"] for r in records)
        print(f"  the same {n} again: {cached:.3f} s, all from the cache ({seconds / max(cached, 1e-9):.0f}x faster)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--requests", type=int, default=24)
    parser.add_argument("--overhead-requests", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-llm-") as tmp:
        folder = Path(tmp)
        client_overhead(args.overhead_requests, folder)
        if args.base_url:
            real_endpoint(lambda c, cache: LLMEndpoint(args.base_url, args.model, concurrency=c, cache=str(cache)),
                          args.requests, folder)
            return
        from servers import running_llm_server

        with running_llm_server(folder) as server:
            real_endpoint(lambda c, cache: LLMEndpoint(server.url, "smollm2", concurrency=c, cache=str(cache)),
                          args.requests, folder)


if __name__ == "__main__":
    main()
