// One image as two engines document it: Docker 20.10 (API 1.41) and Docker 28 (API 1.51), for
// its inspect and its images/json entry, written from each API version's reference (fields the
// shim never reads trimmed). The image is busybox built by the legacy builder, then untagged
// once so its list entry shows the placeholders 1.41 gives an untagged image.
import type { ImageInspect, ImageSummary } from '../../src/docker/types';

const ID = 'sha256:27a71e19c95622dce4fbd5f9a5fd7cd2b3ef2e0f19e0a1c46eb4a9a0da2c5a4c';
const LAYER = 'sha256:68aa0e4e8ed7e4ad0cf3ec1cdcd9a6b98e6b6e2bd1fd8b3a6ba6d3d7a8a2e2fb';
const DIGEST = 'busybox@sha256:c230832bd3b0be59a6c47ed64294f9ce71e91b327957920b6929a0caa8353140';
const ENV = ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'];

/** API 1.41: Config carries a container's fields too; ContainerConfig, Container and VirtualSize are there. */
export const IMAGE_INSPECT_1_41 = {
  Id: ID,
  RepoTags: ['busybox:latest'],
  RepoDigests: [DIGEST],
  Parent: '',
  Comment: '',
  Created: '2024-09-26T21:31:42.095698862Z',
  Container: 'a3b5bd6d5d3c4bd68b0e0fd3c2b4a1f2a7d4b0b6c3d5e7f9a1b3c5d7e9f1a3b5',
  ContainerConfig: { Hostname: 'a3b5bd6d5d3c', Cmd: ['/bin/sh', '-c', '#(nop) ', 'CMD ["sh"]'], Image: 'sha256:0f1e2d' },
  DockerVersion: '20.10.23',
  Author: '',
  Config: {
    Hostname: '', Domainname: '', User: '', AttachStdin: false, AttachStdout: false, AttachStderr: false, Tty: false,
    OpenStdin: false, StdinOnce: false, Env: ENV, Cmd: ['sh'], Image: 'sha256:0f1e2d', Volumes: null, WorkingDir: '',
    Entrypoint: null, OnBuild: null, Labels: null,
  },
  Architecture: 'amd64',
  Os: 'linux',
  Size: 4261550,
  VirtualSize: 4261550,
  GraphDriver: { Name: 'overlay2', Data: { MergedDir: '/var/lib/docker/overlay2/9f/merged', UpperDir: '/var/lib/docker/overlay2/9f/diff', WorkDir: '/var/lib/docker/overlay2/9f/work' } },
  RootFS: { Type: 'layers', Layers: [LAYER] },
  Metadata: { LastTagTime: '0001-01-01T00:00:00Z' },
} as unknown as ImageInspect;

/**
 * API 1.51: no ContainerConfig or Container (1.45), no VirtualSize (1.44), Config without a
 * container's fields (1.50) but with unset ones still given empty (omitted from 1.52).
 */
export const IMAGE_INSPECT_1_51 = {
  Id: ID,
  RepoTags: ['busybox:latest'],
  RepoDigests: [DIGEST],
  Parent: '',
  Comment: '',
  Created: '2024-09-26T21:31:42.095698862Z',
  DockerVersion: '20.10.23',
  Author: '',
  Config: { User: '', Env: ENV, Cmd: ['sh'], Volumes: null, WorkingDir: '', Entrypoint: null, OnBuild: null, Labels: null },
  Architecture: 'amd64',
  Os: 'linux',
  Size: 4261550,
  GraphDriver: { Name: 'overlay2', Data: { MergedDir: '/var/lib/docker/overlay2/9f/merged', UpperDir: '/var/lib/docker/overlay2/9f/diff', WorkDir: '/var/lib/docker/overlay2/9f/work' } },
  RootFS: { Type: 'layers', Layers: [LAYER] },
  Metadata: { LastTagTime: '0001-01-01T00:00:00Z' },
} as unknown as ImageInspect;

/** API 1.41's list entry of the image once untagged: `<none>` placeholders (gone in 1.43), Containers and SharedSize -1. */
export const IMAGE_LISTED_1_41 = {
  Id: ID,
  ParentId: '',
  RepoTags: ['<none>:<none>'],
  RepoDigests: [DIGEST],
  Created: 1727386302,
  Size: 4261550,
  VirtualSize: 4261550,
  SharedSize: -1,
  Labels: null,
  Containers: -1,
} as unknown as ImageSummary;

/** API 1.51's: empty lists for no tag (1.43), no VirtualSize (1.44), Containers counted (1.51). */
export const IMAGE_LISTED_1_51 = {
  Id: ID,
  ParentId: '',
  RepoTags: [],
  RepoDigests: [DIGEST],
  Created: 1727386302,
  Size: 4261550,
  SharedSize: -1,
  Labels: null,
  Containers: 2,
} as unknown as ImageSummary;
