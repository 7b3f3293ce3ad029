// Single-use, expiring tokens for streaming URLs. A token is 24 random bytes (192 bits),
// base64url so it fits a URL path segment unescaped. As in kubelet's request cache, a token
// lives for a minute by default and the cache is bounded: when full, a new token is refused
// (RESOURCE_EXHAUSTED, as kubelet's ErrorTooManyInFlight), so a burst of Exec calls cannot
// evict tokens that were handed out and are about to be used.
import { randomBytes } from 'node:crypto';
import { ResourceExhaustedError } from '../errors';

export const DEFAULT_TOKEN_TTL_MS = 60_000;
const DEFAULT_MAX_TOKENS = 1000;
const TOKEN = /^[A-Za-z0-9_-]{32}$/;

interface Entry<T> {
  value: T;
  expiresAt: number;
}

export class TokenCache<T> {
  private readonly entries = new Map<string, Entry<T>>();

  constructor(
    private readonly ttlMs = DEFAULT_TOKEN_TTL_MS,
    private readonly maxEntries = DEFAULT_MAX_TOKENS,
    private readonly now: () => number = Date.now,
  ) {}

  issue(value: T): string {
    this.sweep();
    if (this.entries.size >= this.maxEntries) {
      throw new ResourceExhaustedError(`too many streaming requests in flight (at most ${this.maxEntries} unused tokens at once)`);
    }
    const token = randomBytes(24).toString('base64url');
    this.entries.set(token, { value, expiresAt: this.now() + this.ttlMs });
    return token;
  }

  /** The token's value, once: it is removed whether or not it was still valid. */
  consume(token: string): T | undefined {
    if (!TOKEN.test(token)) return undefined;
    const entry = this.entries.get(token);
    if (!entry) return undefined;
    this.entries.delete(token);
    return entry.expiresAt > this.now() ? entry.value : undefined;
  }

  get size(): number {
    this.sweep();
    return this.entries.size;
  }

  private sweep(): void {
    const now = this.now();
    for (const [token, entry] of this.entries) {
      if (entry.expiresAt <= now) this.entries.delete(token);
    }
  }
}

/** What may appear in a log line about a token: enough to correlate, not enough to use. */
export function redactToken(token: string): string {
  return `${token.slice(0, 4)}…`;
}
