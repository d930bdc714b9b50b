"""How many pages of the real snapshots name a canonical URL, and how many a crawl folds.

    .venv/bin/python bench/canonicals.py [--out data/canon]

For dev-docs (``../shared/corpus``), py-web-docs and sci-docs (built from ``bench/snapshots/`` into ``data/``, see
``bench/policies.py``): a ``bfs`` crawl of 15 cycles of 4,000 URLs from every host's home page, then, in the ground
truth's database (every 2xx response of the snapshot parsed and merged) and in the crawl's, the pages, those naming a
canonical, the self-canonical ones and the folded ones, and what became of each declaration (``v_canonicals``).
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import duckdb
from policies import ROOT, SHARED, built_warc

HOMES = {
    "dev-docs": [f"http://{h}.docs.test/index.html"
                 for h in ("python", "postgresql", "django", "sphinx", "git", "sqlite", "requests", "nodejs")],
    "py-web-docs": [f"http://{h}.docs.test/index.html" for h in ("pandas", "sqlalchemy", "flask", "werkzeug", "jinja")]
    + ["http://bash.docs.test/bash.html"],
    "sci-docs": [f"http://{h}.docs.test/index.html" for h in ("dask", "celery", "sympy", "drf", "pygments")],
}
COUNTS = ("SELECT count(*) AS pages, count(canonical_link) AS canonical, "
          "count(*) FILTER (canonical_link = url) AS self, count(folded_cycle) AS folded FROM pages")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "data" / "canon")
    out = ap.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    queries = out / "queries.tsv"
    queries.write_text("install\t10\n")  # the figures need a crawl, not a workload
    for name, homes in HOMES.items():
        warc = SHARED / "corpus" / "dev-docs.warc.gz" if name == "dev-docs" else built_warc(name)
        seeds = out / f"{name}-seeds.txt"
        seeds.write_text("\n".join(homes) + "\n")
        subprocess.run([str(ROOT / ".venv" / "bin" / "crawlcycle"), "simulate", "--snapshot", str(warc),
                        "--queries", str(queries), "--seeds", str(seeds), "--policy", "bfs", "--cycles", "15",
                        "--batch-size", "4000", "--per-host-cap", "4000", "--out", str(out / name),
                        "--cache", str(out / f"{name}-cache"),
                        "--user-agent", "crawlcycle-bench/0.1 (+http://127.0.0.1/contact)"],
                       check=True, stdout=subprocess.DEVNULL)
        truth = sorted((out / f"{name}-cache").glob("truth-*/truth.duckdb"))[-1]
        for label, db in (("whole snapshot", truth), ("crawl", out / name / "work" / "crawl.duckdb")):
            with duckdb.connect(str(db), read_only=True) as con:
                pages, canonical, self_, folded = con.execute(COUNTS).fetchone()
                outcomes = con.execute("SELECT outcome, count(*) FROM v_canonicals GROUP BY ALL ORDER BY 1").fetchall()
            print(f"{name} {label}: {pages} pages, {canonical} name a canonical, {self_} self-canonical, "
                  f"{folded} folded; " + ", ".join(f"{o} {n}" for o, n in outcomes), flush=True)


if __name__ == "__main__":
    main()
