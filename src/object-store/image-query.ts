// The images part of the store's typed query (pure): which of Docker's images a caller wants,
// named the way a pod spec names one: by ID (or ID prefix), by name (any tag of that
// repository), by name:tag, or by name@digest. Docker's own "reference" filter compares familiar
// names, so "docker.io/library/busybox" would miss "busybox:latest"; normalised forms are compared
// instead.
import type { ImageSummary } from '../docker/types';
import { parseImageReference } from '../conventions/image-reference';

/** Which images a caller wants: every part given must hold. */
export interface ImageQuery {
  kind: 'image';
  /** An ID or ID prefix (with or without "sha256:"), or a reference ('' or absent: any). */
  image?: string;
}

function normalizedOrUndefined(text: string): ReturnType<typeof parseImageReference> | undefined {
  try {
    return parseImageReference(text);
  } catch {
    return undefined;
  }
}

/** Whether `ref` names the image by its ID (or an ID prefix) rather than by a name. */
export function namesImageById(ref: string, imageId: string): boolean {
  if (!/^(sha256:)?[a-f0-9]+$/.test(ref)) return false;
  return imageId.startsWith(ref.startsWith('sha256:') ? ref : `sha256:${ref}`);
}

/** The one image matcher, over what Docker's image list gives. */
export function matchesImageQuery(image: Pick<ImageSummary, 'Id' | 'RepoTags' | 'RepoDigests'>, q: ImageQuery): boolean {
  const wanted = (q.image ?? '').trim();
  if (wanted === '') return true;
  if (namesImageById(wanted, image.Id)) return true;
  const ref = normalizedOrUndefined(wanted);
  if (!ref) return false;
  if (ref.digest !== undefined) {
    return (image.RepoDigests ?? []).some((d) => normalizedOrUndefined(d)?.pullRef === ref.pullRef);
  }
  return (image.RepoTags ?? []).some((t) => {
    const tagged = normalizedOrUndefined(t);
    if (!tagged) return false;
    return ref.nameOnly ? tagged.repository === ref.repository : tagged.normalized === ref.normalized;
  });
}
