// The shape of src/ as the architecture promises it: no two files and no two folders import each
// other (directly or round a longer loop; type-only imports and require() count), every folder sits in one of
// the layers of docs/architecture.md and imports only its own layer and those below, the feature
// folders and the translation never import the handler tree, and the two directions of
// translation stand apart. Read from the sources themselves, so a change that bends the shape
// fails here.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const SRC = path.resolve(__dirname, '../../../src');
const BENCH = path.resolve(__dirname, '../../../bench');
/** Folders that hold machinery the handlers use; none of them may import src/shim. */
const FEATURE_FOLDERS = ['stats', 'pod-metrics', 'streaming', 'logs', 'container-events', 'credentials', 'network', 'docker-cache', 'object-store', 'translate/to-cri', 'translate/to-docker', 'checkpoint', 'conventions', 'telemetry', 'pause', 'storage', 'status'];
/** The two directions of translation, each a node of its own (CRI→Docker and Docker→CRI). */
const TRANSLATE = ['translate/to-docker', 'translate/to-cri'];

/**
 * The layers of docs/architecture.md, top to bottom, each a set of nodes (`nodeOf`): a node
 * imports its own layer and those below, never one above. The store of the shim's objects sits
 * above the state cache it reads, and both above the Docker client, which knows neither.
 */
const LAYERS: ReadonlyArray<readonly string[]> = [
  ['app', 'cli', 'main', 'launcher'],
  ['shim'],
  ['translate/to-docker', 'translate/to-cri', 'container-events', 'stats', 'status'],
  ['pod-metrics', 'storage', 'streaming', 'logs', 'network', 'credentials', 'checkpoint', 'telemetry', 'pause', 'tools'],
  ['object-store'],
  ['docker-cache'],
  ['docker', 'cgroups', 'kernel', 'config', 'grpc'],
  ['conventions', 'util', 'errors', 'cri'],
];

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

/** Every relative import among `root`'s sources (type-only ones too): the importing file, the imported file, the import as written. */
function importsOf(root: string): Array<{ file: string; target: string; spec: string }> {
  const out: Array<{ file: string; target: string; spec: string }> = [];
  for (const file of sources(root)) {
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:from|import|require)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
      const target = path.resolve(path.dirname(file), m[1]!);
      if (!target.startsWith(root) || path.relative(root, target).startsWith('generated')) continue;
      out.push({ file, target: target.endsWith('.ts') ? target : `${target}.ts`, spec: m[1]! });
    }
  }
  return out;
}

/** Who imports whom among `root`'s sources, as nodes (`nodeOf`), with one import that says so. */
function importGraph(root: string, nodeOf: (file: string) => string): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const { file, target, spec } of importsOf(root)) {
    const from = nodeOf(file);
    const to = nodeOf(target);
    if (to === from) continue;
    if (!graph.has(from)) graph.set(from, new Map());
    graph.get(from)!.set(to, `${path.relative(root, file)} imports ${spec}`);
  }
  return graph;
}

const folderGraph = (): Map<string, Map<string, string>> => importGraph(SRC, nodeOf);
const fileGraph = (): Map<string, Map<string, string>> => importGraph(SRC, (file) => path.relative(SRC, file));

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

  it('has no loop between files, type-only imports included', () => {
    const files = fileGraph();
    assert.ok(files.get(path.join('docker', 'engine-api-client.ts'))?.has(path.join('docker', 'client.ts')), 'sees the imports within a folder');
    const cycle = findCycle(files);
    assert.equal(cycle, undefined, `import loop ${cycle?.join(' -> ')}`);
  });

  it('puts every folder in one layer, and each imports only its own layer and those below', () => {
    const layerOf = new Map(LAYERS.flatMap((nodes, i) => nodes.map((n) => [n, i] as const)));
    const nodes = new Set(sources(SRC).map(nodeOf));
    assert.deepEqual([...nodes].filter((n) => !layerOf.has(n)).sort(), [], 'every folder and top-level file has its layer');
    assert.equal(LAYERS.flat().length, layerOf.size, 'in one layer only');
    assert.ok(layerOf.get('object-store')! < layerOf.get('docker-cache')! && layerOf.get('docker-cache')! < layerOf.get('docker')!, 'the store above the cache above the client');
    const upward = importsOf(SRC)
      .filter(({ file, target }) => layerOf.get(nodeOf(target))! < layerOf.get(nodeOf(file))!)
      .map(({ file, spec }) => `${path.relative(SRC, file)} imports ${spec}`);
    assert.deepEqual([...new Set(upward)].sort(), []);
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
    const NETWORK = path.join(SRC, 'network');
    const all = importsOf(SRC);
    const networkImports = (folder: string): Array<{ file: string; to: string }> =>
      all
        .filter((i) => i.file.startsWith(path.join(NETWORK, folder) + path.sep))
        .map((i) => ({ file: path.relative(SRC, i.file), to: path.relative(NETWORK, i.target).split(path.sep)[0]! }));
    for (const from of ['cni', 'kubenet']) {
      const crossing = networkImports(from).filter((i) => i.to !== from && plugins.includes(i.to) && !(from === 'kubenet' && i.to === 'hostport'));
      assert.deepEqual(crossing, [], `src/network/${from} imports another plugin`);
    }
    const fromLib = networkImports('libcni').filter((i) => plugins.includes(i.to));
    assert.deepEqual(fromLib, [], 'src/network/libcni imports a plugin');
    assert.ok(networkImports('kubenet').some((i) => i.to === 'libcni') && networkImports('cni').some((i) => i.to === 'libcni'), 'both plugins use libcni');
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
