// What Docker takes as a numeric user or group ID, so the shim reads an image's USER as Docker
// will: the daemon treats a user or group part as an ID only when Go's strconv.Atoi takes it, and
// looks anything else up as a name in the image's /etc/passwd or /etc/group, trimming nothing.
// A name found there runs as whatever ID that line holds (root, in a hostile image), and an ID
// past the range below matched in that file is cut to 32 bits (2^32 is root). So the shim takes as
// an ID only what is one beyond doubt, ASCII digits within Docker's range, and reports anything
// else ("1000\uFEFF", "+1000", "4294967296") as a name, which kubelet cannot verify and so
// refuses under runAsNonRoot.

/**
 * The largest user or group ID: Docker refuses a larger one only when the container starts
 * ("uids and gids must be in range 0-2147483647", a 500), and Kubernetes' validation has the same bound.
 */
export const MAX_UID_GID = 2_147_483_647;

const DIGITS = /^[0-9]+$/;

/** `text` as a user or group ID (0..MAX_UID_GID), or undefined when it is anything else. Pure. */
export function numericId(text: string): number | undefined {
  if (!DIGITS.test(text)) return undefined;
  const id = Number(text);
  return id <= MAX_UID_GID ? id : undefined;
}

/** A user or group as Docker reads it: an ID, or a name to look up in the image. */
type UserOrGroup = { id: number } | { name: string };

/**
 * Docker's `user[:group]` (an image's USER, a container's User): each part an ID or a name; an
 * absent or empty part is undefined. Split at colons and fields past the second ignored, as
 * Docker's user lookup (moby/sys/user's parseLine) splits it.
 */
export function parseUserSpec(spec: string): { user?: UserOrGroup; group?: UserOrGroup } {
  const [user = '', group] = spec.split(':');
  const part = (text: string | undefined): UserOrGroup | undefined => {
    if (text === undefined || text === '') return undefined;
    const id = numericId(text);
    return id === undefined ? { name: text } : { id };
  };
  return group === undefined ? { user: part(user) } : { user: part(user), group: part(group) };
}
