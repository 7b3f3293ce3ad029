// The shim's own metrics, in a prom-client Registry of its own (never the library's global one,
// so two shims in one process keep theirs apart). The machinery is told of events through the
// small recorder interfaces each folder declares; figures that already live somewhere (the
// state cache's size, the network manager's counts) are read when Prometheus scrapes.
// prom-client is loaded only here, and this module only with --metrics-bind-addr: start-up
// without the flag does not pay for it.
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { StateCacheRecorder } from '../docker-cache/state-cache';
import type { DockerCall } from '../docker/client';
import type { DockerCallRecorder, DockerErrorKind } from '../docker/instrumented-client';
import type { RpcRecorder } from '../grpc/adapter';
import type { LogRecorder } from '../logs/follower';
import type { NetworkOperation, OperationCounts } from '../network/network-manager';
import type { StreamingRecorder, StreamKind } from '../streaming/streaming-server';

const PREFIX = 'cri_docker_shim_';

/** Seconds, from a millisecond list call to a long pull. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** What is read at scrape time, once the pieces that hold it are built (see `ShimMetrics.read`). */
interface ScrapedSources {
  stateCache: { readonly synced: boolean; readonly containers: { readonly size: number }; readonly images: { readonly size: number } };
  network: { readonly pluginName: string; operationCounts(): Readonly<Record<NetworkOperation, Readonly<OperationCounts>>> };
}

type PromClient = typeof import('prom-client');

export class ShimMetrics {
  readonly registry: Registry;
  readonly rpc: RpcRecorder;
  readonly docker: DockerCallRecorder;
  readonly stateCache: StateCacheRecorder;
  readonly logs: LogRecorder;
  readonly streaming: StreamingRecorder;
  private sources: ScrapedSources | undefined;

  constructor(prom: PromClient) {
    const registry = new prom.Registry();
    this.registry = registry;
    prom.collectDefaultMetrics({ register: registry });
    const define: Definer = { prom, registers: [registry] };
    const sources = (): ScrapedSources | undefined => this.sources;
    this.rpc = rpcMetrics(define);
    this.docker = dockerMetrics(define);
    this.stateCache = stateCacheMetrics(define, sources);
    this.logs = logMetrics(define);
    this.streaming = streamingMetrics(define);
    networkMetrics(define, sources);
  }

  /** Where the scraped figures come from; until this is called they read as zero. */
  read(sources: ScrapedSources): void {
    this.sources = sources;
  }

  /** The exposition text and its content type. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** Loads prom-client and defines every metric in a fresh registry. */
export function createShimMetrics(): ShimMetrics {
  return new ShimMetrics(require('prom-client') as PromClient);
}

/** What each subsystem's metrics are defined with: the library and the shim's own registry. */
interface Definer {
  prom: PromClient;
  registers: Registry[];
}

function rpcMetrics({ prom, registers }: Definer): RpcRecorder {
  const rpcSeconds = new prom.Histogram({
    name: `${PREFIX}rpc_duration_seconds`,
    help: 'CRI calls by RPC and gRPC status code, and how long they took',
    labelNames: ['method', 'code'],
    buckets: LATENCY_BUCKETS,
    registers,
  });
  return rpcRecorder(rpcSeconds);
}

function dockerMetrics({ prom, registers }: Definer): DockerCallRecorder {
  const dockerOps = new prom.Counter({
    name: `${PREFIX}docker_operations_total`,
    help: 'Docker API operations the shim made (answers from the state cache are not counted)',
    labelNames: ['operation'],
    registers,
  });
  const dockerErrors = new prom.Counter({
    name: `${PREFIX}docker_operation_errors_total`,
    help: 'Docker API operations that failed, by kind of failure',
    labelNames: ['operation', 'kind'],
    registers,
  });
  const dockerSeconds = new prom.Histogram({
    name: `${PREFIX}docker_operation_duration_seconds`,
    help: 'How long Docker API operations took',
    labelNames: ['operation'],
    buckets: LATENCY_BUCKETS,
    registers,
  });
  return dockerRecorder(dockerOps, dockerErrors, dockerSeconds);
}

function stateCacheMetrics({ prom, registers }: Definer, sources: () => ScrapedSources | undefined): StateCacheRecorder {
  const reconnects = new prom.Counter({
    name: `${PREFIX}state_cache_reconnects_total`,
    help: "Times the state cache followed Docker's event stream anew after losing it",
    registers,
  });
  new prom.Gauge({
    name: `${PREFIX}state_cache_objects`,
    help: 'Objects the state cache holds: container documents, and image answers',
    labelNames: ['kind'],
    registers,
    collect() {
      const cache = sources()?.stateCache;
      this.set({ kind: 'containers' }, cache?.containers.size ?? 0);
      this.set({ kind: 'image_answers' }, cache?.images.size ?? 0);
    },
  });
  new prom.Gauge({
    name: `${PREFIX}state_cache_synced`,
    help: "1 while the state cache is in step with Docker's event stream and answers reads",
    registers,
    collect() {
      this.set(sources()?.stateCache.synced ? 1 : 0);
    },
  });
  return { reconnecting: () => reconnects.inc() };
}

function logMetrics({ prom, registers }: Definer): LogRecorder {
  const logBytes = new prom.Counter({ name: `${PREFIX}container_log_bytes_total`, help: 'Bytes written to CRI container logs', registers });
  const logLines = new prom.Counter({ name: `${PREFIX}container_log_lines_total`, help: 'Lines written to CRI container logs', registers });
  const rotations = new prom.Counter({
    name: `${PREFIX}container_log_rotations_total`,
    help: 'Container logs reopened after kubelet rotated them (ReopenContainerLog)',
    registers,
  });
  return {
    written: (bytes, lines) => {
      logBytes.inc(bytes);
      logLines.inc(lines);
    },
    rotated: () => rotations.inc(),
  };
}

function streamingMetrics({ prom, registers }: Definer): StreamingRecorder {
  const sessions = new prom.Gauge({
    name: `${PREFIX}streaming_sessions`,
    help: 'Streaming sessions (exec, attach, port-forward) open now',
    labelNames: ['kind'],
    registers,
  });
  const issued = new prom.Counter({
    name: `${PREFIX}streaming_tokens_issued_total`,
    help: 'Streaming URLs handed out by Exec, Attach and PortForward',
    labelNames: ['kind'],
    registers,
  });
  const rejected = new prom.Counter({
    name: `${PREFIX}streaming_tokens_rejected_total`,
    help: 'Streaming URLs opened with an unknown, expired or used token',
    labelNames: ['kind'],
    registers,
  });
  return streamingRecorder(sessions, issued, rejected);
}

function networkMetrics({ prom, registers }: Definer, sources: () => ScrapedSources | undefined): void {
  new prom.Counter({
    name: `${PREFIX}network_plugin_operations_total`,
    help: 'Pod network operations (setUp, tearDown, status) passed to the network plugin, by result',
    labelNames: ['plugin', 'operation', 'result'],
    registers,
    collect(this: Counter<'plugin' | 'operation' | 'result'>) {
      const network = sources()?.network;
      if (!network) return;
      // The manager keeps the running totals; the counter shows them as they are now.
      this.reset();
      const plugin = network.pluginName;
      for (const [operation, c] of Object.entries(network.operationCounts())) {
        this.inc({ plugin, operation, result: 'ok' }, c.succeeded);
        this.inc({ plugin, operation, result: 'failed' }, c.failures);
      }
    },
  });
}

/** Label children are looked up once per RPC and code, not built per call. */
function rpcRecorder(seconds: Histogram<'method' | 'code'>): RpcRecorder {
  const children = new Map<string, Histogram.Internal<'method' | 'code'>[]>();
  return {
    observe(rpc, code, elapsed) {
      let byCode = children.get(rpc);
      if (!byCode) children.set(rpc, (byCode = []));
      const child = (byCode[code] ??= seconds.labels(rpc, GrpcStatus[code] ?? String(code)));
      child.observe(elapsed);
    },
  };
}

function dockerRecorder(
  ops: Counter<'operation'>,
  errors: Counter<'operation' | 'kind'>,
  seconds: Histogram<'operation'>,
): DockerCallRecorder {
  const children = new Map<DockerCall, { ops: Counter.Internal; seconds: Histogram.Internal<'operation'> }>();
  return {
    observe(operation: DockerCall, elapsed: number, errorKind: DockerErrorKind | undefined) {
      let child = children.get(operation);
      if (!child) children.set(operation, (child = { ops: ops.labels(operation), seconds: seconds.labels(operation) }));
      child.ops.inc();
      child.seconds.observe(elapsed);
      if (errorKind !== undefined) errors.inc({ operation, kind: errorKind });
    },
  };
}

function streamingRecorder(sessions: Gauge<'kind'>, issued: Counter<'kind'>, rejected: Counter<'kind'>): StreamingRecorder {
  const kinds: StreamKind[] = ['exec', 'attach', 'portforward'];
  // Present from the first scrape, so a dashboard sees zeros rather than no series.
  for (const kind of kinds) {
    sessions.set({ kind }, 0);
    issued.inc({ kind }, 0);
    rejected.inc({ kind }, 0);
  }
  return {
    tokenIssued: (kind) => issued.inc({ kind }),
    tokenRejected: (kind) => rejected.inc({ kind }),
    sessionOpened: (kind) => sessions.inc({ kind }),
    sessionClosed: (kind) => sessions.dec({ kind }),
  };
}
