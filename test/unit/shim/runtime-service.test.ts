// The RuntimeService table (src/shim/runtime-service.ts) against the proto served: every RPC
// is in the table or deliberately left to the adapter's UNIMPLEMENTED, and the v1.37 RPCs the
// shim does not serve answer UNIMPLEMENTED with their reason.
import assert from 'node:assert/strict';
import { status as Code } from '@grpc/grpc-js';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type * as grpc from '@grpc/grpc-js';
import { criContract } from '../../../src/cri/contract';
import { toGrpcStatus, UnimplementedError } from '../../../src/errors';
import { runtimeService } from '../../../src/shim/runtime-service';
import { callContext, fakeShimContext, type FakeShim } from '../../support/fake-context';

/** RPCs the table leaves out on purpose: ../grpc/adapter.ts answers them UNIMPLEMENTED, naming them. */
const LEFT_TO_THE_ADAPTER = ['CheckpointContainer'];

describe('the RuntimeService table', () => {
  let f: FakeShim;
  beforeEach(async () => (f = await fakeShimContext()));
  afterEach(() => f.close());

  it('has every RPC of the proto but those left to the adapter, and nothing else', () => {
    const rpcs = Object.keys((criContract().runtime.v1 as unknown as Record<string, { service: grpc.ServiceDefinition }>).RuntimeService!.service);
    const table = Object.keys(runtimeService(f.shim));
    assert.deepEqual(table.filter((name) => !rpcs.includes(name)), [], 'no handler for an RPC the proto lacks');
    assert.deepEqual(rpcs.filter((name) => !table.includes(name)).sort(), LEFT_TO_THE_ADAPTER);
    assert.ok(table.includes('CheckpointPod') && table.includes('RestorePod'));
  });

  it('answers CheckpointPod and RestorePod (CRI v1.37) UNIMPLEMENTED, naming the RPC and why, before looking at anything', async () => {
    const table = runtimeService(f.shim);
    const answers = [
      ['CheckpointPod', table.CheckpointPod!({ podSandboxId: 'p', outputPath: '/tmp/x', containerIds: ['c'], options: {} }, callContext('CheckpointPod'))],
      ['RestorePod', table.RestorePod!({ checkpointPath: '/tmp/x', config: null, runtimeHandler: '', options: {}, containerConfigs: [] }, callContext('RestorePod'))],
    ] as const;
    for (const [rpc, answer] of answers) {
      await assert.rejects(answer, (err: unknown) => {
        assert.ok(err instanceof UnimplementedError, String(err));
        assert.equal(toGrpcStatus(err).code, Code.UNIMPLEMENTED);
        assert.match(err.message, new RegExp(`^${rpc}: cri-docker-shim does not (checkpoint|restore) pods .*\\(.+\\)$`));
        return true;
      });
    }
    assert.equal(f.docker.calls.length, 0, 'no Docker call');
  });
});
