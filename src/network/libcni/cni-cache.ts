// Results of ADD kept on disk as libcni keeps them (<cache dir>/results/<network>-<container>-
// <ifname>), so a restarted shim still knows a pod's IPs and can run DEL with the same config
// and runtime arguments ADD had (portmap needs them to find its rules). An entry is written
// before ADD runs, too: a shim killed in the middle still leaves what DEL needs.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isFullId } from '../../conventions/ids';
import { readTextNoFollow } from '../../util/read-no-follow';
import type { CapabilityArgs } from './args';
import { parseResult, type CniResult } from './result';

export interface CachedAttachment {
  kind: 'cniCacheV1';
  containerId: string;
  networkName: string;
  ifName: string;
  /** The network config list's text, base64 as libcni stores it. */
  config: string;
  cniArgs: Array<[string, string]>;
  capabilityArgs: CapabilityArgs;
  /** Absent while ADD has not finished. */
  result?: CniResult;
  /**
   * While ADD runs: the result of the plugins it got through so far (ours; libcni ignores it).
   * A DEL after a crash passes it on, so a plugin cut short in its ADD finds what it was given.
   */
  partialResult?: CniResult;
}

/** One cache file of a container: its entry as far as it can be used, and what could not be. */
interface CacheRead {
  /** The file's name in <cache dir>/results. */
  file: string;
  /** Undefined when the file cannot be used at all (torn, foreign). */
  entry: CachedAttachment | undefined;
  /** What was wrong: the whole file, or its result only (then left out). */
  problem?: string;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A cache file's document as an entry, ours or libcni's (cri-dockerd's), in any spec version:
 * libcni leaves out empty cniArgs and capabilityArgs, and its results may be 0.1.0/0.2.0's.
 * Throws what makes the file unusable; a result that cannot be read is left out and said.
 */
export function readCacheDocument(doc: unknown, containerId: string, ifName: string): { entry: CachedAttachment; problem?: string } {
  if (!isRecord(doc) || doc.kind !== 'cniCacheV1') throw new Error('not a cniCacheV1 document');
  if (doc.containerId !== containerId) throw new Error('it names another container');
  if (typeof doc.networkName !== 'string' || typeof doc.config !== 'string') throw new Error('it has no network name or config');
  const cniArgs = Array.isArray(doc.cniArgs) ? doc.cniArgs.filter((a): a is [string, string] => Array.isArray(a) && a.length === 2 && a.every((x) => typeof x === 'string')) : [];
  const capabilityArgs = isRecord(doc.capabilityArgs) ? (doc.capabilityArgs as CapabilityArgs) : {};
  const entry: CachedAttachment = { kind: 'cniCacheV1', containerId, networkName: doc.networkName, ifName, config: doc.config, cniArgs, capabilityArgs };
  let configVersion = '';
  try {
    const config: unknown = JSON.parse(Buffer.from(doc.config, 'base64').toString('utf8'));
    if (isRecord(config) && typeof config.cniVersion === 'string') configVersion = config.cniVersion;
  } catch {
    // the config is parsed again, with its error said, by whoever runs it
  }
  const problems: string[] = [];
  for (const key of ['result', 'partialResult'] as const) {
    if (doc[key] === undefined || doc[key] === null) continue;
    try {
      entry[key] = parseResult(doc[key], configVersion);
    } catch (err) {
      problems.push(`its ${key} cannot be read (${(err as Error).message})`);
    }
  }
  return problems.length > 0 ? { entry, problem: problems.join('; ') } : { entry };
}

export class ResultCache {
  constructor(private readonly dir: string) {}

  /** The file for one attachment; only validated parts make its name. */
  pathOf(networkName: string, containerId: string, ifName: string): string {
    if (!isFullId(containerId)) throw new Error(`CNI cache: ${JSON.stringify(containerId.slice(0, 80))} is not a container ID`);
    if (!NAME.test(networkName) || !NAME.test(ifName)) throw new Error('CNI cache: network and interface names must be plain names');
    return path.join(this.dir, 'results', `${networkName}-${containerId}-${ifName}`);
  }

  write(entry: CachedAttachment): void {
    const file = this.pathOf(entry.networkName, entry.containerId, entry.ifName);
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const tmp = `${file}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(entry), { mode: 0o600 });
    fs.renameSync(tmp, file);
  }

  /** Every cache file of a container's interface (any network), read as far as it can be. */
  read(containerId: string, ifName: string): CacheRead[] {
    if (!isFullId(containerId) || !NAME.test(ifName)) return [];
    let names: string[];
    try {
      names = fs.readdirSync(path.join(this.dir, 'results'));
    } catch {
      return [];
    }
    const suffix = `-${containerId}-${ifName}`;
    const out: CacheRead[] = [];
    for (const file of names.filter((n) => n.endsWith(suffix) && NAME.test(n))) {
      try {
        const text = readTextNoFollow(path.join(this.dir, 'results', file));
        out.push({ file, ...readCacheDocument(JSON.parse(text), containerId, ifName) });
      } catch (err) {
        out.push({ file, entry: undefined, problem: (err as Error).message });
      }
    }
    return out;
  }

  /** The usable entries of a container's interface. */
  forContainer(containerId: string, ifName: string): CachedAttachment[] {
    return this.read(containerId, ifName).flatMap((r) => (r.entry ? [r.entry] : []));
  }

  remove(networkName: string, containerId: string, ifName: string): void {
    fs.rmSync(this.pathOf(networkName, containerId, ifName), { force: true });
  }

  /** Removes a file `read` named (one that could not be used, once its DEL is done). */
  removeFile(file: string): void {
    if (!NAME.test(file)) throw new Error('CNI cache: not a cache file name');
    fs.rmSync(path.join(this.dir, 'results', file), { force: true });
  }
}
