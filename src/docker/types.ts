// Docker Engine API shapes the shim reads and writes (API 1.41). The big container and image
// documents reuse @types/dockerode's definitions; the rest are written out from the API
// reference, with only the fields we use.
import type Dockerode from 'dockerode';

/** `SizeRw`: the writable layer's bytes, given when the list is asked with `size`. */
export type ContainerSummary = Dockerode.ContainerInfo & { SizeRw?: number };
export type ContainerInspect = Dockerode.ContainerInspectInfo;
/** A bind in HostConfig.Mounts, with the bind options of API 1.44 (@types/dockerode has the older ones only). */
interface BindMount {
  Type: 'bind';
  Source: string;
  Target: string;
  ReadOnly: boolean;
  BindOptions: {
    /** "rslave", "rshared"; absent for private. */
    Propagation?: string;
    /** Make a missing source directory, as a `Binds` entry does (API 1.44). */
    CreateMountpoint?: boolean;
    /** A read-only bind whose submounts stay as they are (API 1.44; before it, every read-only bind). */
    ReadOnlyNonRecursive?: boolean;
    /** A read-only bind with its submounts read-only too, or an error where the kernel cannot (API 1.44). */
    ReadOnlyForceRecursive?: boolean;
  };
}
/** An image's files mounted read-only in a container (API 1.48). */
export interface ImageMount {
  Type: 'image';
  /** The image's reference or ID. */
  Source: string;
  Target: string;
  ReadOnly: true;
  /** A path inside the image to mount instead of its root (API 1.49). */
  ImageOptions?: { Subpath: string };
}
export type DockerMount = BindMount | ImageMount;
/** A device for Docker's device drivers; "cdi" takes CDI device names (vendor/class=name). */
export interface DeviceRequest {
  Driver: 'cdi';
  DeviceIDs: string[];
}
/** A create request's host config: binds and image mounts in Mounts (API 1.44 and 1.48), CDI devices. */
export type HostConfig = Omit<Dockerode.HostConfig, 'Mounts' | 'DeviceRequests'> & { Mounts?: DockerMount[]; DeviceRequests?: DeviceRequest[] };
export type ContainerCreateSpec = Omit<Dockerode.ContainerCreateOptions, 'HostConfig'> & { name?: string; HostConfig?: HostConfig };
export type ImageSummary = Dockerode.ImageInfo;
export type ImageInspect = Dockerode.ImageInspectInfo;

export interface DockerVersion {
  Version: string;
  ApiVersion: string;
  MinAPIVersion?: string;
  GitCommit?: string;
  GoVersion?: string;
  Os: string;
  Arch: string;
  KernelVersion?: string;
}

export interface DockerInfo {
  ID?: string;
  Name?: string;
  ServerVersion?: string;
  Driver?: string;
  /** The storage driver's own facts as [name, value] pairs; the containerd image store says ["driver-type", "io.containerd.snapshotter.v1"]. */
  DriverStatus?: Array<[string, string]> | null;
  DockerRootDir?: string;
  /** "cgroupfs", "systemd" or "none"; absent on very old daemons. */
  CgroupDriver?: string;
  /** "1" or "2" (API >= 1.40). */
  CgroupVersion?: string;
  DefaultRuntime?: string;
  Runtimes?: Record<string, { path?: string; runtimeArgs?: string[] }>;
  /** Where the engine looks for CDI specs (API 1.44); absent, or an empty list, where CDI is off. */
  CDISpecDirs?: string[] | null;
  SecurityOptions?: string[];
  OperatingSystem?: string;
  KernelVersion?: string;
  NCPU?: number;
  MemTotal?: number;
}

/** Filters as Docker takes them: name -> accepted values. */
export type DockerFilters = Record<string, string[]>;

/** One message of Docker's /events stream. */
export interface DockerEvent {
  Type: string;
  Action: string;
  Actor: { ID: string; Attributes: Record<string, string> };
  time: number;
  timeNano: number;
}

export interface ExecCreateSpec {
  Cmd: string[];
  AttachStdin?: boolean;
  AttachStdout?: boolean;
  AttachStderr?: boolean;
  Tty?: boolean;
  Env?: string[];
  User?: string;
  WorkingDir?: string;
  Privileged?: boolean;
}

export interface ExecInspect {
  ID: string;
  Running: boolean;
  ExitCode: number | null;
  Pid: number;
  ContainerID: string;
}

/** The registry auth Docker takes in X-Registry-Auth (base64url JSON). */
export interface RegistryAuth {
  username?: string;
  password?: string;
  auth?: string;
  serveraddress?: string;
  identitytoken?: string;
  registrytoken?: string;
}

/** One JSON message of a pull's progress stream. */
export interface PullProgress {
  status?: string;
  id?: string;
  progress?: string;
  /** `hidecounts`: the containerd store finished the layer without giving its size. */
  progressDetail?: { current?: number; total?: number; hidecounts?: boolean };
  error?: string;
  errorDetail?: { code?: number; message?: string };
}

export interface ImageDeleteItem {
  Untagged?: string;
  Deleted?: string;
}

export interface SystemDataUsage {
  LayersSize?: number;
  Images?: Array<{ Id: string; Size: number; SharedSize: number; Containers: number }>;
  Containers?: Array<{ Id: string; SizeRw?: number; SizeRootFs?: number }>;
}

export interface ContainerUpdateSpec {
  CpuShares?: number;
  CpuPeriod?: number;
  CpuQuota?: number;
  CpusetCpus?: string;
  CpusetMems?: string;
  Memory?: number;
  MemorySwap?: number;
  PidsLimit?: number;
  BlkioWeight?: number;
}
