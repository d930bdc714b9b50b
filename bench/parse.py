"""Parse-stage speed on real documentation pages and main-text quality on a public benchmark, per ``extractor``.

    .venv/bin/python bench/parse.py [--pages 2000] [--workers 0] [--rounds 1] [--extractors a,b,...]

Speed: ``--pages`` HTML responses spread evenly over ../shared/corpus/dev-docs.warc.gz, written to a temporary
WARC, parsed by ``parse_warcs`` (reading, charset, links, canonicalization, extraction, hashing, duplicates,
Parquet) with each extractor and the same number of processes (``--workers``, 0 = one per core). Rounds take
the extractors in turn; the fastest round of each counts (other load on the machine only ever slows a round
down). Figures are pages/s per core.

Quality: each extractor's main text (``parse_record``, as the stage runs it) of the 181 pages of
../shared/extraction-benchmark, written as ``output/<extractor>.json`` in a temporary folder beside links to the
benchmark's ground truth and published outputs, then scored by the benchmark's own ``evaluate.py``: F1,
precision and recall over word 4-shingles, each with its bootstrap standard deviation.

The last lines compare the default extractor with ``trafilatura`` (trafilatura with its whole metadata pass):
``extractor_speedup=<default ÷ trafilatura pages/s per core>`` and ``extractor_f1_drop=<trafilatura F1 − default
F1>``. Goal: speedup ≥ 2 with an F1 drop ≤ 0.01.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from crawlcycle.parse.html_page import parse_record
from crawlcycle.parse.warc_records import parse_warcs
from crawlcycle.settings import EXTRACTORS, Settings
from crawlcycle.settings.sources import load_settings

SHARED = Path(__file__).resolve().parents[1] / "../shared"
CORPUS = SHARED / "corpus/dev-docs.warc.gz"
BENCHMARK = SHARED / "extraction-benchmark"
BASELINE = "trafilatura"


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


def quality(settings: dict[str, Settings], folder: Path) -> dict[str, dict]:
    """The benchmark's own evaluate.py on each extractor's main texts: {extractor: {f1, precision, ...}}."""
    truth = json.loads((BENCHMARK / "ground-truth.json").read_text())
    (folder / "output").mkdir(parents=True)
    (folder / "ground-truth.json").symlink_to(BENCHMARK / "ground-truth.json")
    for published in (BENCHMARK / "output").glob("*.json"):  # the published outputs, scored alongside
        (folder / "output" / f"published-{published.name}").symlink_to(published)
    for name, s in settings.items():
        out = {}
        for key, item in truth.items():
            body = gzip.decompress((BENCHMARK / "html" / f"{key}.html.gz").read_bytes())
            page, _, _ = parse_record(item["url"], 200, "text/html", "", "", "", body, False, s)
            out[key] = {"articleBody": page["text"] or ""}
        (folder / "output" / f"{name}.json").write_text(json.dumps(out))
    result = folder / "metrics.json"
    subprocess.run([sys.executable, str(BENCHMARK / "evaluate.py"), "--output", str(result)], cwd=folder,
                   check=True, stdout=subprocess.DEVNULL)
    return json.loads(result.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--extractors", default=",".join(EXTRACTORS), help="comma-separated; trafilatura is always run")
    args = ap.parse_args()
    workers = args.workers or os.cpu_count() or 1
    default = load_settings(environ={}).extractor
    names = list(dict.fromkeys([default, BASELINE, *args.extractors.split(",")]))
    unknown = [n for n in names if n not in EXTRACTORS]
    if unknown:
        sys.exit(f"bench/parse.py: --extractors: unknown {', '.join(unknown)}; choose from {', '.join(EXTRACTORS)}")
    settings = {name: load_settings(overrides={"user_agent": "crawlcycle-bench/0.1 (+http://127.0.0.1/contact)",
                                               "parse_workers": workers, "extractor": name}, environ={})
                for name in names}
    records = html_records(args.pages)
    print(f"pages={len(records)} workers={workers} rounds={args.rounds} "
          f"MB={sum(len(p) for _, p in records) / 1e6:.0f} default={default}", flush=True)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory() as tmp:
        warc = Path(tmp) / "pages.warc.gz"
        write_warc(warc, records)
        for r in range(args.rounds):
            for name in names:
                t = time.perf_counter()
                result = parse_warcs([warc], Path(tmp) / name, settings[name])
                seconds[name].append(time.perf_counter() - t)
                print(f"round {r + 1}/{args.rounds} {name}: {seconds[name][-1]:.1f} s, {result.pages} pages, "
                      f"{result.links} links, reasons {result.reasons}", flush=True)
        print("scoring main texts with ../shared/extraction-benchmark/evaluate.py ...", flush=True)
        metrics = quality(settings, Path(tmp) / "quality")
    speed = {name: len(records) / min(s) / workers for name, s in seconds.items()}
    print(f"\n{'extractor':<28} {'pages/s/core':>12}  {'F1':<13}  {'precision':<13}  {'recall':<13}")
    for name, m in sorted(metrics.items(), key=lambda kv: -kv[1]["f1"]):
        rate = f"{speed[name]:.1f}" if name in speed else "-"
        print(f"{name:<28} {rate:>12}  " + "  ".join(f"{m[k]:.3f} ± {m[k + '_std']:.3f}"
                                                     for k in ("f1", "precision", "recall")))
    print(f"extractor_speedup={speed[default] / speed[BASELINE]:.2f}")
    print(f"extractor_f1_drop={metrics[BASELINE]['f1'] - metrics[default]['f1']:.3f}")


if __name__ == "__main__":
    main()
