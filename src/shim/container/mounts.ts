// CRI mounts and devices as Docker bind specs and device mappings (../../status reads them
// back from inspect). Binds (not the Mounts API) because Docker creates a missing host directory for a
// bind, which kubelet relies on, and takes propagation and SELinux relabel as bind options.
import type { Device__Output, Mount__Output, MountPropagation__Output } from '../../cri/types';
import { InvalidArgumentError, UnimplementedError } from '../../errors';
import { quote } from '../../util/quote';

export interface DockerDevice {
  PathOnHost: string;
  PathInContainer: string;
  CgroupPermissions: string;
}

const PROPAGATION_OPTION: Record<MountPropagation__Output, string | undefined> = {
  PROPAGATION_PRIVATE: undefined,
  PROPAGATION_HOST_TO_CONTAINER: 'rslave',
  PROPAGATION_BIDIRECTIONAL: 'rshared',
};

function checkPath(field: string, p: string): void {
  if (p === '') throw new InvalidArgumentError(`${field} is required`);
  if (!p.startsWith('/')) throw new InvalidArgumentError(`${field}: ${quote(p)} must be an absolute path`);
  // ':' separates a bind's parts and ',' its options; Docker could not tell them apart.
  if (/[:,\0]/.test(p)) throw new InvalidArgumentError(`${field}: ${quote(p)} must not contain ':' or ','`);
}

/**
 * One Docker bind per mount. `resolveHostPath` turns a host path that is a symlink into its
 * target (so propagation applies to the real mount), and leaves a missing path as it is.
 */
export function toDockerBinds(field: string, mounts: Mount__Output[], resolveHostPath: (p: string) => string): string[] {
  return mounts.map((m, i) => {
    const f = `${field}[${i}]`;
    checkPath(`${f}.container_path`, m.containerPath);
    checkPath(`${f}.host_path`, m.hostPath);
    if (m.recursiveReadOnly) throw new UnimplementedError(`${f}.recursive_read_only: needs Docker API 1.44; this Docker speaks 1.41`);
    if (m.uidMappings.length > 0 || m.gidMappings.length > 0) throw new UnimplementedError(`${f}: Docker cannot make ID-mapped mounts`);
    if (m.image && m.image.image !== '') throw new UnimplementedError(`${f}.image: Docker 20.10 cannot mount an image as a volume`);
    const options: string[] = [];
    if (m.readonly) options.push('ro');
    if (m.selinuxRelabel) options.push('Z');
    const propagation = PROPAGATION_OPTION[m.propagation];
    if (propagation) options.push(propagation);
    const host = resolveHostPath(m.hostPath);
    return options.length > 0 ? `${host}:${m.containerPath}:${options.join(',')}` : `${host}:${m.containerPath}`;
  });
}

export function toDockerDevices(field: string, devices: Device__Output[]): DockerDevice[] {
  return devices.map((d, i) => {
    const f = `${field}[${i}]`;
    checkPath(`${f}.host_path`, d.hostPath);
    checkPath(`${f}.container_path`, d.containerPath);
    const permissions = d.permissions === '' ? 'rwm' : d.permissions;
    if (!/^[rwm]{1,3}$/.test(permissions) || new Set(permissions).size !== permissions.length) {
      throw new InvalidArgumentError(`${f}.permissions: ${quote(d.permissions)} must be letters of "rwm"`);
    }
    return { PathOnHost: d.hostPath, PathInContainer: d.containerPath, CgroupPermissions: permissions };
  });
}

