// Which processes are the Docker daemon, for --runtime-cgroups (./runtime-cgroups.ts), found as
// cri-dockerd's container manager finds them: dockerd by the PID file Docker writes
// (/var/run/docker.pid), else by name; containerd by name ("containerd", or "docker-containerd"
// as older Docker packages named it). A name is argv[0]'s base name, as Kubernetes' procfs.PidOf
// matches it. Only processes in the host's PID namespace count: a dockerd inside a container
// (Docker in Docker) belongs to that container, and when the host's namespace cannot be told
// (/proc/1/ns/pid unreadable) none is touched, as cri-dockerd errs on the side of caution.
//
// The names need a walk of /proc; it is done again only when the PID file names another
// process or a process found before has ended (its start time tells a reused PID), so a
// re-check of an unchanged daemon reads the PID file and one stat file per process.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readStat } from '../kernel/proc-stat';
import { readHead } from '../util/read-head';

const DOCKERD_PID_FILE = '/var/run/docker.pid';
const NAMES = { dockerd: ['dockerd'], containerd: ['containerd', 'docker-containerd'] } as const;
/** A PID file holds a number and a newline; anything longer is not one. */
const MAX_PID_FILE_BYTES = 32;
/** argv[0] is a path, at most PATH_MAX. */
const MAX_ARGV0_BYTES = 4096;

type DaemonName = keyof typeof NAMES;

export interface DaemonProcess {
  pid: number;
  name: DaemonName;
}

interface DaemonSearch {
  processes: DaemonProcess[];
  /** Why a process was left out, or none found: for the caller to warn about. */
  problems: string[];
}

/** Finds the Docker daemon's processes; the caller asks again on each re-check. */
export interface DaemonFinder {
  find(): DaemonSearch;
}

/** The name procfs.PidOf matches: argv[0] up to a space or colon, without its directory. */
export function processName(cmdline: string): string {
  const argv0 = cmdline.split('\0', 1)[0] ?? '';
  return path.basename(argv0.split(/[\s:]/, 1)[0] ?? '');
}

export class ProcDaemonFinder implements DaemonFinder {
  private known: Array<DaemonProcess & { startTime: string }> | undefined;

  constructor(
    private readonly procRoot = '/proc',
    private readonly pidFile = DOCKERD_PID_FILE,
  ) {}

  find(): DaemonSearch {
    const fromPidFile = this.pidFromFile();
    if (this.known && this.stillKnown(fromPidFile)) return { processes: this.known.map(({ pid, name }) => ({ pid, name })), problems: [] };
    this.known = undefined;
    const byName = this.walk();
    // The PID file wins for dockerd when it names a live process, as in cri-dockerd.
    const dockerd = fromPidFile !== undefined && readStat(fromPidFile, this.procRoot) ? [fromPidFile] : byName.dockerd;
    const found: DaemonProcess[] = [
      ...dockerd.map((pid) => ({ pid, name: 'dockerd' as const })),
      ...byName.containerd.map((pid) => ({ pid, name: 'containerd' as const })),
    ];
    const problems: string[] = [];
    if (found.length === 0) return { processes: [], problems: [`no dockerd or containerd process found in ${this.procRoot} (nor a live PID in ${this.pidFile})`] };
    const hostNs = this.pidNamespace(1);
    if (hostNs === undefined) {
      return {
        processes: [],
        problems: [`cannot read ${this.procRoot}/1/ns/pid, so cannot tell whether ${describe(found)} run in the host's PID namespace; leaving them alone`],
      };
    }
    const processes: Array<DaemonProcess & { startTime: string }> = [];
    for (const p of found) {
      const ns = this.pidNamespace(p.pid);
      const stat = readStat(p.pid, this.procRoot);
      if (ns === undefined || stat === undefined) problems.push(`cannot read the PID namespace of ${describe([p])}; leaving it alone`);
      // In a container (Docker in Docker): not the host's daemon.
      else if (ns === hostNs) processes.push({ ...p, startTime: stat.startTime });
    }
    if (problems.length === 0) this.known = processes;
    return { processes: processes.map(({ pid, name }) => ({ pid, name })), problems };
  }

  private pidFromFile(): number | undefined {
    const text = readHead(this.pidFile, MAX_PID_FILE_BYTES)?.trim();
    return text !== undefined && /^[1-9]\d{0,9}$/.test(text) ? Number(text) : undefined;
  }

  /** Every process found last time still runs, and the PID file names none other. */
  private stillKnown(fromPidFile: number | undefined): boolean {
    const known = this.known ?? [];
    if (fromPidFile !== undefined && !known.some((p) => p.name === 'dockerd' && p.pid === fromPidFile)) return false;
    return known.length > 0 && known.every((p) => readStat(p.pid, this.procRoot)?.startTime === p.startTime);
  }

  private walk(): Record<DaemonName, number[]> {
    const out: Record<DaemonName, number[]> = { dockerd: [], containerd: [] };
    let entries: string[];
    try {
      entries = fs.readdirSync(this.procRoot);
    } catch {
      return out;
    }
    for (const entry of entries) {
      if (!/^\d+$/.test(entry)) continue;
      const cmdline = readHead(`${this.procRoot}/${entry}/cmdline`, MAX_ARGV0_BYTES);
      // A kernel thread has an empty command line.
      if (!cmdline) continue;
      const name = processName(cmdline);
      for (const daemon of ['dockerd', 'containerd'] as const) {
        if ((NAMES[daemon] as readonly string[]).includes(name)) out[daemon].push(Number(entry));
      }
    }
    return out;
  }

  private pidNamespace(pid: number): string | undefined {
    try {
      return fs.readlinkSync(`${this.procRoot}/${pid}/ns/pid`);
    } catch {
      return undefined;
    }
  }
}

/** The test-only --test-only-docker-daemon-pids: these processes, as they are, standing in for the daemon. */
export class GivenDaemonFinder implements DaemonFinder {
  constructor(private readonly pids: readonly number[]) {}

  find(): DaemonSearch {
    return { processes: this.pids.map((pid) => ({ pid, name: 'dockerd' as const })), problems: [] };
  }
}

function describe(processes: readonly DaemonProcess[]): string {
  return processes.map((p) => `${p.name} (PID ${p.pid})`).join(', ');
}
