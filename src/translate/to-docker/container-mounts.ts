// CRI mounts and devices as Docker bind specs and device mappings (../to-cri reads them
// back from inspect). Binds, because Docker creates a missing host directory for a bind, which
// kubelet relies on, and takes propagation and SELinux relabel as bind options. Except for a
// read-only mount on an engine with bind options (API 1.44): there a read-only bind is made
// recursively read-only by default, so each one goes in HostConfig.Mounts and says which it is
// (CRI's readonly alone is not recursive), making its mount point as a bind does. SELinux
// relabelling is asked of Docker only where its SELinux labelling is on: elsewhere Docker (as
// containerd) does nothing with it, and a relabelled bind could not say whether it is recursive.
import type { CDIDevice__Output, Device__Output, Mount__Output, MountPropagation__Output } from '../../cri/types';
import { BIND_OPTIONS_API_VERSION, IMAGE_MOUNT_API_VERSION, IMAGE_SUBPATH_API_VERSION, type EngineFeatures } from '../../docker/docker-version';
import type { DeviceRequest, DockerMount } from '../../docker/types';
import { InvalidArgumentError, UnimplementedError } from '../../errors';
import { quote } from '../../util/quote';

interface DockerDevice {
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

interface DockerMounts {
  /** HostConfig.Binds */
  binds: string[];
  /** HostConfig.Mounts: the read-only binds where bind options say whether they are recursive, and images (kubelet's image volumes). */
  mounts: DockerMount[];
}

/** mount_options that are propagation modes, as CRI's propagation field says them. */
const PROPAGATION_OF_OPTION: ReadonlyMap<string, MountPropagation__Output> = new Map([
  ['rprivate', 'PROPAGATION_PRIVATE'],
  ['rslave', 'PROPAGATION_HOST_TO_CONTAINER'],
  ['rshared', 'PROPAGATION_BIDIRECTIONAL'],
]);

/**
 * The mount with its mount_options (CRI v1.37) applied, or a refusal naming the option. Docker
 * has no noexec, nosuid or nodev for a bind (neither Binds' options nor Mounts' BindOptions, up
 * to API 1.51), the options kubelet sends: those, and any other option Docker has no way to
 * apply, are refused (Status says mount_options is unsupported, so kubelet sends none). The
 * options Docker does apply are those CRI's own fields already say, and become those fields:
 * ro and rro (readonly, recursive_read_only), rw, rbind (every bind here is recursive) and the
 * recursive propagation modes; an option that contradicts a field is refused.
 */
function withMountOptions(f: string, m: Mount__Output): Mount__Output {
  const out = { ...m };
  const propagations = new Set<MountPropagation__Output>(m.propagation === 'PROPAGATION_PRIVATE' ? [] : [m.propagation]);
  let writable = false;
  m.mountOptions.forEach((option, j) => {
    const field = `${f}.mount_options[${j}]`;
    const propagation = PROPAGATION_OF_OPTION.get(option);
    if (option === 'rbind') return;
    if (option === 'ro' || option === 'rro') {
      out.readonly = true;
      if (option === 'rro') out.recursiveReadOnly = true;
    } else if (option === 'rw') {
      writable = true;
    } else if (propagation) {
      propagations.add(propagation);
      if (propagations.size > 1) throw new InvalidArgumentError(`${field}: ${quote(option)} contradicts the mount's other propagation (${[...propagations].join(', ')})`);
      out.propagation = propagation;
    } else {
      throw new InvalidArgumentError(`${field}: Docker cannot apply ${quote(option)} to a bind mount (it applies ro, rro, rw, rbind, rprivate, rslave and rshared)`);
    }
    if (writable && out.readonly) throw new InvalidArgumentError(`${field}: ${quote(option)} makes the mount both writable (rw) and read-only (ro, rro or readonly)`);
  });
  return out;
}

/** An image volume (CRI Mount.image): the image's files, read-only, where Docker can mount an image. */
function imageMount(f: string, m: Mount__Output, engine: EngineFeatures): DockerMount {
  if (!engine.imageMounts) throw new InvalidArgumentError(`${f}.image: this Docker cannot mount an image (it needs API ${IMAGE_MOUNT_API_VERSION}, Docker 28)`);
  checkPath(`${f}.container_path`, m.containerPath);
  const sub = m.imageSubPath;
  if (sub !== '') {
    if (!engine.imageSubpaths) throw new InvalidArgumentError(`${f}.image_sub_path: this Docker cannot mount a path inside an image (it needs API ${IMAGE_SUBPATH_API_VERSION})`);
    if (sub.startsWith('/') || sub.includes('\0') || sub.split('/').includes('..')) {
      throw new InvalidArgumentError(`${f}.image_sub_path: ${quote(sub)} must be a path inside the image, relative and without '..'`);
    }
  }
  return { Type: 'image', Source: m.image!.image, Target: m.containerPath, ReadOnly: true, ...(sub !== '' ? { ImageOptions: { Subpath: sub } } : {}) };
}

/**
 * One Docker bind per mount. `resolveHostPath` turns a host path that is a symlink into its
 * target (so propagation applies to the real mount), and leaves a missing path as it is.
 */
export function toDockerMounts(field: string, mounts: Mount__Output[], resolveHostPath: (p: string) => string, engine: EngineFeatures): DockerMounts {
  const out: DockerMounts = { binds: [], mounts: [] };
  mounts.forEach((asked, i) => {
    const f = `${field}[${i}]`;
    if (asked.uidMappings.length > 0 || asked.gidMappings.length > 0) throw new UnimplementedError(`${f}: Docker cannot make ID-mapped mounts`);
    const m = withMountOptions(f, asked);
    if (m.image && m.image.image !== '') {
      out.mounts.push(imageMount(f, m, engine));
      return;
    }
    checkPath(`${f}.container_path`, m.containerPath);
    checkPath(`${f}.host_path`, m.hostPath);
    const relabel = m.selinuxRelabel && engine.selinux;
    if (m.recursiveReadOnly) {
      // As the CRI says (and containerd checks): only a read-only, private mount can be one.
      if (!m.readonly) throw new InvalidArgumentError(`${f}.recursive_read_only needs readonly`);
      if (m.propagation !== 'PROPAGATION_PRIVATE') throw new InvalidArgumentError(`${f}.recursive_read_only needs private propagation, not ${m.propagation}`);
      if (!engine.recursiveReadOnlyMounts) {
        throw new InvalidArgumentError(`${f}.recursive_read_only: this Docker cannot make recursively read-only mounts (it needs API ${BIND_OPTIONS_API_VERSION} and Linux 5.12)`);
      }
      if (relabel) throw new InvalidArgumentError(`${f}: Docker cannot relabel a recursively read-only mount (selinux_relabel)`);
    }
    const host = resolveHostPath(m.hostPath);
    const propagation = PROPAGATION_OPTION[m.propagation];
    if (m.readonly && engine.bindOptions && !relabel) {
      out.mounts.push({
        Type: 'bind',
        Source: host,
        Target: m.containerPath,
        ReadOnly: true,
        BindOptions: {
          ...(propagation ? { Propagation: propagation } : {}),
          CreateMountpoint: true,
          ...(m.recursiveReadOnly ? { ReadOnlyForceRecursive: true } : { ReadOnlyNonRecursive: true }),
        },
      });
      return;
    }
    const options: string[] = [];
    if (m.readonly) options.push('ro');
    if (relabel) options.push('Z');
    if (propagation) options.push(propagation);
    out.binds.push(options.length > 0 ? `${host}:${m.containerPath}:${options.join(',')}` : `${host}:${m.containerPath}`);
  });
  return out;
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


/** A CDI device's fully qualified name, as the CDI spec writes it: vendor/class=name. */
const CDI_NAME = /^[A-Za-z0-9][A-Za-z0-9.-]*\/[A-Za-z0-9][A-Za-z0-9_.-]*=[A-Za-z0-9][A-Za-z0-9_.:-]*$/;

/** CRI's CDI devices as one Docker device request for its "cdi" driver, where the engine has CDI on. */
export function toCdiDeviceRequests(field: string, devices: CDIDevice__Output[], engine: EngineFeatures): DeviceRequest[] {
  if (devices.length === 0) return [];
  if (!engine.cdi) throw new InvalidArgumentError(`${field}: this Docker does not inject CDI devices (CDI is off, or it is older than Docker 25)`);
  const names = devices.map((d, i) => {
    if (!CDI_NAME.test(d.name)) throw new InvalidArgumentError(`${field}[${i}].name: ${quote(d.name)} is not a CDI device name (vendor/class=name)`);
    return d.name;
  });
  return [{ Driver: 'cdi', DeviceIDs: names }];
}
