// Objects whose figures that were not read are left out rather than carried as undefined: what
// is absent is then absent in a deepEqual, a log line and a message alike.

/** `o` without its undefined properties (a copy: deleting keys would slow every later read of it). */
export function defined<T extends object>(o: T): T {
  const out = {} as T;
  for (const k of Object.keys(o) as Array<keyof T>) if (o[k] !== undefined) out[k] = o[k];
  return out;
}
