// The shape of src/ as the architecture promises it: no two folders import each other (directly
// or round a longer loop), the feature folders and the translation never import the handler tree,
// and the two directions of translation stand apart. Read from the sources themselves, so a
// change that bends the shape fails here.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const SRC = path.resolve(__dirname, '../../../src');
const BENCH = path.resolve(__dirname, '../../../bench');
/** Folders that hold machinery the handlers use; none of them may import src/shim. */
const FEATURE_FOLDERS = ['stats', 'pod-metrics', 'streaming', 'logs', 'container-events', 'credentials', 'network', 'docker-cache', 'translate/to-cri', 'translate/to-docker', 'checkpoint', 'conventions', 'telemetry', 'pause', 'storage'];
/** The two directions of translation, each a node of its own (CRI→Docker and Docker→CRI). */
const TRANSLATE = ['translate/to-docker', 'translate/to-cri'];

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'generated' ? [] : sources(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

/** The node a file belongs to: its top folder under src/ (src/translate's two subfolders each),
 * or the file itself at the top. */
function nodeOf(file: string): string {
  const rel = path.relative(SRC, file).split(path.sep);
  if (rel[0] === 'translate' && rel.length > 2) return `${rel[0]}/${rel[1]}`;
  return rel.length > 1 ? rel[0]! : rel[0]!.replace(/\.ts$/, '');
}

/** Who imports whom among `root`'s sources, as nodes (`nodeOf`), with one import that says so. */
function importGraph(root: string, nodeOf: (file: string) => string): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const file of sources(root)) {
    const from = nodeOf(file);
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
      const target = path.resolve(path.dirname(file), m[1]!);
      if (!target.startsWith(root) || path.relative(root, target).startsWith('generated')) continue;
      const to = nodeOf(target.endsWith('.ts') ? target : `${target}.ts`);
      if (to === from) continue;
      if (!graph.has(from)) graph.set(from, new Map());
      graph.get(from)!.set(to, `${path.relative(root, file)} imports ${m[1]}`);
    }
  }
  return graph;
}

const folderGraph = (): Map<string, Map<string, string>> => importGraph(SRC, nodeOf);

/** A loop of nodes, if the graph has one. */
function findCycle(graph: Map<string, Map<string, string>>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): string[] | undefined => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node)?.keys() ?? []) {
      if (state.get(next) === 'open') return [...stack.slice(stack.indexOf(next)), next];
      if (!state.has(next)) {
        const found = visit(next);
        if (found) return found;
      }
    }
    stack.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of graph.keys()) {
    if (!state.has(node)) {
      const found = visit(node);
      if (found) return found;
    }
  }
  return undefined;
}

describe('the import graph of src/', () => {
  const graph = folderGraph();

  it('has no loop between folders', () => {
    const cycle = findCycle(graph);
    const why = cycle?.slice(1).map((to, i) => graph.get(cycle[i]!)!.get(to)).join('; ');
    assert.equal(cycle, undefined, `import loop ${cycle?.join(' -> ')}: ${why}`);
  });

  it('keeps the feature folders out of the handler tree', () => {
    for (const folder of FEATURE_FOLDERS) {
      assert.ok(fs.existsSync(path.join(SRC, folder)), `src/${folder} exists`);
      const bad = graph.get(folder)?.get('shim');
      assert.equal(bad, undefined, `src/${folder} must not import src/shim: ${bad}`);
    }
  });

  it('keeps translation to Docker and translation to CRI apart: neither needs the other', () => {
    for (const [from, to] of [TRANSLATE, [...TRANSLATE].reverse()] as Array<[string, string]>) {
      const bad = graph.get(from)?.get(to);
      assert.equal(bad, undefined, `src/${from} must not import src/${to}: ${bad}`);
    }
    assert.deepEqual(fs.readdirSync(path.join(SRC, 'translate')).sort(), ['to-cri', 'to-docker'], 'src/translate holds the two directions only');
  });

  it('keeps the network plugins apart: cni and kubenet share libcni and never import each other', () => {
    const plugins = ['cni', 'kubenet', 'hostport'];
    const importsOf = (folder: string): Array<{ file: string; to: string }> =>
      sources(path.join(SRC, 'network', folder)).flatMap((file) =>
        [...fs.readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => ({
          file: path.relative(SRC, file),
          to: path.relative(path.join(SRC, 'network'), path.resolve(path.dirname(file), m[1]!)).split(path.sep)[0]!,
        })),
      );
    for (const from of ['cni', 'kubenet']) {
      const crossing = importsOf(from).filter((i) => i.to !== from && plugins.includes(i.to) && !(from === 'kubenet' && i.to === 'hostport'));
      assert.deepEqual(crossing, [], `src/network/${from} imports another plugin`);
    }
    const fromLib = importsOf('libcni').filter((i) => plugins.includes(i.to));
    assert.deepEqual(fromLib, [], 'src/network/libcni imports a plugin');
    assert.ok(importsOf('kubenet').some((i) => i.to === 'libcni') && importsOf('cni').some((i) => i.to === 'libcni'), 'both plugins use libcni');
  });

  it('keeps the stats and the metrics apart: both read cgroups through src/cgroups, neither imports the other', () => {
    for (const [from, to] of [['pod-metrics', 'stats'], ['stats', 'pod-metrics']] as const) {
      const bad = graph.get(from)?.get(to);
      assert.equal(bad, undefined, `src/${from} must not import src/${to}: ${bad}`);
    }
    assert.ok(graph.get('stats')?.has('cgroups') && graph.get('pod-metrics')?.has('cgroups'), 'both use src/cgroups');
  });

  it('sees the imports it checks (the handler tree uses the features and both translations)', () => {
    for (const folder of ['stats', 'streaming', 'logs', 'conventions', ...TRANSLATE]) {
      assert.ok(graph.get('shim')?.has(folder), `src/shim imports src/${folder}`);
    }
  });
});

describe('the import graph of bench/', () => {
  it('has no loop between its files', () => {
    const graph = importGraph(BENCH, (file) => path.relative(BENCH, file));
    assert.ok(graph.size > 5, 'sees the bench\'s imports');
    const cycle = findCycle(graph);
    assert.equal(cycle, undefined, `import loop ${cycle?.join(' -> ')}`);
  });
});
