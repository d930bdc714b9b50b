"""Parse-stage throughput on real pages of the dev-docs snapshot, against bare trafilatura.

    .venv/bin/python bench/parse.py [--pages 2000] [--workers 0] [--rounds 1]

Takes ``--pages`` HTML responses spread evenly over ../shared/corpus/dev-docs.warc.gz, writes them to a
temporary WARC and times, with the same number of processes (``--workers``, 0 = one per core):

- ours: ``parse_warcs`` on that WARC (reading, charset, links, canonicalization, extraction, hashing,
  duplicates, Parquet);
- bare: ``trafilatura.extract`` on the same bodies with the extraction options the stage uses
  (``fast=True, with_metadata=True``), fanned out over a process pool the same way.

Rounds alternate ours and bare; the fastest round of each counts (other load on the machine only ever
slows a round down). The last line is ``parse_overhead=<ours / bare time per page>``.
"""

from __future__ import annotations

import argparse
import io
import multiprocessing
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import trafilatura
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from crawlcycle.parse import CHUNK_RECORDS, parse_warcs
from crawlcycle.settings import load_settings

CORPUS = Path(__file__).resolve().parents[1] / "../shared/corpus/dev-docs.warc.gz"


def html_records(n: int) -> list[tuple[str, bytes]]:
    """(url, raw HTTP response) of ``n`` HTML pages spread evenly over the snapshot."""
    records = []
    with open(CORPUS, "rb") as f:
        for rec in ArchiveIterator(f):
            if rec.rec_type == "response" and (rec.http_headers.get_header("Content-Type") or "").startswith(
                    "text/html"):
                head = rec.http_headers.to_bytes()
                records.append((rec.rec_headers.get_header("WARC-Target-URI"), head + rec.content_stream().read()))
    step = max(1, len(records) // n)
    return records[::step][:n]


def write_warc(path: Path, records: list[tuple[str, bytes]]) -> None:
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for url, payload in records:
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(payload),
                                                          length=len(payload)))


def bare(body: bytes, url: str) -> int:
    return len(trafilatura.extract(body, url=url, fast=True, with_metadata=True) or "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    workers = args.workers or os.cpu_count() or 1
    settings = load_settings(overrides={"user_agent": "crawlcycle-bench/0.1 (+http://127.0.0.1/contact)",
                                        "parse_workers": workers}, environ={})
    records = html_records(args.pages)
    urls = [url for url, _ in records]
    bodies = [payload.split(b"\r\n\r\n", 1)[1] for _, payload in records]
    ctx = multiprocessing.get_context("forkserver")
    ours_s, bare_s = [], []
    with tempfile.TemporaryDirectory() as tmp:
        warc = Path(tmp) / "pages.warc.gz"
        write_warc(warc, records)
        for _ in range(args.rounds):
            t = time.perf_counter()
            result = parse_warcs([warc], Path(tmp) / "out", settings)
            ours_s.append(time.perf_counter() - t)
            t = time.perf_counter()
            with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
                extracted = sum(1 for n in pool.map(bare, bodies, urls, chunksize=CHUNK_RECORDS) if n)
            bare_s.append(time.perf_counter() - t)
    n = len(records)
    ours_t, bare_t = min(ours_s), min(bare_s)
    print(f"pages={n} workers={workers} rounds={args.rounds} MB={sum(map(len, bodies)) / 1e6:.0f}")
    print("rounds ours/bare s: " + ", ".join(f"{o:.1f}/{b:.1f}" for o, b in zip(ours_s, bare_s, strict=True)))
    print(f"ours: {n / ours_t / workers:.1f} pages/s per core, wall {ours_t:.1f} s "
          f"({result.pages} pages, {result.links} links, {result.rejects} rejects, reasons {result.reasons})")
    print(f"bare trafilatura.extract: {n / bare_t / workers:.1f} pages/s per core, wall {bare_t:.1f} s "
          f"({extracted} with text)")
    print(f"parse_overhead={ours_t / bare_t:.2f}")


if __name__ == "__main__":
    main()
