import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { status as Code } from '@grpc/grpc-js';
import { toGrpcStatus } from '../../../../src/errors';
import { CommandFailedError, hostRunner, netnsRunner } from '../../../../src/network/hostport/runner';

describe('command runner', () => {
  it('feeds input and returns output', async () => {
    assert.equal(await hostRunner.run('cat', [], 'line one\nline two\n'), 'line one\nline two\n');
  });
  it('reports a non-zero exit with its stderr, as INTERNAL', async () => {
    const err = await hostRunner.run('sh', ['-c', 'echo "bad rule" >&2; exit 4']).then(
      () => assert.fail('should fail'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof CommandFailedError);
    assert.equal(err.exitCode, 4);
    assert.equal(err.message, 'sh exited 4: bad rule');
    assert.equal(toGrpcStatus(err).code, Code.INTERNAL);
  });
  it('reports a command that cannot start', async () => {
    await assert.rejects(hostRunner.run('/nonexistent/cds-no-such-command', []), (e: unknown) => e instanceof CommandFailedError && /did not run/.test(e.message));
  });
  it('refuses namespace names that are not plain names', () => {
    for (const bad of ['', '../x', 'a b', '-n', 'x'.repeat(65)]) assert.throws(() => netnsRunner(bad), TypeError, bad);
    assert.equal(netnsRunner('cds-hp-1').where, 'netns cds-hp-1');
  });
});
