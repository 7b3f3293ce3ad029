// The NetworkHost the shim gives its plugins: pod facts read from Docker (the pause process,
// Docker's own addresses), the running pods (../object-store), the sandbox checkpoints (port
// mappings), and the pod CIDRs UpdateRuntimeConfig last gave. Plugins see only the NetworkHost
// interface.
import type { CheckpointCache } from '../checkpoint/checkpoint-cache';
import type { DockerClient } from '../docker/client';
import { ipsFromNetworkSettings } from '../docker/documents';
import { DockerNotFoundError } from '../errors';
import type { ObjectFinder } from '../object-store/object-store';
import type { NetworkHost, PortMapping } from './network-host';

export class DockerNetworkHost implements NetworkHost {
  private cidrs: readonly string[] = [];

  constructor(
    private readonly docker: Pick<DockerClient, 'inspectContainer'>,
    private readonly objects: ObjectFinder,
    private readonly checkpoints: Pick<CheckpointCache, 'peek'>,
  ) {}

  async netnsPath(sandboxId: string): Promise<string | undefined> {
    const inspect = await this.inspect(sandboxId);
    const pid = inspect?.State.Running ? inspect.State.Pid : 0;
    return pid > 0 ? `/proc/${pid}/ns/net` : undefined;
  }

  portMappings(sandboxId: string): readonly PortMapping[] {
    return this.checkpoints.peek(sandboxId)?.portMappings ?? [];
  }

  podCidrs(): readonly string[] {
    return this.cidrs;
  }

  setPodCidrs(cidrs: readonly string[]): void {
    this.cidrs = [...cidrs];
  }

  async bridgeAddresses(sandboxId: string): Promise<string[]> {
    return ipsFromNetworkSettings((await this.inspect(sandboxId))?.NetworkSettings);
  }

  async runningSandboxes(): Promise<string[]> {
    return (await this.objects.list({ kind: 'sandbox', state: 'SANDBOX_READY' })).map((o) => o.id);
  }

  private async inspect(sandboxId: string): Promise<Awaited<ReturnType<DockerClient['inspectContainer']>> | undefined> {
    try {
      return await this.docker.inspectContainer(sandboxId);
    } catch (err) {
      if (err instanceof DockerNotFoundError) return undefined;
      throw err;
    }
  }
}
