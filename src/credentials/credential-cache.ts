// One provider's cache of plugin answers, as kubelet keeps it: an answer is stored under the
// key its cacheKeyType names (the image, its registry, or one global slot) until it expires;
// a lookup tries image, then registry, then global, and drops expired entries on the way.
import type { CacheKeyType, PluginCredential } from './credential-plugin';

const GLOBAL_CACHE_KEY = 'global';

interface Entry {
  auth: Record<string, PluginCredential>;
  expiresAt: number;
}

export class CredentialCache {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly now: () => number = Date.now) {}

  get size(): number {
    return this.entries.size;
  }

  lookup(image: string, registry: string): Record<string, PluginCredential> | undefined {
    this.purgeExpired();
    for (const key of [imageKey(image), registryKey(registry), GLOBAL_CACHE_KEY]) {
      const hit = this.entries.get(key);
      if (hit) return hit.auth;
    }
    return undefined;
  }

  /** Stores an answer for `durationMs`; 0 means "do not cache". */
  store(keyType: CacheKeyType, image: string, registry: string, auth: Record<string, PluginCredential>, durationMs: number): void {
    if (durationMs <= 0) return;
    const key = keyType === 'Image' ? imageKey(image) : keyType === 'Registry' ? registryKey(registry) : GLOBAL_CACHE_KEY;
    this.entries.set(key, { auth, expiresAt: this.now() + durationMs });
  }

  purgeExpired(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
  }
}

// Prefixes keep an image named "global" or equal to a registry host from colliding.
function imageKey(image: string): string {
  return `image:${image}`;
}
function registryKey(registry: string): string {
  return `registry:${registry}`;
}
