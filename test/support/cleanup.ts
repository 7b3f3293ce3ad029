// Everything a test makes through the shim carries TEST_LABEL (pods and containers get it in
// their CRI labels, which the shim copies onto the Docker containers), so leftovers can be
// found and removed: by each test in its `after`, and by test/run.mjs after the whole run
// (only its own session's).
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { dockerApi } from './images';
import { mapLimit } from './map-limit';

export const TEST_LABEL = 'cri-docker-shim.test/run';
/** Set by test/run.mjs for one whole run of the suite, so its sweep touches nothing else. */
export const TEST_SESSION_LABEL = 'cri-docker-shim.test/session';
export const TEST_SESSION = process.env.CDS_TEST_SESSION ?? 'manual';

/** A fresh value of TEST_LABEL for one test file. */
export function newTestRun(): string {
  return `t${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
}

/** The labels to put on every pod and container a test makes. */
export function testLabels(run: string): Record<string, string> {
  return { [TEST_LABEL]: run, [TEST_SESSION_LABEL]: TEST_SESSION };
}

/**
 * Force-removes every container labelled with this test run, or with this whole session, at
 * most `concurrency` at a time: a thousand kills at once outran dockerd ("tried to kill
 * container, but did not receive an exit event").
 */
export async function removeTestContainers(scope: { run: string } | { session: string }, concurrency = 4): Promise<number> {
  const docker = dockerApi();
  const filter = 'run' in scope ? `${TEST_LABEL}=${scope.run}` : `${TEST_SESSION_LABEL}=${scope.session}`;
  const found = await docker.listContainers({ all: true, filters: { label: [filter] } });
  await mapLimit(found, concurrency, (c) =>
    docker
      .getContainer(c.Id)
      .remove({ force: true, v: true })
      .catch((err: { statusCode?: number }) => {
        if (err.statusCode !== 404 && err.statusCode !== 409) throw err;
      }),
  );
  return found.length;
}

/** Removes files and directories a test made; missing ones are fine. */
export function removePaths(...paths: string[]): void {
  for (const p of paths) fs.rmSync(p, { recursive: true, force: true });
}
