// The little of iptables the shim needs: read a table with iptables-save, write with
// iptables-restore --noflush (only the chains named in the input change, atomically per
// table), and keep jump rules from the built-in chains to ours present exactly once.
import type { CommandRunner } from './runner';

export type IpFamily = 4 | 6;
export type Table = 'nat' | 'filter';

function iptablesCommand(family: IpFamily): string {
  return family === 4 ? 'iptables' : 'ip6tables';
}

/** One table as iptables-save prints it. */
export interface SavedTable {
  /** Every chain, built-in and user-defined, in the order printed. */
  chains: string[];
  /** The rule lines (`-A CHAIN ...`), exactly as printed; valid iptables-restore input. */
  rules: string[];
}

/** The tables in iptables-save output; a table it did not print is absent. */
export function parseSave(text: string): Map<Table | string, SavedTable> {
  const tables = new Map<string, SavedTable>();
  let current: SavedTable | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    if (line.startsWith('*')) {
      current = { chains: [], rules: [] };
      tables.set(line.slice(1), current);
    } else if (line === 'COMMIT') {
      current = undefined;
    } else if (current && line.startsWith(':')) {
      const name = line.slice(1).split(' ')[0];
      if (name) current.chains.push(name);
    } else if (current && line.startsWith('-A ')) {
      current.rules.push(line);
    }
  }
  return tables;
}

/** The chain a `-A CHAIN ...` line appends to. */
export function ruleChain(line: string): string {
  // Sliced rather than split: this runs on every line of a table with thousands of rules.
  const end = line.indexOf(' ', 3);
  return line.startsWith('-A ') ? line.slice(3, end < 0 ? undefined : end) : (line.split(' ')[1] ?? '');
}

/** The chain a rule line jumps or goes to (`-j X` / `-g X`), if any. */
export function ruleTarget(line: string): string | undefined {
  const m = / -[jg] (\S+)/.exec(line);
  return m?.[1];
}

/** A rule in a built-in chain that sends packets into one of our chains. */
export interface JumpRule {
  table: Table;
  from: string;
  to: string;
  /** Matches before `-j`, in iptables syntax; strings with spaces in double quotes. */
  matches: string;
}

function jumpLine(op: '-A' | '-I' | '-D', jump: JumpRule): string {
  return `${op} ${jump.from}${jump.matches ? ` ${jump.matches}` : ''} -j ${jump.to}`;
}

/**
 * Restore lines that leave each jump present exactly once: added when the table has none,
 * extra copies deleted. Any rule in `from` jumping to `to` counts, whatever its matches, so
 * changing a jump's matches needs a removal first (removeJumpLines).
 */
export function ensureJumpLines(saved: SavedTable | undefined, jumps: readonly JumpRule[], insert: boolean): string[] {
  const lines: string[] = [];
  for (const jump of jumps) {
    const present = (saved?.rules ?? []).filter((r) => ruleChain(r) === jump.from && ruleTarget(r) === jump.to);
    if (present.length === 0) lines.push(jumpLine(insert ? '-I' : '-A', jump));
    for (const extra of present.slice(1)) lines.push(extra.replace(/^-A /, '-D '));
  }
  return lines;
}

/** Restore lines deleting every rule of the saved table whose target is one of `targets`, outside those chains. */
export function removeJumpLines(saved: SavedTable | undefined, targets: ReadonlySet<string>): string[] {
  return (saved?.rules ?? [])
    .filter((r) => !targets.has(ruleChain(r)) && targets.has(ruleTarget(r) ?? ''))
    .map((r) => r.replace(/^-A /, '-D '));
}

/**
 * Restore input that deletes the chains `isOurs` picks from a table, after flushing them and
 * deleting every rule elsewhere that jumps to them; '' when the table has none.
 */
export function renderChainRemoval(table: Table, existing: SavedTable | undefined, isOurs: (chain: string) => boolean): string {
  const ours = (existing?.chains ?? []).filter(isOurs);
  if (ours.length === 0) return '';
  const lines = [
    `*${table}`,
    ...ours.map((c) => `:${c} - [0:0]`),
    ...removeJumpLines(existing, new Set(ours)),
    ...ours.map((c) => `-X ${c}`),
    'COMMIT',
  ];
  return `${lines.join('\n')}\n`;
}

/** `iptables-save -t <table>`, parsed; undefined when the table is not printed. */
export async function saveTable(runner: CommandRunner, family: IpFamily, table: Table): Promise<SavedTable | undefined> {
  const text = await runner.run(`${iptablesCommand(family)}-save`, ['-t', table]);
  return parseSave(text).get(table);
}

/**
 * Applies restore input without flushing the tables: chains declared in it are created or
 * flushed, chains not named keep their rules. `-w` waits for the xtables lock that Docker and
 * kube-proxy also take.
 */
export async function restore(runner: CommandRunner, family: IpFamily, input: string): Promise<void> {
  await runner.run(`${iptablesCommand(family)}-restore`, ['--noflush', '-w', '5'], input);
}
