// Docker inspect documents for unit tests. First a container as Docker 20.10 (API 1.41)
// reported it, once by inspect and once by GET /containers/json, captured from the real daemon
// (fields the shim does not read trimmed from the inspect document). The container ran
// `sh -c 'sleep 600' 'x y'` with a label, a read-only bind mount, one published tcp port and
// one udp port published on both families. Then `inspectDoc`, the one builder of made-up
// documents (with a complete State), which every other unit test and the fake Docker use.
import type { ContainerInspect, ContainerSummary } from '../../src/docker/types';

/** The captured container's endpoint on the bridge network; both answers carry the same one (fresh objects, so no test can change the other's). */
function bridgeEndpoint(): object {
  return {
    "IPAMConfig": null,
    "Links": null,
    "Aliases": null,
    "NetworkID": "6634a87afb9efe9a822a1b4ce7c17b1b0a4cbf79b31794a06b727a5c30ec60de",
    "EndpointID": "b18a8f01f80113c20fd9ee12334369ef8153e43307fdc841d01ca55ead4edef8",
    "Gateway": "172.17.0.1",
    "IPAddress": "172.17.0.2",
    "IPPrefixLen": 16,
    "IPv6Gateway": "",
    "GlobalIPv6Address": "",
    "GlobalIPv6PrefixLen": 0,
    "MacAddress": "02:42:ac:11:00:02",
    "DriverOpts": null
  };
}

/** The captured container's read-only bind mount, as both answers list it. */
function bindMount(): object {
  return { "Type": "bind", "Source": "/tmp", "Destination": "/host-tmp", "Mode": "ro", "RW": false, "Propagation": "rprivate" };
}

export const INSPECTED_AT_MS = Date.parse('2026-11-22T02:33:52.9Z');

export const INSPECT = {
  "Id": "14979750d762f6ce526a7825b7efb43fc8cb1a91c7284d6b0232b73247dd5c31",
  "Created": "2026-11-22T02:33:51.889293387Z",
  "Path": "sh",
  "Args": [
    "-c",
    "sleep 600",
    "x y"
  ],
  "State": {
    "Status": "running",
    "Running": true,
    "Paused": false,
    "Restarting": false,
    "OOMKilled": false,
    "Dead": false,
    "Pid": 28246,
    "ExitCode": 0,
    "Error": "",
    "StartedAt": "2026-11-22T02:33:52.551385884Z",
    "FinishedAt": "0001-01-01T00:00:00Z"
  },
  "Image": "sha256:4411f0e6022570830060821a2fc34f937a27dd4e4688b0cb7740acc6092e248c",
  "Name": "/cache-fixture-16987",
  "Mounts": [bindMount()],
  "NetworkSettings": {
    "Ports": {
      "8080/tcp": [
        {
          "HostIp": "127.0.0.1",
          "HostPort": "32768"
        }
      ],
      "9090/udp": [
        {
          "HostIp": "0.0.0.0",
          "HostPort": "32768"
        },
        {
          "HostIp": "::",
          "HostPort": "32768"
        }
      ]
    },
    "Networks": {
      "bridge": bridgeEndpoint()
    },
    "SandboxID": "b38e0e5bfaee208d99ca596c6fe91aa48797432dbef6e1fded72bcbc9db8081e",
    "SandboxKey": "/var/run/docker/netns/b38e0e5bfaee"
  },
  "Config": {
    "Image": "cri-docker-shim-test/busybox:6219b1b9d5fd",
    "Labels": {
      "a": "c d",
      "io.kubernetes.docker.type": "container"
    },
    "Cmd": [
      "sh",
      "-c",
      "sleep 600",
      "x y"
    ]
  },
  "HostConfig": {
    "NetworkMode": "default"
  }
} as unknown as ContainerInspect;

export const LISTED = {
  "Id": "14979750d762f6ce526a7825b7efb43fc8cb1a91c7284d6b0232b73247dd5c31",
  "Names": [
    "/cache-fixture-16987"
  ],
  "Image": "cri-docker-shim-test/busybox:6219b1b9d5fd",
  "ImageID": "sha256:4411f0e6022570830060821a2fc34f937a27dd4e4688b0cb7740acc6092e248c",
  "Command": "sh -c 'sleep 600' 'x y'",
  "Created": 1795314831,
  "Ports": [
    {
      "IP": "127.0.0.1",
      "PrivatePort": 8080,
      "PublicPort": 32768,
      "Type": "tcp"
    },
    {
      "IP": "0.0.0.0",
      "PrivatePort": 9090,
      "PublicPort": 32768,
      "Type": "udp"
    },
    {
      "IP": "::",
      "PrivatePort": 9090,
      "PublicPort": 32768,
      "Type": "udp"
    }
  ],
  "Labels": {
    "a": "c d",
    "io.kubernetes.docker.type": "container"
  },
  "State": "running",
  "Status": "Up Less than a second",
  "HostConfig": {
    "NetworkMode": "default"
  },
  "NetworkSettings": {
    "Networks": {
      "bridge": bridgeEndpoint()
    }
  },
  "Mounts": [bindMount()]
} as unknown as ContainerSummary;

/** Docker's zero time: a container that never started or never finished. */
export const NEVER = '0001-01-01T00:00:00Z';
/** The creation time of made-up documents (the captured container's). */
export const CREATED = '2026-11-22T02:33:51.889293387Z';

export type DockerState = ContainerInspect['State'];

/** A complete State: a container that was created and never started, with `over` on top. */
export function dockerState(over: Partial<DockerState> = {}): DockerState {
  return { Status: 'created', Running: false, Paused: false, Restarting: false, OOMKilled: false, Dead: false, Pid: 0, ExitCode: 0, Error: '', StartedAt: NEVER, FinishedAt: NEVER, ...over };
}

/** The State of a container running since `startedAt` as PID 42. */
export function runningState(startedAt = '2026-11-22T02:33:52Z', over: Partial<DockerState> = {}): Partial<DockerState> {
  return { Status: 'running', Running: true, Pid: 42, StartedAt: startedAt, ...over };
}

/**
 * What a test may set in a made-up inspect document; State and Config are merged over the
 * defaults, any other field replaces its default. Loosely typed on purpose: a test may give
 * fields the dockerode types lack (Config.StopSignal, GraphDriver.Data.UpperDir).
 */
export interface InspectOverrides {
  State?: Partial<DockerState>;
  Config?: Record<string, unknown>;
  [field: string]: unknown;
}

/**
 * A made-up inspect document: a created (never started) container `c…c` of image `busybox`
 * (sha256:1111) with no labels, on Docker's default network, with `over` on top.
 */
export function inspectDoc(over: InspectOverrides = {}): ContainerInspect {
  const { State, Config, ...rest } = over;
  return {
    Id: 'c'.repeat(64),
    Name: '/k8s_c_p_ns_uid_0',
    Created: CREATED,
    Path: 'sleep',
    Args: ['60'],
    Image: 'sha256:1111',
    State: dockerState(State),
    Config: { Image: 'busybox', Labels: {}, ...Config },
    HostConfig: { NetworkMode: 'default' },
    NetworkSettings: { Ports: {}, Networks: {} },
    Mounts: [],
    ...rest,
  } as unknown as ContainerInspect;
}
