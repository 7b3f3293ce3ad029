// Independent steps run at once: unlike Promise.all, nothing is left running unwatched when one
// fails (the caller's next step never overlaps a straggler), and the failure reported is the
// first in the order given, not whichever came first in time.

/** Settles once every step has; rejects with the first failure in argument order. */
export async function sideBySide(...steps: ReadonlyArray<Promise<unknown>>): Promise<void> {
  for (const result of await Promise.allSettled(steps)) if (result.status === 'rejected') throw result.reason;
}
