import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, it } from 'node:test';
import {
  CancelledError,
  DeadlineExceededError,
  DockerNotFoundError,
  DockerServerError,
  NotFoundError,
  PermissionDeniedError,
  UnauthenticatedError,
  UnavailableError,
} from '../../../../src/errors';
import { pullFailure } from '../../../../src/shim/image/support/pull-errors';
import { PullProgressSummary, PullWatch } from '../../../../src/shim/image/support/pull-progress';
import type { Logger } from '../../../../src/util/logger';
import { waitFor } from '../../../support/poll';

const IMG = '127.0.0.1:5000/app:1';

describe('pullFailure', () => {
  it('a missing image is NOT_FOUND naming the image', () => {
    const e = pullFailure(IMG, new DockerNotFoundError('manifest for 127.0.0.1:5000/app:1 not found: manifest unknown: manifest unknown'));
    assert.ok(e instanceof NotFoundError);
    assert.match(e.message, /pulling image "127\.0\.0\.1:5000\/app:1": image not found/);
  });

  it('a registry asking for (or refusing) a login is UNAUTHENTICATED', () => {
    for (const msg of [
      'pull x: Docker answered 500: Head "http://127.0.0.1:5000/v2/app/manifests/1": no basic auth credentials',
      'pull x: Docker answered 500: unauthorized: authentication required',
    ]) {
      const e = pullFailure(IMG, new DockerServerError(msg, 500));
      assert.ok(e instanceof UnauthenticatedError, msg);
      assert.match(e.message, /refused the credentials/);
      assert.doesNotMatch(e.message, /Docker answered/);
    }
  });

  it('an access denial is PERMISSION_DENIED', () => {
    const e = pullFailure(IMG, new DockerServerError('pull x: Docker answered 500: denied: requested access to the resource is denied', 500));
    assert.ok(e instanceof PermissionDeniedError);
  });

  it('a registry that cannot be reached is UNAVAILABLE, with Docker\'s words', () => {
    for (const msg of [
      'pull x: Docker answered 500: Get "http://127.0.0.1:1/v2/": dial tcp 127.0.0.1:1: connect: connection refused',
      'pull x: Docker answered 500: Get "https://registry.invalid/v2/": dial tcp: lookup registry.invalid: no such host',
    ]) {
      const e = pullFailure(IMG, new DockerServerError(msg, 500));
      assert.ok(e instanceof UnavailableError, msg);
      assert.match(e.message, /^pulling image "127\.0\.0\.1:5000\/app:1": the registry cannot be reached: Get/);
    }
  });

  it('other daemon failures keep their words behind a clear prefix; deadlines pass through', () => {
    const e = pullFailure(IMG, new DockerServerError('pull x: Docker answered 500: write /var/lib/docker/tmp: no space left on device', 500));
    assert.ok(e instanceof DockerServerError);
    assert.match(e.message, /^pulling image "127\.0\.0\.1:5000\/app:1": write \/var\/lib\/docker/);
    const d = new DeadlineExceededError('x');
    assert.equal(pullFailure(IMG, d), d);
    const c = new CancelledError('x');
    assert.equal(pullFailure(IMG, c), c);
  });
});

describe('PullProgressSummary', () => {
  it('counts layers, bytes and finished layers from Docker progress messages', () => {
    const s = new PullProgressSummary();
    s.add({ status: 'Pulling from app', id: '1' });
    s.add({ status: 'Pulling fs layer', id: 'l1' });
    s.add({ status: 'Pulling fs layer', id: 'l2' });
    s.add({ status: 'Already exists', id: 'l2' });
    s.add({ status: 'Downloading', id: 'l1', progressDetail: { current: 100, total: 400 } });
    assert.deepEqual(s.summary(), { layers: 2, layersDone: 1, downloadedBytes: 100, totalBytes: 400, layersUncounted: 0, lastStatus: 'Downloading' });
    s.add({ status: 'Download complete', id: 'l1' });
    s.add({ status: 'Pull complete', id: 'l1' });
    s.add({ status: 'Status: Downloaded newer image for app:1' });
    assert.deepEqual(s.summary(), { layers: 2, layersDone: 2, downloadedBytes: 400, totalBytes: 400, layersUncounted: 0, lastStatus: 'Status: Downloaded newer image for app:1' });
  });

  it('counts the layers the containerd store finished without a size (a fast pull there)', () => {
    // Docker 28's stream on the containerd store for a blob fetched between two progress ticks.
    const s = new PullProgressSummary();
    s.add({ status: 'Pulling from rnd', id: '1' });
    s.add({ status: 'Pulling fs layer', id: 'a218f28207f4', progressDetail: {} });
    s.add({ status: 'Download complete', id: 'a218f28207f4', progressDetail: { hidecounts: true } });
    s.add({ status: 'Pull complete', id: 'a218f28207f4', progressDetail: { hidecounts: true } });
    assert.deepEqual(s.summary(), { layers: 1, layersDone: 1, downloadedBytes: 0, totalBytes: 0, layersUncounted: 1, lastStatus: 'Pull complete' });
  });
});

describe('PullWatch', () => {
  function capture(): { log: Logger; lines: () => Array<Record<string, unknown>> } {
    const out: string[] = [];
    const stream = new Writable({ write: (chunk: Buffer, _enc, cb) => (out.push(chunk.toString()), cb()) });
    return { log: pino({ level: 'info' }, stream), lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>) };
  }

  it('aborts with DEADLINE_EXCEEDED naming the image when progress stops', async () => {
    const { log } = capture();
    const watch = new PullWatch('reg.io/app:1', 100, log, 60_000);
    try {
      watch.onProgress({ status: 'Pulling fs layer', id: 'l1' });
      await waitFor('the watchdog to fire', () => watch.signal.aborted);
      const reason: unknown = watch.signal.reason;
      assert.ok(reason instanceof DeadlineExceededError);
      assert.match(reason.message, /"reg\.io\/app:1": no progress for 0\.1s \(--image-pull-progress-deadline\)/);
    } finally {
      watch.stop();
    }
  });

  it('logs a summary at its interval, not per message', async () => {
    const { log, lines } = capture();
    const watch = new PullWatch('reg.io/app:1', 60_000, log, 30);
    try {
      for (let i = 1; i <= 200; i++) watch.onProgress({ status: 'Downloading', id: 'l1', progressDetail: { current: i, total: 200 } });
      const line = await waitFor('a progress log line', () => lines().find((l) => l.msg === 'pulling image'));
      assert.equal(line.image, 'reg.io/app:1');
      assert.equal(line.downloadedBytes, 200);
      assert.ok(lines().length < 200, 'not one line per message');
      assert.equal(watch.signal.aborted, false);
    } finally {
      watch.stop();
    }
  });
});
