// Everything a test makes through the shim carries TEST_LABEL (pods and containers get it in
// their CRI labels, which the shim copies onto the Docker containers), so leftovers can be
// found and removed: by each test in its `after`, and by test/run.mjs after the whole run.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { dockerApi } from './images';

export const TEST_LABEL = 'cri-docker-shim.test/run';

/** A fresh value of TEST_LABEL for one test file. */
export function newTestRun(): string {
  return `t${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
}

/** Force-removes every container labelled with this run (or with any run, when omitted). */
export async function removeTestContainers(run?: string): Promise<number> {
  const docker = dockerApi();
  const filter = run === undefined ? TEST_LABEL : `${TEST_LABEL}=${run}`;
  const found = await docker.listContainers({ all: true, filters: { label: [filter] } });
  await Promise.all(
    found.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch((err: { statusCode?: number }) => {
          if (err.statusCode !== 404 && err.statusCode !== 409) throw err;
        }),
    ),
  );
  return found.length;
}

/** Removes files and directories a test made; missing ones are fine. */
export function removePaths(...paths: string[]): void {
  for (const p of paths) fs.rmSync(p, { recursive: true, force: true });
}
