// Results of ADD kept on disk as libcni keeps them (<cache dir>/results/<network>-<container>-
// <ifname>), so a restarted shim still knows a pod's IPs and can run DEL with the same config
// and runtime arguments ADD had (portmap needs them to find its rules). An entry is written
// before ADD runs, too: a shim killed in the middle still leaves what DEL needs.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isFullId } from '../../conventions/ids';
import type { CapabilityArgs } from './args';
import type { CniResult } from './result';

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
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

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

  /** Every cached attachment of a container (any network), newest format only. */
  forContainer(containerId: string, ifName: string): CachedAttachment[] {
    if (!isFullId(containerId)) return [];
    let names: string[];
    try {
      names = fs.readdirSync(path.join(this.dir, 'results'));
    } catch {
      return [];
    }
    const suffix = `-${containerId}-${ifName}`;
    const out: CachedAttachment[] = [];
    for (const name of names.filter((n) => n.endsWith(suffix))) {
      try {
        const doc = JSON.parse(fs.readFileSync(path.join(this.dir, 'results', name), 'utf8')) as CachedAttachment;
        if (doc.kind === 'cniCacheV1' && doc.containerId === containerId) out.push(doc);
      } catch {
        // a torn or foreign file: DEL falls back to the current config
      }
    }
    return out;
  }

  remove(networkName: string, containerId: string, ifName: string): void {
    fs.rmSync(this.pathOf(networkName, containerId, ifName), { force: true });
  }
}
