#!/usr/bin/env python3
"""scripts/check-layers.py — kiln's layering, checked: which folder may include which,
and no file-level circle, in the includes and (given the library's objects) in the calls.

Layers, lowest first: base < alloc, jobs < runtime < include/kiln.
  - A file may include (quoted, resolved from its own folder, then the root, then
    include/) files of its own layer or of a lower one; alloc and jobs never include
    each other. An include that resolves to no file of the tree, or to one outside
    these folders, fails too.
  - The public headers (include/kiln/) are the vocabulary every layer shares: any file
    may include them (<kiln/x.h>), and they include only each other.

Circles: a node is a path without its extension (x.c and x.h are one node); there is an
edge x -> y when x.c or x.h includes y.h, and (with --objects) when x's object refers to
a symbol y's object defines (nm). Any circle of nodes fails, except a pair documented as
one unit by design: a comment in a file of EACH of the two nodes naming the other,

    /* layering: one unit with runtime/trace_write.c — <why they are one> */

(the path from the root; the extension does not matter). The edges between the two
nodes of a documented pair are left out of the circle search; a circle through a third
node still fails. A marker that names no file, or that the other node does not return,
fails; so does a documented pair that is no circle, neither its includes nor its calls
going both ways (without --objects the calls are unknown, so that is only a note).

Usage: check-layers.py [--root DIR] [--objects PATH] [--nm NM]
  --root DIR      the tree to check (default: the repository this script is in)
  --objects PATH  also check the call graph: a folder of the library's .o files
                  (meson: BUILD/libkiln.so.<version>.p) or its static archive
                  (BUILD/libkiln.a); objects are named as meson names them (the
                  source path with '/' as '_', then .o)
  --nm NM         the nm to run (default: $NM, else nm)
Prints what it checked and every violation; exit status 1 when there is one, 2 on a
usage error or a failed nm.
"""
import argparse
import os
import re
import signal
import subprocess
import sys

LAYERS = {'base': 0, 'alloc': 1, 'jobs': 1, 'runtime': 2, 'include': 3}
FOLDERS = ['base', 'alloc', 'jobs', 'runtime', os.path.join('include', 'kiln')]
SOURCE_EXTENSIONS = ('.c', '.h')
MARKER = re.compile(r'layering:\s*one unit with\s+([A-Za-z0-9_./-]+?)[.,;:]?(?=\s|\*/|$)')
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]', re.MULTILINE)


def strip_comments(text):
    """The text with its comments blanked (newlines kept, so line numbers hold)."""
    def blank(match):
        s = match.group(0)
        if s.startswith('/'):
            return re.sub(r'[^\n]', ' ', s)
        return s
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                  blank, text, flags=re.DOTALL)


def node_of(path):
    return os.path.splitext(path)[0]


def layer_of(path):
    return path.split('/', 1)[0]


class Tree:
    """The files of the layers under root, their includes and their pair markers."""

    def __init__(self, root):
        self.root = root
        self.files = []          # paths relative to root, '/'-separated
        for folder in FOLDERS:
            top = os.path.join(root, folder)
            for dirpath, dirnames, filenames in os.walk(top):
                dirnames.sort()
                for name in sorted(filenames):
                    if name.endswith(SOURCE_EXTENSIONS):
                        rel = os.path.relpath(os.path.join(dirpath, name), root)
                        self.files.append(rel.replace(os.sep, '/'))
        self.file_set = set(self.files)
        self.nodes = sorted({node_of(f) for f in self.files})
        self.includes = []       # (file, line, spelling, target or None)
        self.markers = {}        # node -> {named node: 'file:line'}
        self.marker_problems = []
        for f in self.files:
            with open(os.path.join(root, f), encoding='utf-8', errors='replace') as fh:
                text = fh.read()
            self._read_includes(f, text)
            self._read_markers(f, text)

    def _resolve(self, source, spelling, quoted):
        if not quoted:
            # <kiln/x.h> is a public header of the tree; any other <...> is the system's.
            candidate = 'include/' + spelling
            return candidate if spelling.startswith('kiln/') and candidate in self.file_set else None
        here = os.path.dirname(source)
        for base in (here, '', 'include'):
            candidate = os.path.normpath(os.path.join(base, spelling)).replace(os.sep, '/')
            if os.path.isfile(os.path.join(self.root, candidate)):
                return candidate
        return ''   # quoted, but no such file

    def _read_includes(self, f, text):
        code = strip_comments(text)
        for m in INCLUDE.finditer(code):
            line = code.count('\n', 0, m.start()) + 1
            quoted = m.group(1) == '"'
            spelling = m.group(2)
            target = self._resolve(f, spelling, quoted)
            if target is None:
                continue   # a system header
            shown = '"%s"' % spelling if quoted else '<%s>' % spelling
            self.includes.append((f, line, shown, target))

    def _read_markers(self, f, text):
        for m in MARKER.finditer(text):
            line = text.count('\n', 0, m.start()) + 1
            named = node_of(m.group(1).lstrip('./'))
            where = '%s:%d' % (f, line)
            if named not in self.nodes:
                self.marker_problems.append(
                    '%s: the layering marker names %s, which is no file of the tree'
                    % (where, m.group(1)))
                continue
            if named == node_of(f):
                self.marker_problems.append('%s: the layering marker names its own file' % where)
                continue
            self.markers.setdefault(node_of(f), {})[named] = where


def layer_violations(tree):
    out = []
    for f, line, shown, target in tree.includes:
        where = '%s:%d: includes %s' % (f, line, shown)
        if target == '':
            out.append('%s, which is no file of the tree' % where)
            continue
        if target not in tree.file_set:
            out.append('%s -> %s, which is outside the layers (%s)'
                       % (where, target, ', '.join(FOLDERS)))
            continue
        src, dst = layer_of(f), layer_of(target)
        if src == dst:
            continue
        if src == 'include':
            out.append('%s -> %s: a public header includes only public headers' % (where, target))
        elif dst == 'include':
            continue   # the public vocabulary
        elif {src, dst} == {'alloc', 'jobs'}:
            out.append('%s -> %s: alloc and jobs never include each other' % (where, target))
        elif LAYERS[dst] > LAYERS[src]:
            out.append('%s -> %s: %s is below %s (base < alloc, jobs < runtime < include)'
                       % (where, target, src, dst))
    return out


def documented_pairs(tree):
    """Pairs both of whose nodes name each other; and the one-sided markers."""
    pairs, problems = {}, []
    for node, named in sorted(tree.markers.items()):
        for other, where in sorted(named.items()):
            back = tree.markers.get(other, {}).get(node)
            if back:
                pairs[frozenset((node, other))] = (where, back) if node < other else (back, where)
            else:
                problems.append('%s: declares %s one unit with %s, but no file of %s declares '
                                'it back' % (where, node, other, other))
    return pairs, problems


def circles(nodes, edges, pairs):
    """Strongly connected components of more than one node, the edges inside documented
    pairs left out. edges: {(x, y): [evidence, ...]}."""
    graph = {n: [] for n in nodes}
    for (x, y) in sorted(edges):
        if frozenset((x, y)) in pairs:
            continue
        graph.setdefault(x, []).append(y)
        graph.setdefault(y, [])
    index, low, on_stack, stack, result = {}, {}, set(), [], []
    counter = [0]

    def visit(root):
        # Iterative Tarjan (the runtime graph is small, but recursion limits are not).
        work = [(root, 0)]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, i = work.pop()
            if i < len(graph[v]):
                work.append((v, i + 1))
                w = graph[v][i]
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    result.append(sorted(component))

    for n in sorted(graph):
        if n not in index:
            visit(n)
    return sorted(result)


def report_circles(kind, found, edges, pairs):
    """Prints each circle: its nodes, then every edge between them with its evidence."""
    print('  %s circles: %d' % (kind, len(found)))
    for component in found:
        members = set(component)
        print('    CIRCLE (%s) of %d files: %s' % (kind, len(component), ', '.join(component)))
        for (x, y) in sorted(edges):
            if x in members and y in members and frozenset((x, y)) not in pairs:
                ev = edges[(x, y)]
                shown = ', '.join(ev[:3]) + (' and %d more' % (len(ev) - 3) if len(ev) > 3 else '')
                print('      %s -> %s: %s' % (x, y, shown))


def include_edges(tree):
    edges = {}
    for f, line, shown, target in tree.includes:
        if not target or target not in tree.file_set:
            continue
        x, y = node_of(f), node_of(target)
        if x != y:
            edges.setdefault((x, y), []).append('%s:%d %s' % (f, line, shown))
    return edges


def nm_listing(path, nm):
    """{object name: [(symbol, type)]} from nm -P of a folder of objects or an archive."""
    objects = {}
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path) if n.endswith('.o'))
        if not names:
            sys.exit('check-layers: no .o files in %s' % path)
        for name in names:
            out = run_nm(nm, [os.path.join(path, name)])
            objects[name] = parse_nm(out.splitlines())
        return objects
    out = run_nm(nm, ['-A', path])
    member = re.compile(r'^.*\[([^\]]+)\]: (.*)$')
    for text in out.splitlines():
        m = member.match(text)
        if m:
            objects.setdefault(m.group(1), []).extend(parse_nm([m.group(2)]))
    if not objects:
        sys.exit('check-layers: %s is neither a folder of objects nor an archive nm can read'
                 % path)
    return objects


def run_nm(nm, args):
    try:
        return subprocess.run([nm, '-P'] + args, check=True, capture_output=True,
                              text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print('check-layers: %s -P %s failed: %s' % (nm, ' '.join(args), e), file=sys.stderr)
        sys.exit(2)


def parse_nm(lines):
    symbols = []
    for text in lines:
        fields = text.split()
        if len(fields) >= 2 and len(fields[1]) == 1:
            symbols.append((fields[0], fields[1]))
    return symbols


def call_edges(tree, objects):
    """Edges between the objects' nodes: x refers to a global symbol y defines."""
    by_object_name = {f.replace('/', '_') + '.o': node_of(f) for f in tree.files if f.endswith('.c')}
    node = {name: by_object_name.get(name, name) for name in objects}
    unknown = sorted(name for name in objects if name not in by_object_name)
    definers = {}
    for name, symbols in objects.items():
        for sym, kind in symbols:
            if kind.isupper() and kind != 'U':
                definers.setdefault(sym, set()).add(name)
    edges, references = {}, 0
    for name, symbols in sorted(objects.items()):
        for sym, kind in symbols:
            if kind not in ('U', 'w'):
                continue
            for other in sorted(definers.get(sym, ())):
                x, y = node[name], node[other]
                if x != y:
                    references += 1
                    edges.setdefault((x, y), []).append(sym)
    defined = sum(len(v) for v in definers.values())
    return edges, references, defined, sorted(set(node.values())), unknown


def main():
    default_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description='Checks kiln\'s layering: includes across '
                                     'layers and file-level circles.')
    parser.add_argument('--root', default=default_root)
    parser.add_argument('--objects')
    parser.add_argument('--nm', default=os.environ.get('NM', 'nm'))
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    if not any(os.path.isdir(os.path.join(root, f)) for f in FOLDERS):
        parser.error('%s holds none of %s' % (root, ', '.join(FOLDERS)))

    tree = Tree(root)
    violations = list(tree.marker_problems)
    layering = layer_violations(tree)
    pairs, one_sided = documented_pairs(tree)
    violations += one_sided

    inc_edges = include_edges(tree)
    quoted = sum(1 for i in tree.includes if i[2].startswith('"'))
    print('check-layers: %s' % root)
    print('  includes: %d files (%d nodes), %d includes of the tree (%d quoted, %d <kiln/...>),'
          ' %d edges between nodes' % (len(tree.files), len(tree.nodes), len(tree.includes),
                                       quoted, len(tree.includes) - quoted, len(inc_edges)))
    print('  layer rule: %d violations' % len(layering))
    for v in layering:
        print('    LAYER %s' % v)
    print('  documented pairs: %d%s' % (len(pairs), ''.join(
        '\n    %s + %s (%s, %s)' % (tuple(sorted(p)) + pairs[p]) for p in sorted(pairs, key=sorted))))

    inc_circles = circles(tree.nodes, inc_edges, pairs)
    report_circles('include', inc_circles, inc_edges, pairs)

    graphs = [inc_edges]
    call_circles = []
    if args.objects:
        objects = nm_listing(args.objects, args.nm)
        edges, references, defined, nodes, unknown = call_edges(tree, objects)
        graphs.append(edges)
        print('  calls: %d objects from %s, %d global symbols defined, %d references between '
              'objects, %d edges between nodes' % (len(objects), args.objects, defined,
                                                   references, len(edges)))
        if unknown:
            print('    (objects with no source in the tree, named as they are: %s)'
                  % ', '.join(unknown))
        call_circles = circles(nodes, edges, pairs)
        report_circles('call', call_circles, edges, pairs)

    for pair in sorted(pairs, key=sorted):
        x, y = sorted(pair)
        if not any((x, y) in g and (y, x) in g for g in graphs):
            unit = '%s + %s are documented as one unit (%s, %s)' % ((x, y) + pairs[pair])
            if args.objects:
                violations.append('%s, but neither their includes nor their calls go both '
                                  'ways: drop the markers' % unit)
            else:
                print('  note: %s, but their includes do not go both ways: if their calls do '
                      'not either (--objects checks them), drop the markers' % unit)

    print('  pair markers: %d problems' % len(violations))
    for v in violations:
        print('    MARKER %s' % v)
    total = len(layering) + len(inc_circles) + len(call_circles) + len(violations)
    if total:
        print('check-layers: FAILED: %d layer violations, %d include circles, %d call circles, '
              '%d marker problems' % (len(layering), len(inc_circles), len(call_circles),
                                      len(violations)))
        return 1
    print('check-layers: ok')
    return 0


if __name__ == '__main__':
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # `| head` ends the output quietly
    sys.exit(main())
