// Docker container names of pods and containers, as dockershim made them (kubelet tools and
// people grep for them): k8s_POD_<pod>_<namespace>_<uid>_<attempt> for a sandbox's pause
// container and k8s_<container>_<pod>_<namespace>_<uid>_<attempt> for a container.
// Being the same as cri-dockerd's keeps the shim a drop-in replacement on a node with pods.

const PREFIX = 'k8s';
const SANDBOX_CONTAINER_NAME = 'POD';
const DELIMITER = '_';

/** Who a pod is: CRI's PodSandboxMetadata, and the parts of its pause container's name. */
export interface PodMetadata {
  name: string;
  namespace: string;
  uid: string;
  attempt: number;
}

type SandboxNameParts = PodMetadata;

interface ContainerNameParts {
  containerName: string;
  attempt: number;
  pod: Omit<SandboxNameParts, 'attempt'>;
}

export function sandboxDockerName(m: SandboxNameParts): string {
  return [PREFIX, SANDBOX_CONTAINER_NAME, m.name, m.namespace, m.uid, String(m.attempt)].join(DELIMITER);
}

export function containerDockerName(containerName: string, attempt: number, pod: Omit<SandboxNameParts, 'attempt'>): string {
  return [PREFIX, containerName, pod.name, pod.namespace, pod.uid, String(attempt)].join(DELIMITER);
}

/** A name as Docker reports it ('/k8s_…', with a leading '/'), without the '/': the name it was created with. */
export function bareDockerName(dockerName: string): string {
  return dockerName.startsWith('/') ? dockerName.slice(1) : dockerName;
}

function parts(dockerName: string): string[] | undefined {
  const p = bareDockerName(dockerName).split(DELIMITER);
  return p.length === 6 && p[0] === PREFIX ? p : undefined;
}

function attemptOf(text: string): number | undefined {
  return /^\d+$/.test(text) ? Number(text) : undefined;
}

export function parseSandboxDockerName(dockerName: string): SandboxNameParts | undefined {
  const p = parts(dockerName);
  if (!p || p[1] !== SANDBOX_CONTAINER_NAME) return undefined;
  const attempt = attemptOf(p[5]!);
  return attempt === undefined ? undefined : { name: p[2]!, namespace: p[3]!, uid: p[4]!, attempt };
}

export function parseContainerDockerName(dockerName: string): ContainerNameParts | undefined {
  const p = parts(dockerName);
  if (!p) return undefined;
  const attempt = attemptOf(p[5]!);
  return attempt === undefined
    ? undefined
    : { containerName: p[1]!, attempt, pod: { name: p[2]!, namespace: p[3]!, uid: p[4]! } };
}
