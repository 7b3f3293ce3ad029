// Whether a running container's writable layer needs a walk: only a process writes to a layer,
// and a write is a system call, CPU time accounted to the writer's cgroup (../cgroups/reader.ts).
// A container whose CPU time did not move since its layer was measured wrote nothing: its figure
// is confirmed as of now without a walk. So a node of idle containers walks nothing, where it
// walked every running container's layer every 10 s (at 1,000 containers most of the shim's idle
// CPU). What this misses until the container next runs: a write from outside its cgroup
// (`docker cp`, a process of the host writing into the layer's directory).
import type { CgroupOwner, CgroupReader } from '../cgroups/reader';

export class CpuWitness {
  private confirmedCount = 0;

  constructor(private readonly cgroupReader: Pick<CgroupReader, 'cpuUsage'>) {}

  /** Figures confirmed without a walk so far. */
  get confirmed(): number {
    return this.confirmedCount;
  }

  /** The container's CPU time now (undefined when it does not run or its cgroup does not tell); read before a walk, so CPU used during it is looked at again next time. */
  cpuNow(owner: CgroupOwner, running: boolean): bigint | undefined {
    return running ? this.cgroupReader.cpuUsage(owner) : undefined;
  }

  /** Whether the CPU time did not move since the figure was taken (counted as a confirmation). */
  vouches(atMeasure: bigint | undefined, now: bigint | undefined): boolean {
    if (now === undefined || now !== atMeasure) return false;
    this.confirmedCount++;
    return true;
  }
}
