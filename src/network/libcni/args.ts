// What the shim hands a CNI plugin about a pod besides its config (pure): CNI_ARGS with
// kubelet's K8S_* keys, and the runtime capability arguments (portMappings, bandwidth,
// ipRanges, dns) that plugins declaring them receive in runtimeConfig.
import { isIP } from 'node:net';
import type { PodDns, PodRef, PortMapping } from '../network-host';

export function cniArgs(pod: PodRef): Array<[string, string]> {
  return [
    ['IgnoreUnknown', '1'],
    ['K8S_POD_NAMESPACE', pod.podNamespace],
    ['K8S_POD_NAME', pod.podName],
    ['K8S_POD_INFRA_CONTAINER_ID', pod.sandboxId],
    ['K8S_POD_UID', pod.podUid],
  ];
}

/** CNI_ARGS as the environment carries it: K=V pairs joined with ';'. */
export function cniArgsEnv(args: ReadonlyArray<[string, string]>): string {
  return args.map(([k, v]) => `${k}=${v.replace(/[;=]/g, '_')}`).join(';');
}

const INGRESS_BANDWIDTH_ANNOTATION = 'kubernetes.io/ingress-bandwidth';
const EGRESS_BANDWIDTH_ANNOTATION = 'kubernetes.io/egress-bandwidth';

/** kubelet refuses shaping outside this range (bits per second). */
const MIN_BANDWIDTH = 1_000;
const MAX_BANDWIDTH = 1e15;
/** kubelet gives no burst limit of its own: the largest burst the bandwidth plugin takes. */
export const UNLIMITED_BURST = 2 ** 31 - 1;

const SUFFIX: Record<string, number> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

class BandwidthAnnotationError extends Error {}

/** A Kubernetes quantity such as "10M" or "1.5Gi" as a number, rounded up. */
export function parseQuantity(text: string): number {
  const m = /^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/.exec(text.trim());
  if (!m) throw new BandwidthAnnotationError(`${JSON.stringify(text.slice(0, 40))} is not a quantity`);
  return Math.ceil(Number(m[1]) * SUFFIX[m[2] ?? '']!);
}

interface BandwidthArgs {
  ingressRate?: number;
  ingressBurst?: number;
  egressRate?: number;
  egressBurst?: number;
}

function rateOf(annotations: Readonly<Record<string, string>>, key: string): number | undefined {
  const text = annotations[key];
  if (text === undefined) return undefined;
  const rate = parseQuantity(text);
  if (rate < MIN_BANDWIDTH || rate > MAX_BANDWIDTH) {
    throw new BandwidthAnnotationError(`${key}: ${text} is outside 1k to 1P bits per second`);
  }
  return rate;
}

/** The bandwidth capability from the pod's annotations; undefined when it has neither. */
export function bandwidthOf(annotations: Readonly<Record<string, string>>): BandwidthArgs | undefined {
  const ingress = rateOf(annotations, INGRESS_BANDWIDTH_ANNOTATION);
  const egress = rateOf(annotations, EGRESS_BANDWIDTH_ANNOTATION);
  if (ingress === undefined && egress === undefined) return undefined;
  const out: BandwidthArgs = {};
  if (ingress !== undefined) Object.assign(out, { ingressRate: ingress, ingressBurst: UNLIMITED_BURST });
  if (egress !== undefined) Object.assign(out, { egressRate: egress, egressBurst: UNLIMITED_BURST });
  return out;
}

export interface CapabilityArgs {
  portMappings?: Array<{ hostPort: number; containerPort: number; protocol: string; hostIP?: string }>;
  bandwidth?: BandwidthArgs;
  ipRanges?: Array<Array<{ subnet: string }>>;
  dns?: { servers: string[]; searches: string[]; options: string[] };
}

export function capabilityArgs(
  pod: PodRef,
  portMappings: readonly PortMapping[],
  podCidrs: readonly string[],
  dns: PodDns | undefined,
): CapabilityArgs {
  const args: CapabilityArgs = {};
  const withHostPort = portMappings.filter((m) => m.hostPort > 0);
  if (withHostPort.length > 0) {
    args.portMappings = withHostPort.map((m) => ({
      hostPort: m.hostPort,
      containerPort: m.containerPort,
      protocol: m.protocol.toLowerCase(),
      ...(m.hostIp !== '' && isIP(m.hostIp) !== 0 ? { hostIP: m.hostIp } : {}),
    }));
  }
  const bandwidth = bandwidthOf(pod.annotations);
  if (bandwidth) args.bandwidth = bandwidth;
  if (podCidrs.length > 0) args.ipRanges = podCidrs.map((subnet) => [{ subnet }]);
  if (dns) args.dns = { servers: dns.servers, searches: dns.searches, options: dns.options };
  return args;
}

/** Only what the plugin declares, under runtimeConfig (none: no runtimeConfig at all). */
export function runtimeConfigFor(declared: ReadonlySet<string>, args: CapabilityArgs): Record<string, unknown> | undefined {
  const picked = Object.entries(args).filter(([k]) => declared.has(k));
  return picked.length > 0 ? Object.fromEntries(picked) : undefined;
}
