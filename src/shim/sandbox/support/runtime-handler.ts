// A CRI runtime handler names a Docker runtime ("runc", "nvidia", ...); '' is Docker's default.
import type { CallOptions } from '../../../docker/client';
import type { DockerFacts } from '../../../docker/docker-version';
import { InvalidArgumentError } from '../../../errors';
import { quote } from '../../../util/quote';

/** The Docker runtime to ask for, or undefined for Docker's default; unknown names are INVALID_ARGUMENT. */
export async function dockerRuntimeFor(facts: DockerFacts, handler: string, opts?: CallOptions): Promise<string | undefined> {
  if (handler === '') return undefined;
  let known = await facts.runtimes(opts);
  if (!known.includes(handler)) {
    // The cached list may predate a runtime added to Docker since: ask once more before refusing.
    facts.invalidate();
    known = await facts.runtimes(opts);
  }
  if (!known.includes(handler)) {
    throw new InvalidArgumentError(`runtime_handler: ${quote(handler)} is not a Docker runtime (Docker has: ${known.join(', ') || 'none'})`);
  }
  return handler;
}
