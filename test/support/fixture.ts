// The one set-up of the integration suites: a shim (the real binary, optionally behind a
// DockerProxy, optionally on a root directory the suite keeps across restarts), optionally a
// pod and a private registry, and a record of everything the suite made, so that one call
// removes it all: pods (through the shim, so whatever RunPodSandbox set up is torn down),
// shims, every container labelled with the suite's run, the suite's own extra clean-ups,
// images, registries, temp and log directories.
//
//   const f = useShim({ pod: 'web' });      // before: shim + pod; after: all of it removed
//   it('...', async () => { await f.client.runtime.CreateContainer({ podSandboxId: f.pod.id, ... }) });
import { after, before } from 'node:test';
import type { ContainerConfig, LinuxPodSandboxConfig } from '../../src/cri/types';
import { newTestRun, removePaths, removeTestContainers, testLabels } from './cleanup';
import type { CriClient } from './client';
import type { DockerProxy } from './docker-proxy';
import { dockerApi, ensureTestImages } from './images';
import { busybox, removeTestPod, runContainer, startTestPod, type TestPod } from './pods';
import { importUniqueImage, startRegistry, type PushedImage, type TestRegistry } from './registry';
import { startShim, startShimBehindProxy, type ProxiedShim, type ShimOptions, type ShimProcess } from './shim';
import { tempDir } from './temp';

export interface ShimSpec extends ShimOptions {
  /** Reach Docker through a DockerProxy the test controls. */
  behindProxy?: boolean;
}

export interface PodSpec {
  name: string;
  linux?: LinuxPodSandboxConfig;
}

export interface FixtureOptions extends ShimSpec {
  /** Start a private registry (./registry) before the shim: `registry`. */
  registry?: boolean;
  /** Start a shim before the suite (default true); false for suites that start their own. */
  shim?: boolean;
  /**
   * A pod to run once the shim answers: its name, or its name and Linux config (from a
   * function of the run label, for names that must be the suite's own, such as a cgroup parent).
   */
  pod?: string | PodSpec | ((run: string) => PodSpec);
}

/** A shim the fixture started, with its proxy when it has one. */
export interface FixtureShim {
  readonly shim: ShimProcess;
  readonly proxy: DockerProxy | undefined;
  /** Stops the shim (and its proxy); resolves with the exit code; safe to call again. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export class Fixture {
  /** The value of TEST_LABEL on everything this suite makes. */
  readonly run = newTestRun();
  private main: FixtureShim | undefined;
  private mainPod: TestPod | undefined;
  private mainRegistry: TestRegistry | undefined;
  private readonly shims: FixtureShim[] = [];
  private readonly pods: Array<{ client: CriClient; id: string; logDir?: string }> = [];
  private readonly paths: string[] = [];
  private readonly cleanUps: Array<() => Promise<unknown> | void> = [];
  private readonly images: Array<{ ref: string; force: boolean }> = [];
  private readonly registries: TestRegistry[] = [];

  constructor(private readonly options: FixtureOptions = {}) {}

  /** The suite's shim (started in before). */
  get shim(): ShimProcess {
    if (!this.main) throw new Error('the fixture has no shim: it was not started, or started with shim: false');
    return this.main.shim;
  }

  get client(): CriClient {
    return this.shim.client;
  }

  /** The proxy between the suite's shim and Docker (behindProxy only). */
  get proxy(): DockerProxy {
    const proxy = this.main?.proxy;
    if (!proxy) throw new Error('the fixture’s shim is not behind a proxy (behindProxy: true)');
    return proxy;
  }

  /** The suite's pod (the `pod` option). */
  get pod(): TestPod {
    if (!this.mainPod) throw new Error('the fixture has no pod: give the pod option');
    return this.mainPod;
  }

  /** The suite's registry (the `registry` option). */
  get registry(): TestRegistry {
    if (!this.mainRegistry) throw new Error('the fixture has no registry: give the registry option');
    return this.mainRegistry;
  }

  /** The labels to put on every pod and container the suite makes, plus `extra`. */
  labels(extra: Record<string, string> = {}): Record<string, string> {
    return { ...testLabels(this.run), ...extra };
  }

  /** Starts the suite's registry, shim and pod, as the options say. */
  async start(): Promise<void> {
    const { shim = true, pod, registry } = this.options;
    await ensureTestImages();
    if (registry) this.mainRegistry = await this.startRegistry();
    if (!shim) return;
    this.main = await this.startShim(this.options);
    if (pod !== undefined) {
      const { name, linux } = typeof pod === 'string' ? { name: pod } : typeof pod === 'function' ? pod(this.run) : pod;
      this.mainPod = await this.startPod(name, linux);
    }
  }

  /** Another shim behind a DockerProxy of its own (see startShim). */
  async startShimBehindProxy(args: string[] = []): Promise<FixtureShim & { readonly proxy: DockerProxy }> {
    const started = await this.startShim({ behindProxy: true, args });
    return { ...started, proxy: started.proxy! };
  }

  /** Another shim, stopped at clean-up (after the suite's pods, before the containers are swept). */
  async startShim(spec: ShimSpec = {}): Promise<FixtureShim> {
    const { behindProxy, ...options } = spec;
    let started: FixtureShim;
    if (behindProxy) {
      if (options.rootDir || options.env) throw new Error('a proxied shim takes args only');
      const proxied: ProxiedShim = await startShimBehindProxy(options.args);
      started = { shim: proxied.shim, proxy: proxied.proxy, stop: (signal) => proxied.stop(signal) };
    } else {
      const shim = await startShim(options);
      started = { shim, proxy: undefined, stop: (signal) => shim.stop(signal) };
    }
    this.shims.push(started);
    return started;
  }

  /** A pod made through `client` (the suite's shim by default), removed at clean-up with its log directory. */
  async startPod(name: string, linux: LinuxPodSandboxConfig = {}, client: CriClient = this.client): Promise<TestPod> {
    const pod = await startTestPod(client, this.run, name, linux);
    this.pods.push({ client, id: pod.id, logDir: pod.logDir });
    return pod;
  }

  /** Removes a pod `startPod` made, now (through the shim that made it), with its log directory. */
  async removePod(pod: TestPod): Promise<void> {
    const i = this.pods.findIndex((p) => p.id === pod.id);
    const { client } = i >= 0 ? this.pods.splice(i, 1)[0]! : { client: this.client };
    await removeTestPod(client, pod);
  }

  /** Creates and starts busybox container `name` (with `over`) in `pod` (the suite's by default); answers its ID. */
  runContainer(name: string, over: Partial<ContainerConfig> = {}, pod: TestPod = this.pod): Promise<string> {
    return runContainer(this.client, pod, busybox(this.run, name, over));
  }

  /**
   * An image no other suite has, present only in `registry` (as `name`, e.g. "uniq:1"): made
   * locally, pushed, and removed locally again; its ID is removed at clean-up after pulls.
   */
  async registryOnlyImage(registry: TestRegistry, name: string): Promise<{ id: string; pushed: PushedImage }> {
    const local = `cds-test-registry-only/${this.run}-${name.replace(/[^a-z0-9]/g, '-')}:1`;
    const id = await importUniqueImage(local);
    this.removeImagesAfter([id], { force: true });
    const pushed = await registry.push(local, name);
    await dockerApi().getImage(id).remove({ force: true });
    return { id, pushed };
  }

  /** A sandbox the test ran itself, to be removed at clean-up through `client` (RemovePodSandbox). */
  trackPod(id: string, client: CriClient = this.client): void {
    this.pods.push({ client, id });
  }

  /** A private registry on loopback (./registry), stopped at clean-up. */
  async startRegistry(): Promise<TestRegistry> {
    const registry = await startRegistry();
    this.registries.push(registry);
    return registry;
  }

  /** Docker images (tags or IDs) the suite put on the host, removed at clean-up; missing ones are fine. */
  removeImagesAfter(refs: string[], { force = false }: { force?: boolean } = {}): void {
    this.images.push(...refs.map((ref) => ({ ref, force })));
  }

  /** A temp directory, removed at clean-up. */
  tempDir(prefix: string): string {
    const dir = tempDir(prefix);
    this.paths.push(dir);
    return dir;
  }

  /** A clean-up of the suite's own, run once the shims are stopped and the containers swept (last added, first run). */
  onCleanUp(step: () => Promise<unknown> | void): void {
    this.cleanUps.push(step);
  }

  /**
   * Removes everything, in order: pods (RemovePodSandbox through their shim), shims (last
   * started first), containers labelled with the run, the suite's own clean-ups, images,
   * registries, paths. Every step runs even when an earlier one fails; the first failure is
   * thrown at the end.
   */
  async cleanUp(): Promise<void> {
    const failures: unknown[] = [];
    const attempt = async (step: () => Promise<unknown> | void): Promise<void> => {
      try {
        await step();
      } catch (err) {
        failures.push(err);
      }
    };
    const running = (client: CriClient): boolean =>
      this.shims.some((s) => s.shim.client === client && s.shim.child.exitCode === null && s.shim.child.signalCode === null);
    // One pod's removal does not wait for another's (the shim takes them concurrently).
    await Promise.all(
      this.pods.splice(0).map(async ({ client, id, logDir }) => {
        if (logDir) this.paths.push(logDir);
        // A pod whose shim the test stopped goes through the suite's shim; with none running,
        // the sweep below removes its containers.
        const via = [client, this.main?.shim.client].find((c): c is CriClient => c !== undefined && running(c));
        if (via) await attempt(() => via.runtime.RemovePodSandbox({ podSandboxId: id }));
      }),
    );
    for (const s of this.shims.splice(0).reverse()) await attempt(() => s.stop());
    await attempt(() => removeTestContainers({ run: this.run }));
    for (const step of this.cleanUps.splice(0).reverse()) await attempt(step);
    for (const { ref, force } of this.images.splice(0)) {
      await dockerApi()
        .getImage(ref)
        .remove({ force })
        .catch(() => undefined);
    }
    for (const registry of this.registries.splice(0)) await attempt(() => registry.stop());
    await attempt(() => removePaths(...this.paths.splice(0)));
    if (failures.length > 0) throw failures[0];
  }
}

/**
 * A Fixture whose shim (and pod) start in node:test's `before` and whose clean-up runs in its
 * `after`, for the enclosing describe. The run label is there at once; the rest after before().
 */
export function useShim(options: FixtureOptions = {}): Fixture {
  const fixture = new Fixture(options);
  before(() => fixture.start());
  after(() => fixture.cleanUp());
  return fixture;
}
