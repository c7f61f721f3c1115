#!/usr/bin/env python3
"""Issue 32's verdict on a set of storm runs (scripts/bench-adaptive-storm), and the plot.

    adaptive_report.py verdict FILE [--queue-timeout 10] [--per-expiry 2.25]
    adaptive_report.py plot FILE OUT.png

FILE holds storm.py's JSON lines. Runs are grouped by (authorization server, resource
server); within a group, the run with max_in_flight 0 is the default configuration (the
adaptive limit) and those with max_in_flight > 0 are the hand-tuned sweep. When a cell ran
more than once (ROUNDS), its figures are the median over its rounds.

For each group the verdict checks what issue 32 asks of the default configuration:
  - 0 client 401s;
  - 0 requests answered after more than --queue-timeout seconds (AuthGate's default
    queueTimeoutSeconds), and no client timeout;
  - refreshes per token lifetime no more than --per-expiry (what the refresh lead
    configures: two per lifetime at half-life, plus the jitter);
  - 0 reuse detections at the authorization server;
  - throughput >= 95 % of the best hand-tuned maxInFlight (the sweep's highest throughput),
    and p99 <= 1.2x that run's p99.
Beside it, the same two ratios after the warm-up (storm.py's steady_rps and steady_p99_ms,
against the sweep's best there), to tell slow start from the steady state.
It prints a table and exits 1 when any group fails.

The plot: the in-flight limit over time (authgate_upstream_limit, sampled every 0.5 s) of
each default run, one panel per group, with the best hand-tuned bound as a dashed line.
Needs matplotlib (installed with pip when missing).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict


def load(path):
    """{(as, rs): {max_in_flight: [runs]}}"""
    groups = defaultdict(lambda: defaultdict(list))
    for line in open(path):
        if line.strip():
            o = json.loads(line)
            if o["mode"] != "direct":
                groups[(o["as"], o["rs"])][o.get("max_in_flight", 0)].append(o)
    return groups


def median_of(runs, key):
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def cell(runs):
    """The figures of one cell, the medians over its rounds (worst case for the counts)."""
    return {
        "rounds": len(runs),
        "rps": median_of(runs, "throughput_rps"),
        "p99": median_of(runs, "p99_ms"),
        "steady_rps": median_of(runs, "steady_rps"),
        "steady_p99": median_of(runs, "steady_p99_ms"),
        "max": max(r["max_ms"] or 0 for r in runs),
        "client_401": sum(r["client_401"] for r in runs),
        "non_200": sum(r["non_200"] for r in runs),
        "timeouts": sum(r["timeouts"] for r in runs),
        # Refreshes per token lifetime of the run (login to the end of the load): storm.py's
        # own figure divides by whole expiries, which a 12 s run rounds down by a quarter.
        "per_expiry": max(r["refreshes"] / (r["elapsed_login_to_end_s"] / r["ttl"]) for r in runs),
        "reuse": sum(r["reuse_detections"] or 0 for r in runs),
        "rs_401": sum(r["rs_401"] for r in runs),
    }


def verdict(path, queue_timeout, per_expiry):
    groups = load(path)
    failed = False
    print("| AS | API | default: req/s | best `maxInFlight` (req/s) | throughput ÷ best | p99 default / best ms"
          " | after the warm-up: throughput, p99 ÷ best"
          " | client 401s | slowest answer | non-200 | refreshes per expiry | reuse | API 401s (replays) default / best | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (as_kind, rs), cells in sorted(groups.items()):
        if 0 not in cells:
            continue
        d = cell(cells[0])
        sweep = {n: cell(runs) for n, runs in cells.items() if n > 0}
        if not sweep:
            continue
        best_n = max(sweep, key=lambda n: sweep[n]["rps"] or 0)
        b = sweep[best_n]
        ratio = (d["rps"] or 0) / b["rps"] if b["rps"] else 0
        p99_ratio = (d["p99"] or 0) / b["p99"] if b["p99"] else 0
        # After the warm-up (storm.py --warm-up): against the sweep's best there, which need
        # not be the same bound. Shown beside the verdict, which stays on the whole run.
        steady = "n/a"
        if d["steady_rps"] is not None and all(c["steady_rps"] for c in sweep.values()):
            steady_n = max(sweep, key=lambda n: sweep[n]["steady_rps"])
            sb = sweep[steady_n]
            steady = (f"{d['steady_rps'] / sb['steady_rps']:.2f}×, {d['steady_p99'] / sb['steady_p99']:.2f}× "
                      f"(best {steady_n})")
        problems = []
        if d["client_401"]:
            problems.append(f"{d['client_401']} client 401s")
        if d["max"] > queue_timeout * 1000 or d["timeouts"]:
            problems.append("an answer over the queue timeout")
        if d["per_expiry"] > per_expiry:
            problems.append(f"{d['per_expiry']:.2f} refreshes per expiry")
        if d["reuse"]:
            problems.append("reuse detected")
        if ratio < 0.95:
            problems.append(f"throughput {ratio:.2f}× best")
        if p99_ratio > 1.2:
            problems.append(f"p99 {p99_ratio:.2f}× best")
        failed |= bool(problems)
        print(f"| {as_kind} | {rs} | {d['rps']:.0f} | {best_n} ({b['rps']:.0f}) | {ratio:.2f} | "
              f"{d['p99']:.0f} / {b['p99']:.0f} ({p99_ratio:.2f}×) | {steady} | {d['client_401']} | {d['max']:.0f} ms | "
              f"{d['non_200']} | {d['per_expiry']:.2f} | {d['reuse']} | {d['rs_401']} / {b['rs_401']} | "
              f"{'**' + '; '.join(problems) + '**' if problems else 'met'} |")
    return 1 if failed else 0


def plot(path, out):
    try:
        import matplotlib
    except ImportError:
        env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "matplotlib"], check=True, env=env)
        import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = {k: v for k, v in sorted(load(path).items()) if 0 in v}
    if not groups:
        print("no default-configuration run to plot", file=sys.stderr)
        return 1
    n = len(groups)
    cols = 2 if n > 1 else 1
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.4 * cols, 2.6 * rows), squeeze=False)
    for ax, ((as_kind, rs), cells) in zip(axes.flat, groups.items()):
        for i, run in enumerate(cells[0]):
            t = run.get("limit_trace") or []
            ax.step([x[0] for x in t], [x[1] for x in t], where="post", label="limit" if i == 0 else None)
            flights = [(x[0], x[2]) for x in t if len(x) > 2 and x[2] is not None]
            if flights and i == 0:
                ax.plot([x[0] for x in flights], [x[1] for x in flights], ".", markersize=3, alpha=0.6,
                        label="in flight")
        sweep = {m: cell(r) for m, r in cells.items() if m > 0}
        if sweep:
            best = max(sweep, key=lambda m: sweep[m]["rps"] or 0)
            ax.axhline(best, linestyle="--", color="gray", label=f"best maxInFlight ({best})")
        ax.set_title(f"{as_kind}, {rs}", fontsize=9)
        ax.set_xlabel("s since the load started", fontsize=8)
        ax.set_ylabel("requests", fontsize=8)
        ax.set_ylim(bottom=0)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7, loc="lower right")
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("verdict")
    v.add_argument("file")
    v.add_argument("--queue-timeout", type=float, default=10.0)
    v.add_argument("--per-expiry", type=float, default=2.25)
    p = sub.add_parser("plot")
    p.add_argument("file")
    p.add_argument("out")
    a = ap.parse_args(argv)
    if a.cmd == "verdict":
        return verdict(a.file, a.queue_timeout, a.per_expiry)
    return plot(a.file, a.out)


if __name__ == "__main__":
    sys.exit(main())
