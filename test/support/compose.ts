// docker-compose projects for the packaging tests: the product's docker-compose.yml under a
// project name of the test's own (so a user's cluster is never touched), the images built from
// this checkout, and the look at the host afterwards: whatever the project left behind.
import { execFile, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from './temp';

const run = promisify(execFile);

export const REPO_ROOT = path.resolve(__dirname, '../../..');
/** The tests' images are tagged apart from a user's :latest. */
export const TEST_IMAGE_TAG = 'test';

/** Why the compose tests cannot run here, or undefined when they can. */
export function composeUnavailable(): string | undefined {
  try {
    execFileSync('docker-compose', ['version'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'docker-compose is not installed (scripts/setup.sh installs it)';
  }
}

let imagesBuilt: Promise<void> | undefined;
/** Builds the three images from this checkout (once per process; the script serialises builds). */
export function buildImages(): Promise<void> {
  imagesBuilt ??= run(path.join(REPO_ROOT, 'scripts/build-image.sh'), [], {
    cwd: REPO_ROOT,
    env: { ...process.env, SHIM_TAG: TEST_IMAGE_TAG },
    maxBuffer: 16 << 20,
  }).then(() => undefined);
  return imagesBuilt;
}

/**
 * The path of the runc wrapper the host's dockerd runs by default, if it runs one (machines
 * whose kernel withholds CAP_SYS_RESOURCE): a dockerd inside a node needs the same.
 */
export function hostRuncWrapper(): string | undefined {
  const info = JSON.parse(execFileSync('docker', ['info', '--format', '{{json .}}'], { encoding: 'utf8' })) as {
    DefaultRuntime: string;
    Runtimes: Record<string, { path: string }>;
  };
  const runtime = info.Runtimes[info.DefaultRuntime];
  return info.DefaultRuntime !== 'runc' && runtime ? runtime.path : undefined;
}

export interface ComposeProject {
  readonly name: string;
  /** A temp directory of the project's own, removed by remove(). */
  readonly dir: string;
  readonly env: NodeJS.ProcessEnv;
  compose(args: string[], timeoutMs?: number): Promise<string>;
  /** The container ID of a service (its only container). */
  containerId(service: string): Promise<string>;
  /** `docker exec` in a service's container. */
  exec(service: string, script: string): Promise<string>;
  /** Writes a compose override into the project dir and adds it to the files compose reads. */
  addOverride(yaml: string): void;
  /** `down -v` and the project dir; safe to call twice. */
  remove(): Promise<void>;
}

export function composeProject(prefix: string, env: NodeJS.ProcessEnv): ComposeProject {
  const name = `${prefix}${Date.now().toString(36)}${process.pid}`;
  const dir = tempDir(prefix);
  const files = [path.join(REPO_ROOT, 'docker-compose.yml')];
  const fullEnv = { ...process.env, COMPOSE_PROJECT_NAME: name, SHIM_TAG: TEST_IMAGE_TAG, ...env };
  let removed = false;
  const project: ComposeProject = {
    name,
    dir,
    env: fullEnv,
    async compose(args, timeoutMs = 300_000) {
      const fileArgs = files.flatMap((f) => ['-f', f]);
      try {
        const { stdout } = await run('docker-compose', [...fileArgs, '--project-directory', REPO_ROOT, ...args], {
          env: fullEnv,
          timeout: timeoutMs,
          maxBuffer: 16 << 20,
        });
        return stdout;
      } catch (err) {
        const e = err as Error & { stderr?: string };
        throw new Error(`docker-compose ${args.join(' ')}: ${e.message}\n${e.stderr ?? ''}`);
      }
    },
    async containerId(service) {
      const id = (await project.compose(['ps', '-q', service])).trim();
      if (!/^[0-9a-f]{64}$/.test(id)) throw new Error(`service ${service} has no single container: ${JSON.stringify(id)}`);
      return id;
    },
    async exec(service, script) {
      const { stdout } = await run('docker', ['exec', await project.containerId(service), 'sh', '-c', script], { timeout: 60_000 });
      return stdout;
    },
    addOverride(yaml) {
      const file = path.join(dir, `override-${files.length}.yml`);
      fs.writeFileSync(file, yaml);
      files.push(file);
    },
    async remove() {
      if (removed) return;
      removed = true;
      try {
        await project.compose(['down', '-v', '--remove-orphans', '--timeout', '20']);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
  return project;
}

/** What a project's containers hold on the host, taken while they run, to check after `down`. */
export interface HostFootprint {
  containers: string[];
  volumes: string[];
  networks: string[];
}

export async function footprintOf(project: ComposeProject): Promise<HostFootprint> {
  const label = `label=com.docker.compose.project=${project.name}`;
  const containers = (await run('docker', ['ps', '-aq', '--no-trunc', '--filter', label])).stdout.split('\n').filter(Boolean);
  const volumes: string[] = [];
  for (const id of containers) {
    const mounts = (await run('docker', ['inspect', '-f', '{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}} {{end}}{{end}}', id])).stdout;
    volumes.push(...mounts.split(/\s+/).filter(Boolean));
  }
  const networks = (await run('docker', ['network', 'ls', '-q', '--no-trunc', '--filter', label])).stdout.split('\n').filter(Boolean);
  return { containers, volumes, networks };
}

/** What is still on the host of a footprint (empty when `down -v` removed it all). */
export async function leftoversOf(footprint: HostFootprint, project: ComposeProject): Promise<string[]> {
  const left: string[] = [];
  const label = `label=com.docker.compose.project=${project.name}`;
  for (const id of (await run('docker', ['ps', '-aq', '--filter', label])).stdout.split('\n').filter(Boolean)) left.push(`container ${id}`);
  for (const id of (await run('docker', ['network', 'ls', '-q', '--filter', label])).stdout.split('\n').filter(Boolean)) left.push(`network ${id}`);
  const volumes = new Set((await run('docker', ['volume', 'ls', '-q'])).stdout.split('\n').filter(Boolean));
  for (const v of footprint.volumes) if (volumes.has(v)) left.push(`volume ${v}`);
  // Each node's dockerd made cgroups below the node's own; they go with it.
  for (const id of footprint.containers) {
    for (const controller of ['memory', 'cpu,cpuacct', 'pids', 'unified']) {
      const dir = path.join('/sys/fs/cgroup', controller, 'docker', id);
      if (fs.existsSync(dir)) left.push(`cgroup ${dir}`);
    }
  }
  // Rules the project's network or published ports made in the host's iptables.
  const rules = execFileSync('iptables-save', [], { encoding: 'utf8' }).split('\n');
  for (const net of footprint.networks) {
    const bridge = `br-${net.slice(0, 12)}`;
    left.push(...rules.filter((r) => r.includes(bridge)).map((r) => `iptables: ${r}`));
  }
  return left;
}
