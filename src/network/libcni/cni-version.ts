// CNI spec versions ("0.3.1", "1.0.0") compared as numbers, and what each supports.

/** The oldest result format we read: 0.3.0 introduced the interfaces/ips/routes shape. */
export const OLDEST_SUPPORTED = '0.3.0';
/** The newest spec we speak. */
export const NEWEST_SUPPORTED = '1.1.0';

function parts(version: string): [number, number, number] | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(version);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

export function isVersion(version: string): boolean {
  return parts(version) !== undefined;
}

/** Negative, zero or positive as a is older than, the same as, or newer than b. */
export function compareVersions(a: string, b: string): number {
  const pa = parts(a) ?? [0, 0, 0];
  const pb = parts(b) ?? [0, 0, 0];
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return pa[i]! - pb[i]!;
  return 0;
}

/** The first spec version: a cached config (ours, or libcni's as cri-dockerd left it) may be any since. */
export const OLDEST_SPEC = '0.1.0';

export function isSupportedVersion(version: string): boolean {
  return isVersion(version) && compareVersions(version, OLDEST_SUPPORTED) >= 0 && compareVersions(version, NEWEST_SUPPORTED) <= 0;
}

/** A version the spec has had, up to the newest we speak: enough to run DEL with a cached config. */
export function isSpecVersion(version: string): boolean {
  return isVersion(version) && compareVersions(version, OLDEST_SPEC) >= 0 && compareVersions(version, NEWEST_SUPPORTED) <= 0;
}

/** CHECK, and DEL receiving the cached result as prevResult, came with 0.4.0. */
export function supportsCheck(version: string): boolean {
  return compareVersions(version, '0.4.0') >= 0;
}
