// The sandbox checkpoints held in memory, so ListPodSandbox (polled every second) reads no
// files. Loaded once, through the store (which checks each file's checksum and removes corrupt
// ones); afterwards every write and removal goes to disk first and then to memory. The files
// are the shim's own: nothing else is expected to change them while it runs.
import type { SandboxCheckpoint } from './checkpoint';
import type { CheckpointFiles } from './checkpoint-files';

export class CheckpointCache {
  private loaded: Promise<Map<string, SandboxCheckpoint>> | undefined;
  /** The same map, once loaded, for synchronous reads. */
  private held: Map<string, SandboxCheckpoint> | undefined;
  private changes = 0;

  constructor(private readonly store: CheckpointFiles) {}

  /** Moves with every change of what is held (the load, each write and removal). */
  get version(): number {
    return this.changes;
  }

  /** Reads every checkpoint from disk (once; later calls share the first). */
  load(): Promise<Map<string, SandboxCheckpoint>> {
    if (!this.loaded) {
      const loading = this.store.readAll().then((all) => {
        this.changes++;
        return (this.held = new Map(all.map((c) => [c.id, c])));
      });
      // A failed load (an unreadable directory) is retried by the next caller.
      loading.catch(() => {
        if (this.loaded === loading) this.loaded = undefined;
      });
      this.loaded = loading;
    }
    return this.loaded;
  }

  async write(checkpoint: SandboxCheckpoint): Promise<void> {
    const held = await this.load();
    await this.store.write(checkpoint);
    held.set(checkpoint.id, checkpoint);
    this.changes++;
  }

  async remove(id: string): Promise<void> {
    const held = await this.load();
    await this.store.remove(id);
    held.delete(id);
    this.changes++;
  }

  async read(id: string): Promise<SandboxCheckpoint | undefined> {
    this.store.pathOf(id); // the same check of the ID as on disk
    return (await this.load()).get(id);
  }

  /** The checkpoint as held right now, without waiting (undefined before the load finished). */
  peek(id: string): SandboxCheckpoint | undefined {
    return this.held?.get(id);
  }

  async ids(): Promise<string[]> {
    return [...(await this.load()).keys()];
  }

  async readAll(): Promise<SandboxCheckpoint[]> {
    return [...(await this.load()).values()];
  }
}
