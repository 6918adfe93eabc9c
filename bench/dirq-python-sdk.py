#!/usr/bin/env python3
"""Benchmarks the Python SDK (`import dirq`, python/src, driving the built CLI over `dirq
sdk-stdio`) against the TypeScript SDK in-process and against plain Python. See bench/README.md,
"Python SDK benchmark".

  1. `query("SELECT 1")` round trip, Python vs the TypeScript SDK (medians of --queries).
  2. A 10,000-row answer, Python's `query` vs `json.loads` of the same JSON (and the TS SDK).
  3. Change -> event delivered to a Python `watch()` loop, over --writes writes (p50, p99).
  4. `extract` over --files small JSON files vs the same Python function in a plain loop.

Usage: python3 bench/dirq-python-sdk.py [--runs N] [--queries N] [--writes N] [--files N] [--json]
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python", "src"))
os.environ.setdefault("DIRQ_BIN", os.path.join(REPO, "packages", "dirq", "bin", "dirq.cjs"))
os.environ.setdefault("DIRQ_PROGRESS", "never")

import dirq  # noqa: E402

SDK_ENTRY = os.path.join(REPO, "packages", "dirq", "dist", "src", "index.js")
ROWS_SQL = (
    "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 10000) "
    "SELECT i, 'row ' || i AS text, i * 0.5 AS half, i * {factor} AS big, "
    "CASE WHEN i % 7 = 0 THEN NULL ELSE printf('%08d', i) END AS code FROM c"
)
# `big` within 2^53, and beyond it for the last fifth of the rows.
SMALL_FACTOR, BIG_FACTOR = 1099511, 1099511627776


def log(message: str) -> None:
    sys.stderr.write(f"bench: {message}\n")
    sys.stderr.flush()


def load_average() -> str:
    with open("/proc/loadavg") as file:
        return " ".join(file.read().split()[:3])


def percentile(values: List[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def typescript(script: str, *args: str) -> Dict[str, Any]:
    """Runs an ES module with the built SDK as `sdk`; its last stdout line is JSON."""
    source = f"import * as sdk from {json.dumps(SDK_ENTRY)};\n{script}"
    result = subprocess.run(
        ["node", "--input-type=module", "-e", source, "--", *args],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ),
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def select_one(root: str, queries: int) -> Dict[str, float]:
    with dirq.open(root, progress=False) as db:
        for _ in range(200):
            db.query("SELECT 1")
        times = []
        for _ in range(queries):
            start = time.perf_counter_ns()
            db.query("SELECT 1")
            times.append((time.perf_counter_ns() - start) / 1000)
    ts = typescript(
        """
const [root, count] = process.argv.slice(-2);
const db = sdk.open({ root, progress: false });
for (let i = 0; i < 200; i++) await db.query("SELECT 1");
const times = [];
for (let i = 0; i < Number(count); i++) {
  const start = process.hrtime.bigint();
  await db.query("SELECT 1");
  times.push(Number(process.hrtime.bigint() - start) / 1000);
}
await db.close();
times.sort((a, b) => a - b);
console.log(JSON.stringify({ median: times[times.length >> 1] }));
""",
        root,
        str(queries),
    )
    return {
        "python_us": statistics.median(times),
        "python_p99_us": percentile(times, 0.99),
        "typescript_us": ts["median"],
    }


def many_rows(root: str, runs: int, factor: int) -> Dict[str, float]:
    sql = ROWS_SQL.format(factor=factor)
    with dirq.open(root, progress=False) as db:
        rows = db.query(sql)
        assert len(rows) == 10_000 and rows[-1]["big"] == 10_000 * factor
        text = json.dumps(rows, separators=(",", ":"))
        sdk, loads = [], []
        for _ in range(runs):
            start = time.perf_counter()
            db.query(sql)
            sdk.append(time.perf_counter() - start)
            start = time.perf_counter()
            json.loads(text)
            loads.append(time.perf_counter() - start)
    ts = typescript(
        """
const [root, sql, runs] = process.argv.slice(-3);
const db = sdk.open({ root, progress: false });
await db.query(sql);
const times = [];
for (let i = 0; i < Number(runs); i++) {
  const start = performance.now();
  await db.query(sql);
  times.push(performance.now() - start);
}
await db.close();
times.sort((a, b) => a - b);
console.log(JSON.stringify({ median: times[times.length >> 1] }));
""",
        root,
        sql,
        str(runs),
    )
    return {
        "python_ms": statistics.median(sdk) * 1000,
        "json_loads_ms": statistics.median(loads) * 1000,
        "json_bytes": len(text),
        "typescript_ms": ts["median"],
    }


def change_to_event(root: str, writes: int) -> Dict[str, float]:
    folder = os.path.join(root, "events")
    os.makedirs(folder)
    latencies = []
    table = dirq.Table("notes", "events/*.json", format="json")
    with dirq.open(root, tables=[table], progress=False) as db:
        with db.watch() as events:
            events.ready()
            for i in range(writes):
                path = os.path.join(folder, f"n{i % 20}.json")
                aside = path + ".part"
                with open(aside, "w") as file:
                    file.write(json.dumps({"i": i}))
                start = time.perf_counter()
                os.replace(aside, path)
                while True:
                    event = events.get(timeout=10)
                    if event["action"] != "error" and event["row"].get("i") == i:
                        break
                latencies.append((time.perf_counter() - start) * 1000)
    return {
        "p50_ms": percentile(latencies, 0.5),
        "p99_ms": percentile(latencies, 0.99),
        "max_ms": max(latencies),
    }


def extract_files(root: str, files: int, runs: int) -> Dict[str, float]:
    folder = os.path.join(root, "posts")
    for i in range(files):
        sub = os.path.join(folder, f"d{i % 20:02d}")
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, f"p{i}.json"), "w") as file:
            json.dump({"title": f"post {i}", "words": (i * 7919) % 1000, "tags": ["a", "b"]}, file)

    def parse(path: str, content: bytes) -> List[Dict[str, Any]]:
        return [json.loads(content)]

    paths = sorted(
        os.path.relpath(os.path.join(dirpath, name), root)
        for dirpath, _, names in os.walk(folder)
        for name in names
    )

    def plain() -> Dict[str, float]:
        cpu, start = time.process_time(), time.perf_counter()
        total = 0
        for path in paths:
            with open(os.path.join(root, path), "rb") as file:
                total += sum(row["words"] for row in parse(path, file.read()))
        assert total > 0
        return {"wall": time.perf_counter() - start, "cpu": time.process_time() - cpu}

    def sdk(glob: str) -> Dict[str, float]:
        """Open to answer; CPU of this process and of the dirq child (reaped at close)."""
        schema = {"title": "TEXT", "words": "INTEGER", "tags": "TEXT"}
        table = dirq.Table("posts", glob, schema=schema, extract=parse)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu, start = time.process_time(), time.perf_counter()
        with dirq.open(root, tables=[table], progress=False) as db:
            db.query("SELECT count(*), sum(words) FROM posts")
            wall = time.perf_counter() - start
        python_cpu = time.process_time() - cpu
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        child_cpu = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
        return {"wall": wall, "python_cpu": python_cpu, "child_cpu": child_cpu}

    plain_runs, sdk_runs, empty_runs = [], [], []
    sdk("posts/**/*.json")
    for _ in range(runs):
        plain_runs.append(plain())
        sdk_runs.append(sdk("posts/**/*.json"))
        empty_runs.append(sdk("none/**/*.json"))

    def med(samples: List[Dict[str, float]], key: str) -> float:
        return statistics.median(sample[key] for sample in samples) * 1000

    ts = typescript(
        """
const [root, runs] = process.argv.slice(-2);
const times = [];
for (let i = 0; i <= Number(runs); i++) {
  const start = performance.now();
  const db = sdk.open({ root, progress: false, tables: [{ name: "posts", glob: "posts/**/*.json",
    extract: (path, content) => [JSON.parse(content)] }] });
  await db.query("SELECT count(*), sum(words) FROM posts");
  await db.close();
  if (i > 0) times.push(performance.now() - start);
}
times.sort((a, b) => a - b);
console.log(JSON.stringify({ median: times[times.length >> 1] }));
""",
        root,
        str(runs),
    )
    return {
        "plain_loop_ms": med(plain_runs, "wall"),
        "plain_loop_cpu_ms": med(plain_runs, "cpu"),
        "sdk_total_ms": med(sdk_runs, "wall"),
        "sdk_no_files_ms": med(empty_runs, "wall"),
        "sdk_extract_ms": med(sdk_runs, "wall") - med(empty_runs, "wall"),
        "sdk_extract_python_cpu_ms": med(sdk_runs, "python_cpu") - med(empty_runs, "python_cpu"),
        "sdk_extract_child_cpu_ms": med(sdk_runs, "child_cpu") - med(empty_runs, "child_cpu"),
        "typescript_sdk_ms": ts["median"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=7, help="timed runs of 2 and 4 (default 7)")
    parser.add_argument(
        "--queries", type=int, default=5000, help="SELECT 1 round trips (default 5000)"
    )
    parser.add_argument(
        "--writes", type=int, default=200, help="writes for change -> event (default 200)"
    )
    parser.add_argument("--files", type=int, default=2000, help="files for extract (default 2000)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    options = parser.parse_args()
    if not os.path.isfile(SDK_ENTRY):
        sys.exit(
            f"bench: build dirq first (npm run build -w packages/dirq): {SDK_ENTRY} is missing"
        )
    work = tempfile.mkdtemp(prefix="dirq-bench-python-")
    results: Dict[str, Any] = {"load_before": load_average()}
    try:
        for name, part in [
            ("select_one", lambda: select_one(work, options.queries)),
            ("rows_10k", lambda: many_rows(work, options.runs, SMALL_FACTOR)),
            ("rows_10k_bigints", lambda: many_rows(work, options.runs, BIG_FACTOR)),
            ("change_to_event", lambda: change_to_event(work, options.writes)),
            ("extract", lambda: extract_files(work, options.files, options.runs)),
        ]:
            log(f"{name} (load average {load_average()})")
            results[name] = part()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["load_after"] = load_average()
    if options.json:
        print(json.dumps(results, indent=2))
        return
    one, rows, big, events, extract = (
        results[key]
        for key in ("select_one", "rows_10k", "rows_10k_bigints", "change_to_event", "extract")
    )
    lines = [
        f"load average before {results['load_before']}, after {results['load_after']}",
        f"SELECT 1 round trip: Python {one['python_us']:.0f} us (p99 {one['python_p99_us']:.0f}),"
        f" TypeScript SDK {one['typescript_us']:.0f} us:"
        f" {one['python_us'] / one['typescript_us']:.1f}x (target <= 2x)",
        f"10,000 rows ({rows['json_bytes']:,} bytes of JSON): Python query"
        f" {rows['python_ms']:.1f} ms, json.loads {rows['json_loads_ms']:.1f} ms:"
        f" {rows['python_ms'] / rows['json_loads_ms']:.1f}x (target <= 2x);"
        f" TypeScript SDK {rows['typescript_ms']:.1f} ms",
        f"  the same with 2,000 integers beyond 2^53: Python {big['python_ms']:.1f} ms,"
        f" json.loads {big['json_loads_ms']:.1f} ms, TypeScript SDK {big['typescript_ms']:.1f} ms",
        f"change -> event over {options.writes} writes: p50 {events['p50_ms']:.1f} ms,"
        f" p99 {events['p99_ms']:.1f} ms (target < 50), max {events['max_ms']:.1f} ms",
        f"extract over {options.files} files: plain loop {extract['plain_loop_ms']:.0f} ms"
        f" (CPU {extract['plain_loop_cpu_ms']:.0f} ms); SDK open to answer"
        f" {extract['sdk_total_ms']:.0f} ms, with no files {extract['sdk_no_files_ms']:.0f} ms,"
        f" so extract {extract['sdk_extract_ms']:.0f} ms:"
        f" {extract['sdk_extract_ms'] / extract['plain_loop_ms']:.1f}x (target <= 1.5x);"
        f" its CPU: Python {extract['sdk_extract_python_cpu_ms']:.0f} ms,"
        f" dirq child {extract['sdk_extract_child_cpu_ms']:.0f} ms;"
        f" TypeScript SDK, JS extract, open to answer {extract['typescript_sdk_ms']:.0f} ms",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
