// A container healthcheck for the shim: asks the shim itself, over its own CRI socket, for
// Runtime.Status. Healthy means the call answered and RuntimeReady is true (Docker reachable);
// NetworkReady is printed but only counts with --require-network, since a node whose CNI
// config arrives later is still a working runtime. Exit 0 healthy, 1 not, 2 bad flags.
//   node dist/src/tools/health-check.js [--endpoint unix:///run/cri-docker-shim.sock] [--timeout 5s]
import { parseArgs } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { parseEndpoint, type Endpoint } from '../config/endpoint';
import { DEFAULT_RUNTIME_ENDPOINT } from '../config/flags';
import { criContract } from '../cri/contract';
import type { StatusResponse__Output } from '../generated/runtime/v1/StatusResponse';
import { parseDuration } from '../util/duration';

interface HealthOptions {
  endpoint: Endpoint;
  timeoutMs: number;
  requireNetwork: boolean;
}

interface Verdict {
  healthy: boolean;
  /** One line for `docker inspect`'s health log. */
  summary: string;
}

export function parseHealthFlags(argv: readonly string[]): HealthOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      endpoint: { type: 'string', default: DEFAULT_RUNTIME_ENDPOINT },
      timeout: { type: 'string', default: '5s' },
      'require-network': { type: 'boolean', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  return {
    endpoint: parseEndpoint(values.endpoint!),
    timeoutMs: parseDuration(values.timeout!),
    requireNetwork: values['require-network'] === true,
  };
}

/** grpc-js's address for an endpoint: unix:///path as is, host:port for tcp. */
export function grpcAddress(endpoint: Endpoint): string {
  return endpoint.kind === 'unix' ? `unix://${endpoint.path}` : `${endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host}:${endpoint.port}`;
}

/** Pure: the verdict on a Status answer. */
export function judgeStatus(res: StatusResponse__Output, requireNetwork: boolean): Verdict {
  const conditions = res.status?.conditions ?? [];
  const state = (type: string): boolean | undefined => conditions.find((c) => c.type === type)?.status;
  const describe = conditions
    .map((c) => `${c.type}=${c.status}${c.status || !c.reason ? '' : ` (${c.reason}${c.message ? `: ${c.message}` : ''})`}`)
    .join(' ');
  const healthy = state('RuntimeReady') === true && (!requireNetwork || state('NetworkReady') === true);
  return { healthy, summary: describe || 'Status answered without conditions' };
}

async function askStatus(options: HealthOptions): Promise<StatusResponse__Output> {
  const v1 = criContract().runtime.v1;
  const client = new v1.RuntimeService(grpcAddress(options.endpoint), grpc.credentials.createInsecure(), {
    'grpc.enable_retries': 0,
  });
  try {
    return await new Promise<StatusResponse__Output>((resolve, reject) => {
      client.Status({ verbose: false }, { deadline: Date.now() + options.timeoutMs }, (err, res) =>
        err || !res ? reject(err ?? new Error('empty answer')) : resolve(res),
      );
    });
  } finally {
    client.close();
  }
}

async function main(argv: string[]): Promise<number> {
  let options: HealthOptions;
  try {
    options = parseHealthFlags(argv);
  } catch (err) {
    process.stderr.write(`health-check: ${(err as Error).message}\n`);
    return 2;
  }
  try {
    const verdict = judgeStatus(await askStatus(options), options.requireNetwork);
    process.stdout.write(`${verdict.healthy ? 'healthy' : 'unhealthy'}: ${verdict.summary}\n`);
    return verdict.healthy ? 0 : 1;
  } catch (err) {
    const e = err as grpc.ServiceError;
    process.stdout.write(`unhealthy: Status over ${options.endpoint.url} failed: ${e.details || e.message}\n`);
    return 1;
  }
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => process.exit(code));
}
