// The configured credential provider plugins together: for an image, ask every provider whose
// matchImages covers it (from its cache, or by running its plugin once however many pulls ask
// at the same time), merge the answers (an earlier provider wins a shared key), and keep the
// credentials whose key matches the image, most specific first, as kubelet's keyring does.
import type { RegistryCredential } from '../conventions/registry-credential';
import type { Logger } from '../util/logger';
import { errorMessage } from '../errors';
import { CredentialCache } from './credential-cache';
import type { CredentialProviderPlugin } from './provider-config';
import { matchesImage, registryOf } from './match';
import { execPlugin, type PluginCredential, type PluginResponse } from './credential-plugin';

/** Where a pull without credentials in the request finds some. */
export interface CredentialSource {
  credentialsFor(image: string): Promise<RegistryCredential[]>;
}

type PluginRunner = (plugin: CredentialProviderPlugin, image: string) => Promise<PluginResponse>;

export class CredentialProvider {
  private readonly cache: CredentialCache;
  private readonly inFlight = new Map<string, Promise<Record<string, PluginCredential>>>();

  constructor(
    readonly plugin: CredentialProviderPlugin,
    private readonly run: PluginRunner = execPlugin,
    now: () => number = Date.now,
  ) {
    this.cache = new CredentialCache(now);
  }

  matches(image: string): boolean {
    return this.plugin.matchImages.some((p) => matchesImage(p, image));
  }

  /** This provider's credentials for `image` (a pattern -> credential map). */
  async provide(image: string): Promise<Record<string, PluginCredential>> {
    const registry = registryOf(image);
    const cached = this.cache.lookup(image, registry);
    if (cached) return cached;
    const running = this.inFlight.get(image);
    if (running) return running;
    const call = this.run(this.plugin, image)
      .then((res) => {
        const duration = res.cacheDurationMs ?? this.plugin.defaultCacheDurationMs;
        this.cache.store(res.cacheKeyType, image, registry, res.auth, duration);
        return res.auth;
      })
      .finally(() => this.inFlight.delete(image));
    this.inFlight.set(image, call);
    return call;
  }
}

export class CredentialProviders implements CredentialSource {
  readonly providers: CredentialProvider[];

  constructor(
    plugins: readonly CredentialProviderPlugin[],
    private readonly log: Logger,
    run?: PluginRunner,
    now?: () => number,
  ) {
    this.providers = plugins.map((p) => new CredentialProvider(p, run, now));
  }

  async credentialsFor(image: string): Promise<RegistryCredential[]> {
    const matching = this.providers.filter((p) => p.matches(image));
    const answers = await Promise.all(
      matching.map((p) =>
        p.provide(image).catch((err: unknown) => {
          // A failing plugin must not fail the pull: the image may be public. Its error never quotes its output.
          this.log.warn({ provider: p.plugin.name, image, error: errorMessage(err) }, 'credential provider failed');
          return {} as Record<string, PluginCredential>;
        }),
      ),
    );
    const merged = new Map<string, PluginCredential>();
    for (const auth of answers) {
      for (const [pattern, cred] of Object.entries(auth)) if (!merged.has(pattern)) merged.set(pattern, cred);
    }
    return [...merged.keys()]
      .filter((pattern) => matchesImage(pattern, image))
      .sort()
      .reverse()
      .map((pattern) => {
        const c = merged.get(pattern)!;
        return { username: c.username, password: c.password };
      });
  }
}
