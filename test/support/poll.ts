// Waiting without sleeping blindly: poll a condition until it holds or a deadline passes.
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  { timeoutMs = 20_000, intervalMs = 50, explain }: { timeoutMs?: number; intervalMs?: number; explain?: () => string } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const suffix = lastError ? ` (last error: ${(lastError as Error).message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${suffix}${explain ? `\n${explain()}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
