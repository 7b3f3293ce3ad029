// A scrape reads its files synchronously (see CgroupFileReader), so a list of a few hundred
// containers would hold the event loop for its whole length; it goes a slice at a time, other
// calls getting their turn in between, and the slice bounds how many layer walks run at once.
// A scrape whose caller gave up stops at the next slice.

/** Containers or pods handled per turn of the event loop. */
const SCRAPE_SLICE = 32;

/**
 * `fn` over `items`, `slice` at a time, yielding to the event loop between slices; results in
 * order. Rejects with `signal`'s reason, starting no further slice, once it aborts.
 */
export async function mapInSlices<T, R>(items: readonly T[], fn: (item: T) => Promise<R>, signal: AbortSignal, slice = SCRAPE_SLICE): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += slice) {
    if (i > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    signal.throwIfAborted();
    out.push(...(await Promise.all(items.slice(i, i + slice).map(fn))));
  }
  return out;
}
