#!/usr/bin/env bash
# Runs kiln-demo small (60 frames, 2000 entities, both memory layers) with a trace and a
# chart into a temporary folder and checks what it wrote: the trace is valid Chrome
# trace JSON with job, frame, counter and thread-name events; the chart is well-formed
# SVG with one frame-time polyline per run, the frame-memory one, the live-objects
# panel (pool objects, handle items) and the memory-by-tag panel (one per demo tag); the
# report prints the first and the worst frame, and the kiln run's memory by tag and
# memory split; the report's figures agree with each other (the demo checks them itself
# and exits non-zero, and this script checks them again from its demo-check lines: frame
# times, the history's allocations, live objects and tags against the game's counts, the
# heap's persistent data, the AI tag's budget reached, nothing left after teardown).
# Usage: tests/demo/check-demo.sh [BUILD_DIR] (default: build).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-build}
case "$build" in /*) ;; *) build="$root/$build" ;; esac
demo="$build/examples/kiln-demo"
[ -x "$demo" ] || { echo "check-demo: $demo is not built" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
frames=60

echo "== kiln-demo --help and a bad flag"
"$demo" --help | grep -q -- '--alloc' || { echo "check-demo: --help does not list --alloc" >&2; exit 1; }
if "$demo" --frames nope >/dev/null 2>&1; then echo "check-demo: a bad flag was accepted" >&2; exit 1; fi

echo "== kiln-demo --frames $frames --entities 2000 (kiln and malloc)"
(cd "$tmp" && "$demo" --frames "$frames" --entities 2000 --trace trace.json --svg chart.svg) \
    >"$tmp/report.txt" 2>&1 || { cat "$tmp/report.txt"; echo "check-demo: kiln-demo failed" >&2; exit 1; }
cat "$tmp/report.txt"

python3 - "$tmp" "$frames" <<'PY'
import json, sys, xml.etree.ElementTree as ET
tmp, frames = sys.argv[1], int(sys.argv[2])
problems = []
def expect(ok, what):
    if not ok: problems.append(what)

# The trace: Chrome trace-event JSON.
with open(f"{tmp}/trace.json") as f:
    trace = json.load(f)
events = trace["traceEvents"] if isinstance(trace, dict) else trace
ph = lambda p: [e for e in events if e.get("ph") == p]
jobs = [e for e in ph("X") if not str(e.get("name", "")).startswith("frame")] + ph("B")
expect(jobs, "no job events (X or B/E)")
expect(all("ts" in e and "tid" in e for e in jobs), "job events without ts or tid")
expect(all(e.get("dur", 0) >= 0 for e in ph("X")), "an X event with a negative duration")
names = {e.get("name") for e in jobs}
expect({"demo_think_range", "demo_present_job"} <= names,
       f"the demo's job functions are not named in the trace: {sorted(names)[:8]}")
begins = [e for e in events if e.get("name") == "frame begin"]
expect(len(begins) == frames, f"{len(begins)} 'frame begin' markers, expected {frames}")
expect(any(e.get("ph") in ("X", "i") and str(e.get("name", "")).startswith("frame") for e in events),
       "no frame events")
expect(ph("C"), "no counter events")
threads = [e for e in ph("M") if e.get("name") == "thread_name"]
expect(threads, "no thread_name metadata")
expect(any("main" in e.get("args", {}).get("name", "") for e in threads), "no thread named main")

# The chart: well-formed SVG, the frame-time panel with one polyline per run.
svg = ET.parse(f"{tmp}/chart.svg").getroot()
ns = "{http://www.w3.org/2000/svg}"
expect(svg.tag == ns + "svg", f"the chart's root is {svg.tag}")
panels = {g.get("id"): g for g in svg.iter(ns + "g")}
lines = lambda panel: list(panels[panel].iter(ns + "polyline")) if panel in panels else []
expect(len(lines("panel-1")) == 2, f"{len(lines('panel-1'))} frame-time polylines, expected 2")
expect(len(lines("panel-2")) == 1, f"{len(lines('panel-2'))} frame-memory polylines, expected 1")
expect(len(lines("panel-3")) == 2, f"{len(lines('panel-3'))} live-objects polylines, expected 2")
expect(len(lines("panel-4")) == 4, f"{len(lines('panel-4'))} memory-by-tag polylines, expected 4")
for line in lines("panel-1") + lines("panel-2") + lines("panel-3") + lines("panel-4"):
    expect(len(line.get("points", "").split()) >= frames // 2, "a polyline with too few points")
expect(any(t.text and "kiln" in t.text for t in svg.iter(ns + "text")), "no legend text")

# The report's table: the first and the worst frame, and the goal's line.
with open(f"{tmp}/report.txt") as f:
    report = f.read()
for label in ("first frame (ms)", "worst frame (ms), the first included", "worst frame's number",
              "kiln allocations per frame", "kiln objects live, last frame", "goal: kiln's worst frame",
              "memory by tag (kiln, last frame end)", "AI scratch", ": adds up"):
    expect(label in report, f"the report has no '{label}' line")

# The report's machine-readable lines.
runs = {}
with open(f"{tmp}/report.txt") as f:
    for line in f:
        if line.startswith("demo-check "):
            fields = dict(kv.split("=", 1) for kv in line.split()[1:])
            runs[fields["run"]] = fields
expect(set(runs) == {"kiln", "malloc", "compare"}, f"demo-check lines for {sorted(runs)}")
for name in ("kiln", "malloc"):
    r = runs.get(name)
    if not r: continue
    n = {k: int(v) for k, v in r.items() if v.isdigit()}
    expect(r["result"] == "ok", f"{name}: result={r['result']}")
    expect(n["frames"] == frames == n["frames_expected"] == n["history_frames"], f"{name}: frame counts")
    expect(n["jobs_submitted"] == n["jobs_run"] == n["history_jobs"] > 0, f"{name}: jobs run != submitted")
    expect(n["entity_allocs"] - n["entity_frees"] == n["entities"] == n["table_live"] == 2000,
           f"{name}: entity allocs - frees != live")
    expect(n["table_allocs"] == n["entity_allocs"] and n["table_frees"] == n["entity_frees"],
           f"{name}: the table's counts differ from the game's")
    # Exact on both sides (kiln's miss counter is an atomic add; the game's counts are
    # summed on the main thread): equal, however the threads raced.
    expect(n["stale_table"] == n["stale_game"],
           f"{name}: stale lookups differ: table {n['stale_table']}, game {n['stale_game']}")
    for kind in ("projectile", "particle"):
        expect(n[f"{kind}_allocs"] - n[f"{kind}_frees"] == n[f"{kind}_live"],
               f"{name}: {kind} allocs - frees != live")
        if name == "kiln":
            for what in ("allocs", "frees", "live"):
                expect(n[f"pool_{kind}_{what}"] == n[f"{kind}_{what}"], f"kiln: pool {kind} {what} differ")
    # Frame times: one run's figures against each other only (no timing threshold).
    expect(n["worst_frame_us"] >= n["first_frame_us"] and n["worst_frame_us"] >= n["median_frame_us"],
           f"{name}: the worst frame is faster than the first or the median")
    expect(1 <= n["worst_frame"] <= frames, f"{name}: worst_frame {n['worst_frame']}")
    # The history's last record against the game: kiln's pools and table hold its objects.
    on_kiln = name == "kiln"
    live = n["projectile_live"] + n["particle_live"]
    expect(n["history_pool_live"] == (live if on_kiln else 0), f"{name}: history_pool_live")
    expect(n["history_handles_live"] == (n["entities"] if on_kiln else 0), f"{name}: history_handles_live")
    made = n["entity_allocs"] + n["projectile_allocs"] + n["particle_allocs"]
    expect(not on_kiln or n["history_allocs"] >= made,
           f"{name}: history_allocs {n['history_allocs']} (the game made {made})")
    expect(n["scratch_failures"] == 0 and n["kiln_errors"] == 0 and n["api_errors"] == 0, f"{name}: errors")
    # Persistent data and memory by tag: kiln's memory adds up in both runs (frame memory
    # only in the malloc run's); the kiln run's heap holds exactly the game's data, its
    # tags hold memory, the AI tag's tight budget was reached, and the teardown leaves
    # nothing, in the heap or in any tag.
    expect(n["data_failures"] == 0 and n["data_allocs"] > n["data_frees"], f"{name}: persistent data")
    expect(n["memory_reserved"] == n["memory_parts"] > 0, f"{name}: kiln's memory does not add up")
    tag_live = sum(n.get(f"tag_{t}_live", 0) for t in ("entities", "projectiles", "particles", "ai"))
    expect(n["history_tag_bytes"] == tag_live, f"{name}: history_tag_bytes {n['history_tag_bytes']} != {tag_live}")
    if on_kiln:
        expect(n["heap_live"] == n["data_allocs"] - n["data_frees"], "kiln: heap_live != the game's data")
        expect(n["heap_live_after"] == 0 and n["tags_live_after"] == 0, "kiln: memory left after teardown")
        expect(all(n[f"tag_{t}_live"] > 0 for t in ("entities", "projectiles", "particles", "ai")),
               "kiln: a tag holds nothing")
        expect(n["tag_ai_budget_reached"] == 1 and n["tag_ai_budget_warnings"] >= 1
               and n["tag_ai_peak"] > n["tag_ai_budget"], "kiln: the AI tag's budget was not reached")
if "compare" in runs:
    expect(runs["compare"]["result"] == "ok", "the kiln and malloc runs played different games")
    c = runs["compare"]
    expect(c.get("checksum_kiln") == runs.get("kiln", {}).get("checksum") == c.get("checksum_malloc"),
           "checksums differ")

if problems:
    print("check-demo: FAILED:\n  " + "\n  ".join(problems))
    sys.exit(1)
print(f"check-demo: ok ({len(events)} trace events, {len(jobs)} jobs, {len(threads)} thread names)")
PY
