import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { checkRequestBounds, REQUEST_BOUNDS } from '../../../src/cri/bounds';
import { InvalidArgumentError, MAX_STATUS_DETAILS, toGrpcStatus } from '../../../src/errors';
import { quote } from '../../../src/util/quote';

describe('quote', () => {
  it('quotes short values whole and escaped', () => {
    assert.equal(quote('a"b\n'), '"a\\"b\\n"');
  });
  it('quotes a 128-character prefix and the total length of a long value', () => {
    const q = quote('x'.repeat(5000));
    assert.equal(q, `"${'x'.repeat(128)}"… (5000 characters)`);
  });
});

describe('request bounds', () => {
  const refuses = (req: unknown, pattern: RegExp): void =>
    assert.throws(() => checkRequestBounds(req), (err: unknown) => err instanceof InvalidArgumentError && pattern.test(err.message));

  it('accepts what kubelet sends', () => {
    checkRequestBounds({
      podSandboxId: 'f'.repeat(64),
      config: {
        metadata: { name: 'n'.repeat(253), namespace: 'ns'.repeat(31), uid: '3f2504e0-4f89-11d3-9a0c-0305e82c3301', attempt: 0 },
        labels: { ['example.com/' + 'k'.repeat(63)]: 'v'.repeat(63), 'io.kubernetes.pod.name': 'p'.repeat(253) },
        annotations: { a: 'v'.repeat(200 * 1024) },
      },
      filter: { id: 'abc', labelSelector: { app: 'x' } },
    });
  });
  it('refuses IDs longer than the bound, naming the field in snake case', () => {
    refuses({ containerId: 'a'.repeat(REQUEST_BOUNDS.id + 1) }, /^container_id: .* is longer than 256 characters$/);
    refuses({ filter: { podSandboxId: 'a'.repeat(300) } }, /^filter\.pod_sandbox_id:/);
    refuses({ filter: { id: 'a'.repeat(300) } }, /^filter\.id:/);
  });
  it('refuses names, namespaces, label keys and values, and annotations over their bounds', () => {
    refuses({ config: { metadata: { name: 'n'.repeat(254) } } }, /config\.metadata\.name/);
    refuses({ config: { metadata: { namespace: 'n'.repeat(64) } } }, /config\.metadata\.namespace/);
    refuses({ config: { labels: { ['k'.repeat(318)]: 'v' } } }, /config\.labels key/);
    refuses({ filter: { labelSelector: { k: 'v'.repeat(254) } } }, /filter\.label_selector\["k"\]/);
    refuses({ config: { annotations: { a: 'v'.repeat(REQUEST_BOUNDS.annotationsTotal) } } }, /config\.annotations: 262145 characters in all/);
  });
  it('walks lists of messages', () => {
    refuses({ containers: [{ id: 'ok' }, { id: 'a'.repeat(257) }] }, /containers\[1\]\.id/);
  });
  it('never quotes more than a short prefix', () => {
    try {
      checkRequestBounds({ containerId: 'z'.repeat(1 << 20) });
      assert.fail('expected a refusal');
    } catch (err) {
      assert.ok((err as Error).message.length < 250);
    }
  });
});

describe('status details', () => {
  it('are cut to a bounded length whatever an error says', () => {
    const { details } = toGrpcStatus(new InvalidArgumentError('x'.repeat(100_000)));
    assert.equal(details.length, MAX_STATUS_DETAILS);
  });
});
