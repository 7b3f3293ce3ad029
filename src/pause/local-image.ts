// The default pause image, made on this node from the shim's own static pause program
// (src/pause/pause.c, compiled by `npm run build` into dist/pause/pause) when it cannot be
// pulled: an air-gapped node, or the compose cluster offline, runs pods with no registry, as
// kind and k3s do with their preloaded pause images. Imported as a one-layer image (the program
// alone, FROM scratch), tagged with the default image's name and labelled as made here.
import * as fs from 'node:fs';
import type { CallOptions, DockerClient } from '../docker/client';
import { builtProgram } from '../util/built-program';
import { assetBytes, SEA_ASSETS, singleExecutable } from '../util/single-executable';

/** Set on the images made here, so they can be told from a pulled one. */
export const LOCAL_PAUSE_LABEL = 'io.cri-docker-shim.pause';
export const LOCAL_PAUSE_LABEL_VALUE = 'built-locally';

/** The pause program this build carries: where it is (for the log), and its bytes. */
interface PauseProgram {
  readonly where: string;
  read(): Buffer;
}

/**
 * Where the build leaves the program: dist/pause/pause of the package the running code belongs
 * to (util/built-program.ts). The single executable carries it as an asset instead.
 */
export function localPauseProgram(from: string = __dirname): PauseProgram | undefined {
  const sea = singleExecutable();
  if (sea) return { where: `${process.execPath} (asset ${SEA_ASSETS.pause})`, read: () => assetBytes(sea, SEA_ASSETS.pause) };
  const program = builtProgram('pause', from);
  return program === undefined ? undefined : { where: program, read: () => fs.readFileSync(program) };
}

/** The one-file layer as a tar: `/pause`, executable, owned by root. */
export async function layerOf(program: Buffer): Promise<Buffer> {
  // Loaded here: only a node that cannot pull its pause image ever needs it.
  const { pack } = require('tar-stream') as typeof import('tar-stream');
  const tar = pack();
  tar.entry({ name: 'pause', mode: 0o755, uid: 0, gid: 0, mtime: new Date(0), size: program.length }, program);
  tar.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of tar) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Splits `repo:tag` (a normalised pull reference with a tag; a digest cannot be made here). */
function repoAndTag(ref: string): { repo: string; tag: string } {
  const colon = ref.lastIndexOf(':');
  if (colon <= ref.lastIndexOf('/') || ref.includes('@')) throw new Error(`${ref} names no tag to give a locally made image`);
  return { repo: ref.slice(0, colon), tag: ref.slice(colon + 1) };
}

/** Imports `program` as the image `ref` (repo:tag). */
export async function importLocalPauseImage(docker: DockerClient, ref: string, program: PauseProgram, opts?: CallOptions): Promise<void> {
  const { repo, tag } = repoAndTag(ref);
  await docker.importImage(
    await layerOf(program.read()),
    { repo, tag, changes: ['ENTRYPOINT ["/pause"]', `LABEL ${LOCAL_PAUSE_LABEL}=${LOCAL_PAUSE_LABEL_VALUE}`] },
    opts,
  );
}
