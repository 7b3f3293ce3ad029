// An in-memory Docker behind the DockerClient interface, for unit tests of what sits on top
// of Docker (handlers, the state cache) without a daemon. It keeps containers and images in
// maps, records every call (method and arguments, in order), and fails or holds the calls a
// test picks: the Nth call of a method, or the calls whose arguments match a predicate, with
// a typed error from src/errors.ts, or held until the caller's signal aborts.
//
// What it models of Docker 20.10: names are unique (create conflicts), IDs are 64 hex and
// any unique prefix names a container, a running container is removed only with force,
// create needs the image locally, the filters label/id/name/status of GET /containers/json.
// What it does not: exec, attach, logs, resizes, disk usage (UnimplementedError). The event
// stream carries only what the test emits, so a test decides when Docker "speaks".
import { randomBytes } from 'node:crypto';
import { PassThrough, type Readable } from 'node:stream';
import type { CallOptions, DockerCall, EventsOptions, EventsQuery, ImageImportQuery, LogsOptions } from '../../src/docker/client';
import { DockerClientBase, fillCalls } from '../../src/docker/pass-through-client';
import type {
  ContainerCreateSpec,
  ContainerInspect,
  ContainerSummary,
  ContainerUpdateSpec,
  DockerEvent,
  DockerFilters,
  DockerInfo,
  DockerVersion,
  ImageDeleteItem,
  ImageInspect,
  ImageSummary,
  PullProgress,
  RegistryAuth,
} from '../../src/docker/types';
import {
  CancelledError,
  DockerBadRequestError,
  DockerConflictError,
  DockerNotFoundError,
  ShimError,
  UnimplementedError,
} from '../../src/errors';
import { inspectDoc, listEntryOf, runningState, type InspectOverrides } from './fixtures/docker-container';

/** How many events the fake's log keeps, as moby's daemon/events does. */
export const FAKE_EVENT_LOG_SIZE = 256;

export interface FakeCall {
  method: DockerCall;
  /** The method's own arguments, without the trailing CallOptions (the unmodelled methods: all, as given). */
  args: unknown[];
  /** The caller's cancellation signal, if it passed one. */
  signal: AbortSignal | undefined;
}

/** Which calls a fault applies to; with neither field, the next call of the method. */
export interface FaultMatch {
  /** The Nth call of the method from now (1 is the next one). */
  nth?: number;
  /** Calls whose arguments satisfy this. */
  when?: (...args: unknown[]) => boolean;
  /** How many matching calls it applies to before it is spent (default 1; Infinity for all). */
  times?: number;
}

export interface Fault extends FaultMatch {
  /** Fails the call with this error (a fresh one from a function, if the test wants a new one each time). */
  error?: Error | (() => Error);
  /** Holds the call until its signal aborts, then fails it as the real client does (CancelledError, or the signal's ShimError reason). */
  hang?: boolean;
  /**
   * The call takes effect in the store before it fails or hangs: Docker did the work, but the
   * answer was lost (a timeout, a cancelled call).
   */
  afterEffect?: boolean;
}

/** A fault the test can take back before it is spent. */
export interface FaultHandle {
  clear(): void;
  /** How many calls it has applied to. */
  readonly hits: number;
}

interface ActiveFault extends Fault {
  method: DockerCall | '*';
  seen: number;
  hits: number;
  cleared: boolean;
}

/** A reply held back until the test releases it (a slow Docker). */
export interface Hold {
  release(): void;
}

/** The version the fake daemon answers (Debian's Docker 20.10). */
export const FAKE_DOCKER_VERSION: DockerVersion = { Version: '20.10.24+dfsg1', ApiVersion: '1.41', MinAPIVersion: '1.12', Os: 'linux', Arch: 'amd64' };

function newId(): string {
  return randomBytes(32).toString('hex');
}

function timeNow(): string {
  return new Date().toISOString();
}

/** A fake image document for `ref` (the fields the shim reads). */
export function imageDoc(ref: string, over: Partial<ImageInspect> = {}): ImageInspect {
  return {
    Id: `sha256:${randomBytes(32).toString('hex')}`,
    RepoTags: ref.includes('@') ? [] : [ref],
    RepoDigests: ref.includes('@') ? [ref] : [],
    Size: 1_000_000,
    Config: { User: '', Env: [], Cmd: ['sh'], Labels: {} },
    ...over,
  } as unknown as ImageInspect;
}

export class FakeDocker extends DockerClientBase {
  // Exec, attach, resizes and disk usage (and any call not written here) are not modelled: each
  // such call is recorded, then refused.
  static {
    fillCalls(this, (call) =>
      function (this: FakeDocker, ...args: unknown[]): Promise<never> {
        return this.call(call, args, undefined, () => {
          throw new UnimplementedError(`fake Docker: ${call} is not modelled`);
        });
      },
    );
  }

  /** Containers by full ID. Tests may put documents here directly (see `addContainer`). */
  readonly containers = new Map<string, ContainerInspect>();
  /** Images by every reference that names them (tags, digests, the ID). */
  readonly images = new Map<string, ImageInspect>();
  /** Images a pull can fetch, by reference. */
  readonly registry = new Map<string, ImageInspect>();
  /** Every call, in order. */
  readonly calls: FakeCall[] = [];
  /** How many event streams were opened. */
  subscriptions = 0;
  daemonInfo: DockerInfo = { ServerVersion: FAKE_DOCKER_VERSION.Version, CgroupDriver: 'cgroupfs', CgroupVersion: '1', DefaultRuntime: 'runc', Runtimes: { runc: { path: 'runc' } } };

  private readonly faults: ActiveFault[] = [];
  private readonly holds: Array<{ method: DockerCall; when: ((...args: unknown[]) => boolean) | undefined; gate: Promise<void> }> = [];
  private readonly streams = new Set<{ push(ev: DockerEvent): void; end(err?: Error): void }>();

  constructor() {
    super('fake://docker');
  }

  // --- what tests use to set up and inspect the fake ---

  /** Puts a container in the store (defaults from inspectDoc) and answers its document. */
  addContainer(over: InspectOverrides = {}): ContainerInspect {
    const doc = inspectDoc({ Id: newId(), ...over });
    this.containers.set(doc.Id, doc);
    return doc;
  }

  /** Makes an image present under `ref` (and its ID). */
  addImage(ref: string, over: Partial<ImageInspect> = {}): ImageInspect {
    const doc = imageDoc(ref, over);
    this.images.set(ref, doc).set(doc.Id, doc);
    return doc;
  }

  /** The calls of one method, as their argument lists. */
  argsOf(method: DockerCall): unknown[][] {
    return this.calls.filter((c) => c.method === method).map((c) => c.args);
  }

  /** The methods called, in order. */
  methods(): DockerCall[] {
    return this.calls.map((c) => c.method);
  }

  /** Each call as one line, "method arg arg" (strings as they are, anything else as JSON). */
  callLines(): string[] {
    return this.calls.map(({ method, args }) => [method, ...args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a)))].join(' '));
  }

  /** The container named `name` (as given to create, without the slash), if any. */
  byName(name: string): ContainerInspect | undefined {
    return [...this.containers.values()].find((c) => c.Name === `/${name}`);
  }

  /**
   * Fails (or holds) calls of `method` ('*' for every method) as `fault` says. Faults are
   * checked in the order they were added; the first that matches applies.
   */
  fail(method: DockerCall | '*', fault: Fault): FaultHandle {
    const active: ActiveFault = { ...fault, method, seen: 0, hits: 0, cleared: false };
    this.faults.push(active);
    return {
      clear: () => void (active.cleared = true),
      get hits() {
        return active.hits;
      },
    };
  }

  /**
   * Holds back the replies of `method` (matching `when`) until `release()`. The reply is what
   * Docker saw when asked; faults are checked when it is released.
   */
  hold(method: DockerCall, when?: (...args: unknown[]) => boolean): Hold {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const entry = { method, when, gate };
    this.holds.push(entry);
    return {
      release: () => {
        const i = this.holds.indexOf(entry);
        if (i >= 0) this.holds.splice(i, 1);
        release();
      },
    };
  }

  /**
   * Docker's in-memory log of its latest events (moby keeps 256), oldest first, which a request
   * with `until` replays; a test may change it (a restarted dockerd has an empty one).
   */
  eventLog: DockerEvent[] = [];

  /** Sends an event about object `id`, stamped now (or `atMs`), to every open event stream, and logs it. */
  emit(action: string, id: string, attributes: Record<string, string> = {}, type = 'container', atMs = Date.now()): void {
    const ev: DockerEvent = { Type: type, Action: action, Actor: { ID: id, Attributes: attributes }, time: Math.floor(atMs / 1000), timeNano: atMs * 1e6 };
    this.eventLog.push(ev);
    if (this.eventLog.length > FAKE_EVENT_LOG_SIZE) this.eventLog.shift();
    for (const s of this.streams) s.push(ev);
  }

  /** Ends every open event stream with `err` (a lost connection), or cleanly without one. */
  endStreams(err?: Error): void {
    for (const s of [...this.streams]) s.end(err);
  }

  // --- the call machinery ---

  /**
   * Runs one call: records it; a held call does its work (reads or changes the store) when
   * asked and answers when released; then the first matching fault, if any, fails it;
   * otherwise `work` runs (if it has not) and its answer is returned.
   */
  private async call<T>(method: DockerCall, args: unknown[], opts: CallOptions | undefined, work: () => T): Promise<T> {
    this.calls.push({ method, args, signal: opts?.signal });
    const signal = opts?.signal;
    if (signal?.aborted) throw abortError(signal);
    const run = (): { value: T } | { error: unknown } => {
      try {
        return { value: work() };
      } catch (error) {
        return { error };
      }
    };
    const held = this.holds.filter((h) => h.method === method && (!h.when || h.when(...args)));
    let done = held.length > 0 ? run() : undefined;
    for (const h of held) await raceSignal(h.gate, signal);
    const fault = this.faultFor(method, args);
    if (fault) {
      if (fault.afterEffect) done ??= run();
      if (fault.hang) await hangUntilAborted(signal);
      const { error } = fault;
      throw typeof error === 'function' ? error() : error ?? new Error(`fake Docker: ${method} failed`);
    }
    done ??= run();
    if ('error' in done) throw done.error;
    return done.value;
  }

  /** The fault that applies to this call (counting it towards every matching fault's nth), if any. */
  private faultFor(method: DockerCall, args: unknown[]): ActiveFault | undefined {
    let chosen: ActiveFault | undefined;
    for (const f of this.faults) {
      if (f.cleared || (f.method !== '*' && f.method !== method) || (f.when && !f.when(...args))) continue;
      f.seen += 1;
      if (chosen === undefined && (f.nth === undefined || f.seen === f.nth)) chosen = f;
    }
    if (chosen) {
      chosen.hits += 1;
      if (chosen.hits >= (chosen.times ?? 1)) chosen.cleared = true;
    }
    return chosen;
  }

  private find(idOrName: string): ContainerInspect {
    const exact = this.containers.get(idOrName) ?? this.byName(idOrName.replace(/^\//, ''));
    if (exact) return exact;
    const byPrefix = /^[0-9a-f]+$/.test(idOrName) ? [...this.containers.values()].filter((c) => c.Id.startsWith(idOrName)) : [];
    if (byPrefix.length === 1) return byPrefix[0]!;
    if (byPrefix.length > 1) throw new DockerBadRequestError(`multiple IDs found with provided prefix: ${idOrName}`);
    throw new DockerNotFoundError(`No such container: ${idOrName}`);
  }

  private findImage(ref: string): ImageInspect {
    const image = this.images.get(ref);
    if (!image) throw new DockerNotFoundError(`No such image: ${ref}`);
    return image;
  }

  // --- DockerClient ---

  override ping(opts?: CallOptions): Promise<void> {
    return this.call('ping', [], opts, () => undefined);
  }

  override version(opts?: CallOptions): Promise<DockerVersion> {
    return this.call('version', [], opts, () => ({ ...FAKE_DOCKER_VERSION }));
  }

  override info(opts?: CallOptions): Promise<DockerInfo> {
    return this.call('info', [], opts, () => structuredClone(this.daemonInfo));
  }

  override listContainers(query: { all: boolean; filters?: DockerFilters; size?: boolean }, opts?: CallOptions): Promise<ContainerSummary[]> {
    return this.call('listContainers', [query], opts, () =>
      [...this.containers.values()]
        .filter((c) => (query.all || c.State.Running) && matchesFilters(c, query.filters ?? {}))
        .map((c) => listEntryOf(c))
        .map((c) => (query.size && this.sizeRw.has(c.Id) ? { ...c, SizeRw: this.sizeRw.get(c.Id) } : c)),
    );
  }

  /** Each container's writable layer bytes as the list gives them when asked with `size`. */
  readonly sizeRw = new Map<string, number>();

  override inspectContainer(id: string, opts?: CallOptions): Promise<ContainerInspect> {
    return this.call('inspectContainer', [id], opts, () => structuredClone(this.find(id)));
  }

  override createContainer(spec: ContainerCreateSpec, opts?: CallOptions): Promise<string> {
    return this.call('createContainer', [spec], opts, () => {
      const { name, Image, Labels, HostConfig, ...config } = spec;
      if (name !== undefined && this.byName(name)) {
        throw new DockerConflictError(`Conflict. The container name "/${name}" is already in use by container "${this.byName(name)!.Id}".`);
      }
      const image = this.findImage(Image ?? '');
      const id = newId();
      const doc = inspectDoc({
        Id: id,
        Name: `/${name ?? id.slice(0, 12)}`,
        Created: timeNow(),
        Path: spec.Entrypoint?.[0] ?? spec.Cmd?.[0] ?? '',
        Args: [...(spec.Entrypoint?.slice(1) ?? []), ...(spec.Entrypoint ? spec.Cmd ?? [] : spec.Cmd?.slice(1) ?? [])],
        Image: image.Id,
        Config: { ...config, Image, Labels: { ...(Labels ?? {}) } },
        HostConfig: { NetworkMode: 'default', ...HostConfig },
      });
      this.containers.set(id, doc);
      return id;
    });
  }

  override startContainer(id: string, opts?: CallOptions): Promise<void> {
    return this.call('startContainer', [id], opts, () => {
      const c = this.find(id);
      c.State = { ...c.State, ...runningState(timeNow(), { Pid: 4242, FinishedAt: c.State.FinishedAt }) };
    });
  }

  override stopContainer(id: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    return this.call('stopContainer', [id, timeoutSeconds], opts, () => this.exit(this.find(id), 143));
  }

  override killContainer(id: string, signal: string, opts?: CallOptions): Promise<void> {
    return this.call('killContainer', [id, signal], opts, () => {
      const c = this.find(id);
      if (!c.State.Running) throw new DockerConflictError(`Container ${c.Id} is not running`);
      this.exit(c, 137);
    });
  }

  private exit(c: ContainerInspect, code: number): void {
    if (!c.State.Running) return;
    c.State = { ...c.State, Status: 'exited', Running: false, Pid: 0, ExitCode: code, FinishedAt: timeNow() };
  }

  override removeContainer(id: string, query: { force: boolean; removeVolumes: boolean }, opts?: CallOptions): Promise<void> {
    return this.call('removeContainer', [id, query], opts, () => {
      const c = this.find(id);
      if (c.State.Running && !query.force) {
        throw new DockerConflictError(`You cannot remove a running container ${c.Id}. Stop the container before attempting removal or force remove`);
      }
      this.containers.delete(c.Id);
    });
  }

  override updateContainer(id: string, spec: ContainerUpdateSpec, opts?: CallOptions): Promise<void> {
    return this.call('updateContainer', [id, spec], opts, () => {
      const c = this.find(id);
      c.HostConfig = { ...c.HostConfig, ...spec };
    });
  }

  override containerLogs(id: string, query: LogsOptions): Promise<Readable> {
    const { signal, ...rest } = query;
    return this.call('containerLogs', [id, rest], { signal }, () => {
      this.find(id);
      const out = new PassThrough();
      out.end();
      return out;
    });
  }

  override listImages(query: { all?: boolean; filters?: DockerFilters; digests?: boolean }, opts?: CallOptions): Promise<ImageSummary[]> {
    return this.call('listImages', [query], opts, () =>
      [...new Set(this.images.values())].map(
        (i) => ({ Id: i.Id, RepoTags: i.RepoTags, RepoDigests: i.RepoDigests, Size: i.Size, Created: 0, Labels: {} }) as unknown as ImageSummary,
      ),
    );
  }

  override inspectImage(ref: string, opts?: CallOptions): Promise<ImageInspect> {
    return this.call('inspectImage', [ref], opts, () => structuredClone(this.findImage(ref)));
  }

  override pullImage(ref: string, auth: RegistryAuth | undefined, onProgress: (p: PullProgress) => void, opts?: CallOptions): Promise<void> {
    return this.call('pullImage', [ref, auth], opts, () => {
      const image = this.registry.get(ref);
      if (!image) throw new DockerNotFoundError(`pull access denied for ${ref}, repository does not exist or may require 'docker login'`);
      onProgress({ status: `Status: Downloaded newer image for ${ref}` });
      this.images.set(ref, image).set(image.Id, image);
    });
  }

  override importImage(layer: Buffer, query: ImageImportQuery, opts?: CallOptions): Promise<void> {
    return this.call('importImage', [query], opts, () => {
      const ref = `${query.repo}:${query.tag}`;
      const labels = Object.fromEntries(
        query.changes.flatMap((c) => {
          const m = /^LABEL (\S+?)=(\S*)$/.exec(c);
          return m ? [[m[1]!, m[2]!]] : [];
        }),
      );
      const entrypoint = query.changes.find((c) => c.startsWith('ENTRYPOINT '));
      this.addImage(ref, {
        Size: layer.length,
        Config: { User: '', Env: [], Cmd: null, Entrypoint: entrypoint ? JSON.parse(entrypoint.slice('ENTRYPOINT '.length)) : null, Labels: labels },
      } as unknown as Partial<ImageInspect>);
    });
  }

  override removeImage(ref: string, query: { force: boolean; noprune: boolean }, opts?: CallOptions): Promise<ImageDeleteItem[]> {
    return this.call('removeImage', [ref, query], opts, () => {
      const image = this.findImage(ref);
      const names = [...this.images].filter(([, i]) => i === image).map(([name]) => name);
      for (const name of names) this.images.delete(name);
      return [...names.filter((n) => n !== image.Id).map((n) => ({ Untagged: n })), { Deleted: image.Id }];
    });
  }

  /** A request with `until` (in the past): the logged events from `since` to `until`, then the end, as Docker does. Unfiltered only. */
  private async *replay(query: EventsQuery, opts?: EventsOptions): AsyncIterable<DockerEvent> {
    const fromNs = (query.since ?? 0) * 1e9;
    const toNs = query.until! * 1e9;
    const logged = await this.call('events', [query], opts, () => this.eventLog.filter((ev) => ev.timeNano >= fromNs && ev.timeNano <= toNs));
    opts?.onSubscribed?.();
    yield* logged;
  }

  override events(query: EventsQuery, opts?: EventsOptions): AsyncIterable<DockerEvent> {
    if (query.until !== undefined) return this.replay(query, opts);
    const queue: DockerEvent[] = [];
    let wake: (() => void) | undefined;
    let ended: { err?: Error } | undefined;
    const stream = {
      push: (ev: DockerEvent) => (queue.push(ev), wake?.()),
      end: (err?: Error) => ((ended = { err }), wake?.()),
    };
    // The stream is open from the call on, as Docker's is once it has sent its headers.
    const opening = this.call('events', [query], opts, () => void this.streams.add(stream));
    opening.catch(() => undefined); // the generator below rethrows it to whoever iterates
    const self = this;
    return (async function* () {
      await opening;
      self.subscriptions++;
      opts?.onSubscribed?.();
      const onAbort = (): void => stream.end();
      opts?.signal?.addEventListener('abort', onAbort, { once: true });
      try {
        for (;;) {
          while (queue.length > 0) yield queue.shift()!;
          if (ended) {
            if (ended.err) throw ended.err;
            return;
          }
          await new Promise<void>((r) => (wake = r));
          wake = undefined;
        }
      } finally {
        self.streams.delete(stream);
        opts?.signal?.removeEventListener('abort', onAbort);
      }
    })();
  }
}

/** How the real client reports a call its caller abandoned. */
function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof ShimError ? reason : new CancelledError('fake Docker: cancelled', { cause: reason });
}

/** A hung call: it ends only when its caller gives up (never, for a caller without a signal). */
function hangUntilAborted(signal: AbortSignal | undefined): Promise<never> {
  return new Promise<never>((_resolve, reject) => {
    signal?.addEventListener('abort', () => reject(abortError(signal)), { once: true });
  });
}

function raceSignal(gate: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return gate;
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    void gate.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}

/** Docker's list filters: every filter given must match; within one, any of its values. */
function matchesFilters(c: ContainerInspect, filters: DockerFilters): boolean {
  const labels = c.Config.Labels ?? {};
  return Object.entries(filters).every(([name, values]) => {
    switch (name) {
      case 'label':
        // Labels are the exception: every term must hold.
        return values.every((term) => {
          const eq = term.indexOf('=');
          return eq < 0 ? labels[term] !== undefined : labels[term.slice(0, eq)] === term.slice(eq + 1);
        });
      case 'id':
        return values.some((v) => c.Id.includes(v));
      case 'name':
        return values.some((v) => new RegExp(v).test(c.Name));
      case 'status':
        return values.includes(c.State.Status);
      default:
        throw new Error(`fake Docker: the list filter ${name} is not modelled`);
    }
  });
}
