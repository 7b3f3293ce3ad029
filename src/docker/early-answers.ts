// Docker's version and info, asked by main.js before it loads the shim: Docker takes 30-50 ms
// to answer both here (for each it runs runc and docker-init to learn their versions), and the
// bundle takes about as long to compile and run, so the one now happens during the other
// instead of after it. Start-up uses the answers only if they came from the endpoint the parsed
// flags name (app.ts); any failure, or another endpoint, leaves start-up to ask as it always
// did. This file loads before the bundle, so it uses nothing but Node's http and the endpoint
// parser.
import * as http from 'node:http';
import { DEFAULT_DOCKER_ENDPOINT, parseEndpoint } from '../config/endpoint';

/** A daemon this slow is left to start-up's own requests, with their deadline and retries. */
const EARLY_TIMEOUT_MS = 2_000;
/** So that these two requests can be told apart in Docker's logs (and by the tests). */
export const EARLY_USER_AGENT = 'cri-docker-shim (before loading)';

/** A JSON document Docker answered, and the seconds from asking until this process read it. */
interface EarlyAnswer {
  document: unknown;
  seconds: number;
}

export interface EarlyDockerAnswers {
  /** The unix socket they were asked on. */
  socketPath: string;
  /** GET /version and GET /info. */
  version: Promise<EarlyAnswer>;
  info: Promise<EarlyAnswer>;
}

/**
 * The Docker endpoint the flags will most likely name: --docker-endpoint if given on the command
 * line, else DOCKER_HOST, else the default. A --config file can still name another; that is
 * found out once the flags are parsed, and then these answers go unused.
 */
export function likelyDockerEndpoint(argv: readonly string[], env: NodeJS.ProcessEnv): string {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg.startsWith('--docker-endpoint=')) return arg.slice('--docker-endpoint='.length);
    if (arg === '--docker-endpoint' && i + 1 < argv.length) return argv[i + 1]!;
  }
  return env.DOCKER_HOST || DEFAULT_DOCKER_ENDPOINT;
}

/** Asks Docker at the likely endpoint for its version and info; undefined if that is no unix socket. */
export function askDockerEarly(argv: readonly string[], env: NodeJS.ProcessEnv): EarlyDockerAnswers | undefined {
  // Those print and exit; a pending request would only hold them up.
  if (argv.some((a) => a === '--help' || a === '-h' || a === '--version')) return undefined;
  let socketPath: string;
  try {
    const endpoint = parseEndpoint(likelyDockerEndpoint(argv, env));
    if (endpoint.kind !== 'unix') return undefined;
    socketPath = endpoint.path;
  } catch {
    return undefined;
  }
  const answers = { socketPath, version: getJson(socketPath, '/version'), info: getJson(socketPath, '/info') };
  // Nobody may ever look at them (a --config naming another endpoint, or a bad flag).
  answers.version.catch(() => undefined);
  answers.info.catch(() => undefined);
  return answers;
}

function getJson(socketPath: string, path: string): Promise<EarlyAnswer> {
  const asked = performance.now();
  return new Promise((resolve, reject) => {
    // No agent: its server-name check would cost a first-use regex compile for nothing here.
    const req = http.get({ socketPath, path, agent: false, timeout: EARLY_TIMEOUT_MS, headers: { 'User-Agent': EARLY_USER_AGENT } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`GET ${path}: Docker answered ${res.statusCode}`));
        try {
          resolve({ document: JSON.parse(Buffer.concat(chunks).toString('utf8')), seconds: (performance.now() - asked) / 1000 });
        } catch (err) {
          reject(err as Error);
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer within ${EARLY_TIMEOUT_MS} ms`)));
    req.on('error', reject);
  });
}
