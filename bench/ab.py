#!/usr/bin/env python3
"""bench/ab.py — one benchmark program of two builds, run alternately, medians side by side.

A change's effect on a noisy machine: a single run of each build compares two moments of
the machine as much as two builds, so the programs of BEFORE and AFTER (two build
folders, e.g. `git worktree add` of the old commit, configured as in README.md) take turns,
N times each, and every implementation's median (the programs' own median column) is
printed for both, with each run's figure.

Usage: ab.py BEFORE_BUILD AFTER_BUILD N PROGRAM [ARGS...]
  e.g. ab.py ../old/build-rel build-rel 5 handles_bench --only pair
Exit status 1 when a run fails.
"""
import re
import statistics
import subprocess
import sys

ROW = re.compile(r'^(\S.*?)\s{2,}([0-9.]+)\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+(?:base|[0-9.]+x)')


def tables(output):
    """{table title: {implementation: median}} of one run's output."""
    found, title = {}, None
    for line in output.splitlines():
        if line.startswith('== '):
            title = line.strip('= ').strip()
            found[title] = {}
        elif title is not None and (m := ROW.match(line)):
            found[title][m.group(1)] = float(m.group(2))
    return found


def main(argv):
    if len(argv) < 5 or not argv[3].isdigit():
        print(__doc__.split('\n\n')[2], file=sys.stderr)
        return 2
    builds, runs, program, args = argv[1:3], int(argv[3]), argv[4], argv[5:]
    figures = {}   # (table, implementation) -> ([before...], [after...])
    for _ in range(runs):
        for side, build in enumerate(builds):
            done = subprocess.run([f'{build}/bench/{program}', *args], capture_output=True, text=True)
            if done.returncode != 0:
                print(f'ab: {build}/bench/{program} failed:\n{done.stderr}', file=sys.stderr)
                return 1
            for title, rows in tables(done.stdout).items():
                for impl, value in rows.items():
                    figures.setdefault((title, impl), ([], []))[side].append(value)
    for title in dict.fromkeys(t for t, _ in figures):
        print(f'== {title} (medians of {runs} alternating runs: before, after)')
        for (t, impl), sides in figures.items():
            if t != title:
                continue
            med = [f'{statistics.median(v):8.2f}' if v else '       -' for v in sides]
            each = ' | '.join(' '.join(f'{x:.2f}' for x in v) for v in sides)
            print(f'  {impl:<34} {med[0]} {med[1]}   ({each})')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
