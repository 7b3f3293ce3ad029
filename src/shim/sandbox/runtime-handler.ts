// A CRI runtime handler names a Docker runtime ("runc", "nvidia", ...); '' is Docker's default.
import type { CallOptions, DockerClient } from '../../docker/client';
import { InvalidArgumentError } from '../../errors';

/** The Docker runtime to ask for, or undefined for Docker's default; unknown names are INVALID_ARGUMENT. */
export async function dockerRuntimeFor(docker: DockerClient, handler: string, opts?: CallOptions): Promise<string | undefined> {
  if (handler === '') return undefined;
  const info = await docker.info(opts);
  const known = Object.keys(info.Runtimes ?? {});
  if (!known.includes(handler)) {
    throw new InvalidArgumentError(`runtime_handler: ${JSON.stringify(handler)} is not a Docker runtime (Docker has: ${known.sort().join(', ') || 'none'})`);
  }
  return handler;
}
