// The composition root's one table: components start in its order and stop in the reverse,
// each once, and one failing to stop does not keep the earlier ones running.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StartedComponents } from '../../../src/util/started-components';

describe('StartedComponents', () => {
  it('stops in exactly the reverse of the start order, each once', async () => {
    const started = new StartedComponents(['docker', 'state', 'server', 'events']);
    const stopped: string[] = [];
    for (const name of ['docker', 'state', 'server', 'events'] as const) {
      const component = started.add(name, { name }, async (c) => {
        await Promise.resolve();
        stopped.push(c.name);
      });
      assert.equal(component.name, name);
    }
    assert.deepEqual(started.names, ['docker', 'state', 'server', 'events']);
    await started.stopAll();
    assert.deepEqual(stopped, ['events', 'server', 'state', 'docker']);
    await started.stopAll();
    assert.deepEqual(stopped, ['events', 'server', 'state', 'docker']);
  });

  it('stops the rest when one fails, then throws its error', async () => {
    const started = new StartedComponents(['first', 'failing', 'last']);
    const stopped: string[] = [];
    started.add('first', 1, () => void stopped.push('first'));
    started.add('failing', 2, () => {
      throw new Error('cannot stop');
    });
    started.add('last', 3, () => void stopped.push('last'));
    await assert.rejects(started.stopAll(), /cannot stop/);
    assert.deepEqual(stopped, ['last', 'first']);
  });

  it('takes the table order: a row may be left out, none started after a later one', () => {
    const started = new StartedComponents(['docker', 'metrics', 'server', 'events']);
    started.add('docker', 1, () => undefined);
    started.add('server', 2, () => undefined);
    assert.throws(() => started.add('metrics', 3, () => undefined), /"metrics" started out of the table's order \(after "server"\)/);
    assert.throws(() => started.add('server', 4, () => undefined), /out of the table's order/);
    started.add('events', 5, () => undefined);
    assert.deepEqual(started.names, ['docker', 'server', 'events']);
  });
});
