// Summarises a V8 CPU profile (the .cpuprofile JSON `node --cpu-prof` writes): self time per
// function and per module, the biggest first. Pure: the caller reads the file.

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface SelfTime {
  name: string;
  ms: number;
  /** Share of all sampled time, 0..1. */
  share: number;
}

export interface ProfileSummary {
  totalMs: number;
  /** Time in V8's "(idle)" node: the event loop waiting. */
  idleMs: number;
  functions: SelfTime[];
  modules: SelfTime[];
}

/**
 * Where a script URL belongs: a package under node_modules, node's own (node:...), the
 * project's file relative to dist/, or V8's pseudo-frames such as "(garbage collector)".
 */
export function moduleOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return url;
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const dist = url.lastIndexOf('/dist/');
  return dist >= 0 ? url.slice(dist + '/dist/'.length) : url.replace(/^file:\/\//, '');
}

function ranked(map: Map<string, number>, totalMs: number, top: number): SelfTime[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, us]) => ({ name, ms: Math.round(us / 100) / 10, share: totalMs > 0 ? Math.round((us / 1000 / totalMs) * 1000) / 1000 : 0 }));
}

/** Self time per function ("name module:line") and per module, the `top` of each; idle left out. */
export function summarizeProfile(profile: CpuProfile, top = 15): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const functions = new Map<string, number>();
  const modules = new Map<string, number>();
  let idleUs = 0;
  let busyUs = 0;
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)?.callFrame;
    if (!frame) continue;
    if (frame.functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    busyUs += us;
    const mod = moduleOf(frame.url, frame.functionName);
    const fn = `${frame.functionName || '(anonymous)'} ${mod}${frame.url ? `:${frame.lineNumber + 1}` : ''}`;
    functions.set(fn, (functions.get(fn) ?? 0) + us);
    modules.set(mod, (modules.get(mod) ?? 0) + us);
  }
  const totalMs = Math.round(busyUs / 100) / 10;
  return { totalMs, idleMs: Math.round(idleUs / 100) / 10, functions: ranked(functions, totalMs, top), modules: ranked(modules, totalMs, top) };
}

/** The summary as text lines, for a terminal or a file beside the results. */
export function renderProfileSummary(s: ProfileSummary): string {
  const pct = (x: number): string => `${(x * 100).toFixed(1).padStart(5)} %`;
  const lines = [`sampled busy time ${s.totalMs} ms (idle ${s.idleMs} ms)`, '', 'self time by module:'];
  for (const m of s.modules) lines.push(`  ${pct(m.share)} ${String(m.ms).padStart(8)} ms  ${m.name}`);
  lines.push('', 'self time by function:');
  for (const f of s.functions) lines.push(`  ${pct(f.share)} ${String(f.ms).padStart(8)} ms  ${f.name}`);
  return lines.join('\n');
}
