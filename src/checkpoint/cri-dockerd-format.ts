// cri-dockerd's sandbox checkpoint, `<root>/sandbox/<sandbox id>` (no suffix), read and written
// so a node can move from cri-dockerd to the shim and back with its pods. Pure.
//
// The file is JSON: {"version":"v1","name","namespace","data":{"port_mappings":[{"protocol":
// "tcp","container_port","host_port","host_ip"}],"host_network"},"checksum"}, the data fields
// and the mapping fields omitted when empty. The checksum covers `data` only (name and
// namespace are not protected): FNV-1a 32-bit over go-spew's `%#v` rendering of the Go value
// cri-dockerd decodes it into, whose pointers and nil slices show in the text. cri-dockerd
// deletes any file in that directory whose checksum does not verify, so ours must be exact;
// test/unit/checkpoint/cri-dockerd-format.test.ts holds vectors computed by go-spew itself.
import type { CheckpointPortMapping, PortProtocol, SandboxCheckpoint } from './checkpoint';
import { CHECKPOINT_VERSION, parseVersionedObject } from './checkpoint';

/**
 * A port mapping as cri-dockerd holds it after decoding: each pointer field undefined when the
 * JSON left it out (a nil pointer renders differently from a zero).
 */
export interface GoPortMapping {
  protocol: string | undefined;
  containerPort: number | undefined;
  hostPort: number | undefined;
  hostIp: string;
}

/** cri-dockerd's CheckpointData: `portMappings` undefined is a nil slice, [] an empty one. */
export interface GoCheckpointData {
  portMappings: GoPortMapping[] | undefined;
  hostNetwork: boolean;
}

/** What cri-dockerd's checkpoint records about a sandbox. */
interface CriDockerdCheckpoint {
  name: string;
  namespace: string;
  hostNetwork: boolean;
  portMappings: CheckpointPortMapping[];
}

type CriDockerdDecodeResult = { ok: true; checkpoint: CriDockerdCheckpoint } | { ok: false; reason: string };

const goPointer = (type: string, value: number | string | undefined): string => `(*${type})${value === undefined ? '<nil>' : String(value)}`;

/**
 * go-spew's `%#v` of a CheckpointData value (DisableMethods; the other options do not change
 * this type's text): the struct with its type, each field `Name:(type)value`, strings raw,
 * slice elements (pointers) as `<*>{...}`, nil as `<nil>`.
 */
export function spewCheckpointData(d: GoCheckpointData): string {
  const mappings =
    d.portMappings === undefined
      ? '<nil>'
      : `[${d.portMappings
          .map(
            (m) =>
              `<*>{Protocol:${goPointer('config.Protocol', m.protocol)} ContainerPort:${goPointer('int32', m.containerPort)} ` +
              `HostPort:${goPointer('int32', m.hostPort)} HostIP:(string)${m.hostIp}}`,
          )
          .join(' ')}]`;
  return `(core.CheckpointData){PortMappings:([]*config.PortMapping)${mappings} HostNetwork:(bool)${d.hostNetwork}}`;
}

/** FNV-1a, 32 bits (Go's hash/fnv New32a). */
export function fnv1a32(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h;
}

export function criDockerdChecksum(d: GoCheckpointData): number {
  return fnv1a32(Buffer.from(spewCheckpointData(d), 'utf8'));
}

const toGoProtocol = (p: PortProtocol): string => p.toLowerCase();

/** The Go value cri-dockerd would build for these facts (as its RunPodSandbox does: every pointer set). */
function goDataOf(c: Pick<CriDockerdCheckpoint, 'hostNetwork' | 'portMappings'>): GoCheckpointData {
  return {
    portMappings:
      c.portMappings.length === 0
        ? undefined
        : c.portMappings.map((p) => ({ protocol: toGoProtocol(p.protocol), containerPort: p.containerPort, hostPort: p.hostPort, hostIp: p.hostIp })),
    hostNetwork: c.hostNetwork,
  };
}

/** The file cri-dockerd would have written for this sandbox. */
export function encodeCriDockerdCheckpoint(c: CriDockerdCheckpoint): string {
  const go = goDataOf(c);
  const data: Record<string, unknown> = {};
  if (go.portMappings) {
    data.port_mappings = go.portMappings.map((m) => ({
      protocol: m.protocol,
      container_port: m.containerPort,
      host_port: m.hostPort,
      ...(m.hostIp !== '' && { host_ip: m.hostIp }),
    }));
  }
  if (go.hostNetwork) data.host_network = true;
  return JSON.stringify({ version: CHECKPOINT_VERSION, name: c.name, namespace: c.namespace, data, checksum: criDockerdChecksum(go) });
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInt32 = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= -0x80000000 && (v as number) <= 0x7fffffff;
const PROTOCOLS: Readonly<Record<string, PortProtocol>> = { tcp: 'TCP', udp: 'UDP', sctp: 'SCTP' };

/** A JSON field Go decodes into a pointer: absent and null leave it nil. */
function optional<T>(v: unknown, is: (x: unknown) => x is T): { ok: true; value: T | undefined } | { ok: false } {
  if (v === undefined || v === null) return { ok: true, value: undefined };
  return is(v) ? { ok: true, value: v } : { ok: false };
}

const isString = (v: unknown): v is string => typeof v === 'string';

/** A mapping as Go decodes it; undefined when Go would refuse the JSON. */
function goPortMappingOf(v: unknown): GoPortMapping | undefined {
  if (!isRecord(v)) return undefined;
  const protocol = optional(v.protocol, isString);
  const containerPort = optional(v.container_port, isInt32);
  const hostPort = optional(v.host_port, isInt32);
  const hostIp = optional(v.host_ip, isString);
  if (!protocol.ok || !containerPort.ok || !hostPort.ok || !hostIp.ok) return undefined;
  return { protocol: protocol.value, containerPort: containerPort.value, hostPort: hostPort.value, hostIp: hostIp.value ?? '' };
}

/** The mapping in the shim's terms, when it is one cri-dockerd could have written. */
function portMappingOf(m: GoPortMapping): CheckpointPortMapping | undefined {
  const protocol = m.protocol === undefined ? undefined : PROTOCOLS[m.protocol];
  const { containerPort, hostPort } = m;
  if (!protocol || containerPort === undefined || hostPort === undefined) return undefined;
  if (containerPort < 1 || containerPort > 65535 || hostPort < 0 || hostPort > 65535) return undefined;
  return { protocol, containerPort, hostPort, hostIp: m.hostIp };
}

/**
 * Parses a cri-dockerd checkpoint file and verifies its checksum as cri-dockerd does (over the
 * data as Go decodes it); never throws. A file cri-dockerd would accept but could not have
 * written (a null or incomplete port mapping, an unknown protocol) is refused too.
 */
export function decodeCriDockerdCheckpoint(text: string): CriDockerdDecodeResult {
  const parsed = parseVersionedObject(text);
  if (!parsed.ok) return parsed;
  const { raw } = parsed;
  const { name, namespace, data = {}, checksum } = raw;
  if (typeof name !== 'string' || typeof namespace !== 'string' || !Number.isSafeInteger(checksum) || (checksum as number) < 0) {
    return { ok: false, reason: 'name, namespace or checksum is missing or has the wrong type' };
  }
  if (!isRecord(data)) return { ok: false, reason: 'data is not an object' };
  const rawMappings = data.port_mappings;
  const hostNetwork = optional(data.host_network, (v): v is boolean => typeof v === 'boolean');
  if (!hostNetwork.ok) return { ok: false, reason: 'host_network is not a boolean' };
  if (rawMappings !== undefined && rawMappings !== null && !Array.isArray(rawMappings)) return { ok: false, reason: 'port_mappings is not a list' };
  const goMappings = rawMappings ? (rawMappings as unknown[]).map((m) => (m === null ? null : goPortMappingOf(m))) : undefined;
  if (goMappings?.some((m) => m === undefined)) return { ok: false, reason: 'a port mapping has a field of the wrong type' };
  if (goMappings?.some((m) => m === null)) return { ok: false, reason: 'a port mapping is null' };
  const go: GoCheckpointData = { portMappings: goMappings as GoPortMapping[] | undefined, hostNetwork: hostNetwork.value ?? false };
  if (criDockerdChecksum(go) !== checksum) return { ok: false, reason: 'checksum does not match the data' };
  const portMappings = (go.portMappings ?? []).map(portMappingOf);
  if (portMappings.some((p) => p === undefined)) return { ok: false, reason: 'a port mapping is incomplete or out of range' };
  return { ok: true, checkpoint: { name, namespace, hostNetwork: go.hostNetwork, portMappings: portMappings as CheckpointPortMapping[] } };
}

/**
 * The sandbox checkpoint the shim works with, from cri-dockerd's alone. Only name, namespace,
 * host network and port mappings are known; the rest is blank and marked so, and comes from
 * the pause container's Docker name and labels while it exists (as cri-dockerd lists such a
 * sandbox when its container is gone: name and namespace only).
 */
export function adoptCriDockerdCheckpoint(id: string, c: CriDockerdCheckpoint): SandboxCheckpoint {
  return {
    version: CHECKPOINT_VERSION,
    id,
    name: c.name,
    namespace: c.namespace,
    uid: '',
    attempt: 0,
    createdAt: '0',
    runtimeHandler: '',
    hostNetwork: c.hostNetwork,
    portMappings: c.portMappings,
    labels: {},
    annotations: {},
    fromCriDockerd: true,
  };
}
