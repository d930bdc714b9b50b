"""Fetcher throughput against its politeness bound: 200 hosts x 20 pages on loopback.

Run: .venv/bin/python bench/fetch.py [--hosts 200] [--pages 20] [--delay 1.0]

Hosts run in parallel, so a perfectly polite crawler finishes when the slowest host does. One host takes
robots.txt plus ``pages`` pages = pages + 1 requests, separated by ``pages`` delays:
bound = pages x delay + (pages + 1) x r, with r the response time of an idle server. The servers run in
child processes, so the CPU time measured here is the fetcher's alone. They keep connections alive, so a polite
fetcher opens one connection per host for the whole shard.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq

from crawlcycle.fetch.fetcher import fetch_urls
from crawlcycle.settings.sources import load_settings

SERVERS = 4
PAGE = b"<html><head><title>bench</title></head><body>" + b"<p>polite crawling</p>" * 120 + b"</body></html>"
ROBOTS = b"User-agent: *\nAllow: /\n"


def _serve(ready: multiprocessing.Queue) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # HTTP/1.1 keep-alive, as most servers: one connection serves every request of a client until it closes.
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                body, ctype = (ROBOTS, b"text/plain") if b" /robots.txt " in head else (PAGE, b"text/html")
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
                             % (ctype, len(body)) + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed the connection
        writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
        ready.put(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    asyncio.run(main())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--pages", type=int, default=20)
    ap.add_argument("--delay", type=float, default=1.0, help="seconds; default: the min_delay setting's default")
    args = ap.parse_args()

    ready: multiprocessing.Queue = multiprocessing.Queue()
    servers = [multiprocessing.Process(target=_serve, args=(ready,), daemon=True) for _ in range(SERVERS)]
    for p in servers:
        p.start()
    ports = [ready.get(timeout=10) for _ in servers]
    # A fixed delay (delay_factor 0): the bound assumes one, and here all hosts share a few loopback servers
    # on the same CPUs, so response times measure the bench's own load rather than a host's.
    settings = load_settings(environ={}, overrides={
        "user_agent": "crawlcycle-bench/0.1 (+http://127.0.0.1/contact)", "min_delay": args.delay,
        "delay_factor": 0.0, "fetch_concurrency": args.hosts, "allow_networks": "127.0.0.0/8",
        "sitemap_fallback": False,  # the bound counts robots.txt and pages only
        "connect_to": ",".join(f"*.s{i}.test=127.0.0.1:{port}" for i, port in enumerate(ports))})
    urls = [f"http://h{h}.s{h % SERVERS}.test/page/{p}" for h in range(args.hosts) for p in range(args.pages)]

    # Response time of an idle server: one host alone, no delay.
    with tempfile.TemporaryDirectory() as out:
        idle = fetch_urls([f"http://idle.s0.test/page/{p}" for p in range(30)], replace(settings, min_delay=0.0),
                          Path(out))
        r = statistics.median(q["finished_at"] - q["started_at"] for q in pq.read_table(idle.requests).to_pylist())
    bound = args.pages * args.delay + (args.pages + 1) * r

    with tempfile.TemporaryDirectory() as out:
        cpu0, t0 = time.process_time(), time.time()
        result = fetch_urls(urls, settings, Path(out))
        measured, cpu = time.time() - t0, time.process_time() - cpu0
        log = pq.read_table(result.fetch_log).to_pylist()
        requests = sorted(pq.read_table(result.requests).to_pylist(), key=lambda q: (q["host"], q["started_at"]))
    for p in servers:
        p.terminate()

    fetched = sum(row["outcome"] == "fetched" for row in log)
    gaps = [b["started_at"] - a["finished_at"] for a, b in zip(requests, requests[1:], strict=False)
            if a["host"] == b["host"]]
    print(f"hosts={args.hosts} pages_per_host={args.pages} delay={args.delay}s (fixed) servers={SERVERS} "
          f"cpus={os.cpu_count()}")
    print(f"requests={result.requests_sent} fetched={fetched}/{len(urls)} outcomes={result.outcomes}")
    print(f"idle_response_ms={r * 1000:.2f}")
    print(f"politeness_bound_s={bound:.3f} (= {args.pages} x delay + {args.pages + 1} x response)")
    print(f"measured_s={measured:.3f}")
    print(f"cpu_per_page_ms={cpu / len(urls) * 1000:.3f} (process CPU {cpu:.2f} s)")
    print(f"min_gap_over_delay={min(gaps) / args.delay:.3f} (gap: next start - previous finish, one host)")
    # Goal: one connection per host for the whole shard (the server keeps connections alive).
    print(f"connections={result.connections} connections_per_host={result.connections / args.hosts:.3f}")
    print(f"connections_per_page={result.connections / len(urls):.4f} (goal {1 / args.pages:.4f}: one per host)")
    print(f"politeness_efficiency={bound / measured:.3f}")
    return 0 if fetched == len(urls) and min(gaps) >= args.delay else 1


if __name__ == "__main__":
    sys.exit(main())
