// Which images a ListImages/StreamImages filter keeps (pure). The filter names an image the
// way a pod spec would: by ID (or ID prefix), by name (any tag of that repository), by
// name:tag, or by name@digest. Docker's own "reference" filter compares familiar names, so
// "docker.io/library/busybox" would miss "busybox:latest"; we compare normalised forms instead.
import type { Image } from '../../cri/types';
import { parseImageReference } from './image-reference';

function normalizedOrUndefined(text: string): ReturnType<typeof parseImageReference> | undefined {
  try {
    return parseImageReference(text);
  } catch {
    return undefined;
  }
}

export function imageMatchesFilter(image: Image, filter: string): boolean {
  const wanted = filter.trim();
  if (wanted === '') return true;
  const id = image.id ?? '';
  if (/^(sha256:)?[a-f0-9]+$/.test(wanted) && (id === wanted || id.startsWith(wanted.startsWith('sha256:') ? wanted : `sha256:${wanted}`))) {
    return true;
  }
  const ref = normalizedOrUndefined(wanted);
  if (!ref) return false;
  if (ref.digest !== undefined) {
    return (image.repoDigests ?? []).some((d) => normalizedOrUndefined(d)?.pullRef === ref.pullRef);
  }
  return (image.repoTags ?? []).some((t) => {
    const tagged = normalizedOrUndefined(t);
    if (!tagged) return false;
    return ref.nameOnly ? tagged.repository === ref.repository : tagged.normalized === ref.normalized;
  });
}
