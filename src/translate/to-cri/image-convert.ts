// Docker image documents to CRI Image messages (pure functions).
import { parseUserSpec } from '../../conventions/user-ids';
import type { Image } from '../../cri/types';
import type { ImageInspect, ImageSummary } from '../../docker/types';

const NO_TAG = '<none>:<none>';
const NO_DIGEST = '<none>@<none>';

/** What kubelet learns about an image's user: a numeric uid, or a name to resolve later. */
interface ImageUser {
  uid?: { value: string };
  username: string;
}

/**
 * The image's configured user ("name", "1000", "1000:1000", "name:group"), read as Docker reads
 * it (../../conventions/user-ids.ts): a uid only where Docker runs that uid, anything else a name,
 * untrimmed. Only the user part matters to kubelet (runAsNonRoot refuses uid 0 and any name; it
 * passes a uid back as run_as_user); an empty user means the runtime default (root).
 */
export function imageUser(configUser: string | undefined): ImageUser {
  const { user } = parseUserSpec(configUser ?? '');
  if (user === undefined) return { username: '' };
  return 'id' in user ? { uid: { value: String(user.id) }, username: '' } : { username: user.name };
}

/** The fields list and inspect share; `<none>` placeholders are not real tags or digests. */
interface DockerImageCommon {
  Id: string;
  RepoTags?: readonly string[] | null;
  RepoDigests?: readonly string[] | null;
  Size?: number;
}

function criImage(image: DockerImageCommon, user: ImageUser, pinned: boolean): Image {
  return {
    id: image.Id,
    repoTags: (image.RepoTags ?? []).filter((t) => t !== NO_TAG),
    repoDigests: (image.RepoDigests ?? []).filter((d) => d !== NO_DIGEST),
    size: String(Math.max(0, Math.trunc(image.Size ?? 0))),
    ...user,
    spec: { image: image.Id, annotations: {} },
    pinned,
  };
}

/**
 * An inspected image as CRI reports it; `pinned` for images kubelet must never garbage-collect.
 * `listedSize`: the size Docker's image list gives, where it differs from the inspect's (the
 * containerd store's list adds the unpacked snapshots to the blobs).
 */
export function imageFromInspect(image: ImageInspect, pinned: boolean, listedSize?: number): Image {
  return criImage(listedSize === undefined ? image : { ...image, Size: listedSize }, imageUser(image.Config?.User), pinned);
}

/**
 * A listed image as CRI reports it. Docker's list omits the image config, hence no user:
 * kubelet reads the user from ImageStatus, never from the list.
 */
export function imageFromSummary(image: ImageSummary, pinned: boolean): Image {
  return criImage(image, { username: '' }, pinned);
}

/** The fields of an image's own config (Docker's image spec, a superset of OCI's). */
const IMAGE_CONFIG_FIELDS = ['User', 'ExposedPorts', 'Env', 'Entrypoint', 'Cmd', 'Volumes', 'WorkingDir', 'Labels', 'StopSignal', 'ArgsEscaped', 'Healthcheck', 'OnBuild', 'Shell'] as const;

function isUnset(value: unknown): boolean {
  if (value === null || value === undefined || value === '' || value === false) return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === 'object' && Object.keys(value).length === 0;
}

/**
 * The image's config as API 1.52 gives it, whichever API answered: up to 1.49 Docker adds a
 * container's fields (Hostname, Tty, Image, ...; dropped in 1.50), and up to 1.51 it gives
 * unset fields as empty values (omitted from 1.52).
 */
export function imageConfigOf(config: ImageInspect['Config'] | null | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const given = (config ?? {}) as unknown as Record<string, unknown>;
  for (const field of IMAGE_CONFIG_FIELDS) if (!isUnset(given[field])) out[field] = given[field];
  return out;
}

/** Docker's zero time: API 1.43 and older give it for an image config without a creation time, 1.44 leaves Created out. */
function imageCreated(created: string | undefined): string | undefined {
  return created === undefined || created === '' || created.startsWith('0001-01-01') ? undefined : created;
}

/** The image's config, for ImageStatus verbose info (kubelet and crictl show it as JSON). */
export function verboseImageInfo(image: ImageInspect): Record<string, string> {
  return {
    info: JSON.stringify({
      id: image.Id,
      created: imageCreated(image.Created),
      architecture: image.Architecture,
      os: image.Os,
      config: imageConfigOf(image.Config),
      rootfs: image.RootFS ?? {},
    }),
  };
}
