// The sandbox checkpoint: what the shim must still know about a pod when its pause container
// is gone (listing it as NOTREADY so kubelet cleans it up) and after a restart (its port
// mappings and host-network flag). One JSON document per sandbox, protected by a checksum
// over its content so a torn or edited file is detected rather than believed.
// Encoding and decoding are pure; ./store.ts does the file work.
import { createHash } from 'node:crypto';

export const CHECKPOINT_VERSION = 'v1';

export type PortProtocol = 'TCP' | 'UDP' | 'SCTP';

export interface CheckpointPortMapping {
  protocol: PortProtocol;
  containerPort: number;
  hostPort: number;
  hostIp: string;
}

/** Everything a checkpoint records, without its checksum. */
export interface SandboxCheckpoint {
  version: typeof CHECKPOINT_VERSION;
  /** The pause container's full Docker ID (also the file name; kept inside to catch swapped files). */
  id: string;
  name: string;
  namespace: string;
  uid: string;
  attempt: number;
  /** Nanoseconds since the epoch, as a decimal string (the pause container's creation time). */
  createdAt: string;
  runtimeHandler: string;
  hostNetwork: boolean;
  portMappings: CheckpointPortMapping[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /**
   * Read from cri-dockerd's checkpoint, ours being absent (./cri-dockerd-format.ts): only name,
   * namespace, hostNetwork and portMappings are known; uid, attempt, createdAt, runtimeHandler,
   * labels and annotations are blank and come from the pause container while it exists.
   */
  fromCriDockerd?: true;
}

type DecodeResult = { ok: true; checkpoint: SandboxCheckpoint } | { ok: false; reason: string };

function sortedRecord(r: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of Object.keys(r).sort()) out[k] = r[k]!;
  return out;
}

/** The content in one fixed key order, so the checksum does not depend on how it was built. */
function canonical(c: SandboxCheckpoint): SandboxCheckpoint {
  return {
    version: c.version,
    id: c.id,
    name: c.name,
    namespace: c.namespace,
    uid: c.uid,
    attempt: c.attempt,
    createdAt: c.createdAt,
    runtimeHandler: c.runtimeHandler,
    hostNetwork: c.hostNetwork,
    portMappings: c.portMappings.map((p) => ({
      protocol: p.protocol,
      containerPort: p.containerPort,
      hostPort: p.hostPort,
      hostIp: p.hostIp,
    })),
    labels: sortedRecord(c.labels),
    annotations: sortedRecord(c.annotations),
  };
}

export function checksumOf(c: SandboxCheckpoint): string {
  return createHash('sha256').update(JSON.stringify(canonical(c))).digest('hex');
}

export function encodeCheckpoint(c: SandboxCheckpoint): string {
  return `${JSON.stringify({ ...canonical(c), checksum: checksumOf(c) }, null, 2)}\n`;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStringMap = (v: unknown): v is Record<string, string> =>
  isRecord(v) && Object.values(v).every((x) => typeof x === 'string');
const isPort = (n: unknown, min: number): n is number => Number.isInteger(n) && (n as number) >= min && (n as number) <= 65535;

function portMappingOf(v: unknown): CheckpointPortMapping | undefined {
  if (!isRecord(v)) return undefined;
  const { protocol, containerPort, hostPort, hostIp } = v;
  if (protocol !== 'TCP' && protocol !== 'UDP' && protocol !== 'SCTP') return undefined;
  if (!isPort(containerPort, 1) || !isPort(hostPort, 0) || typeof hostIp !== 'string') return undefined;
  return { protocol, containerPort, hostPort, hostIp };
}

/** A checkpoint file's text as a JSON object of this version (ours and cri-dockerd's share both); never throws. */
export function parseVersionedObject(text: string): { ok: true; raw: Record<string, unknown> } | { ok: false; reason: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { ok: false, reason: `not JSON: ${(err as Error).message}` };
  }
  if (!isRecord(raw)) return { ok: false, reason: 'not a JSON object' };
  if (raw.version !== CHECKPOINT_VERSION) return { ok: false, reason: `unknown version ${JSON.stringify(raw.version)}` };
  return { ok: true, raw };
}

/** Parses and checks a checkpoint file's text; never throws. */
export function decodeCheckpoint(text: string): DecodeResult {
  const parsed = parseVersionedObject(text);
  if (!parsed.ok) return parsed;
  const { raw } = parsed;
  const { id, name, namespace, uid, attempt, createdAt, runtimeHandler, hostNetwork, portMappings, labels, annotations, checksum } =
    raw;
  if (
    typeof id !== 'string' ||
    typeof name !== 'string' ||
    typeof namespace !== 'string' ||
    typeof uid !== 'string' ||
    !Number.isInteger(attempt) ||
    typeof createdAt !== 'string' ||
    !/^\d+$/.test(createdAt) ||
    typeof runtimeHandler !== 'string' ||
    typeof hostNetwork !== 'boolean' ||
    !Array.isArray(portMappings) ||
    !isStringMap(labels) ||
    !isStringMap(annotations) ||
    typeof checksum !== 'string'
  ) {
    return { ok: false, reason: 'a field is missing or has the wrong type' };
  }
  const ports = portMappings.map(portMappingOf);
  if (ports.some((p) => p === undefined)) return { ok: false, reason: 'a port mapping is malformed' };
  const checkpoint: SandboxCheckpoint = {
    version: CHECKPOINT_VERSION,
    id,
    name,
    namespace,
    uid,
    attempt: attempt as number,
    createdAt,
    runtimeHandler,
    hostNetwork,
    portMappings: ports as CheckpointPortMapping[],
    labels,
    annotations,
  };
  if (checksumOf(checkpoint) !== checksum) return { ok: false, reason: 'checksum does not match the content' };
  return { ok: true, checkpoint };
}
