// The one set of resource rules pods and containers share.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { LinuxContainerResources__Output } from '../../src/cri/types';
import { InvalidArgumentError, UnimplementedError } from '../../src/errors';
import { toDockerResources } from '../../src/shim/container/resources';
import { checkResources, refuseUnsupported } from '../../src/shim/resources';

function resources(over: Partial<LinuxContainerResources__Output> = {}): LinuxContainerResources__Output {
  return {
    cpuPeriod: '0',
    cpuQuota: '0',
    cpuShares: '0',
    memoryLimitInBytes: '0',
    oomScoreAdj: '0',
    cpusetCpus: '',
    cpusetMems: '',
    hugepageLimits: [],
    unified: {},
    memorySwapLimitInBytes: '0',
    ...over,
  };
}

describe('shared resource rules', () => {
  it('accepts -1 as "no CPU quota"', () => {
    assert.equal(checkResources('r', resources({ cpuQuota: '-1' })).docker.CpuQuota, -1);
  });

  it('treats hugepage limits of 0 (kubelet lists every size) as nothing asked', () => {
    const r = resources({ hugepageLimits: [{ pageSize: '2MB', limit: '0' }, { pageSize: '1GB', limit: '0' }] });
    const checked = checkResources('r', r);
    assert.deepEqual(checked.unsupported, []);
    assert.doesNotThrow(() => refuseUnsupported('r', r, checked));
  });

  it('refuses a non-zero hugepage limit and unified entries as UNIMPLEMENTED, naming them', () => {
    const huge = resources({ hugepageLimits: [{ pageSize: '2MB', limit: '4194304' }] });
    assert.throws(() => refuseUnsupported('r', huge, checkResources('r', huge)), (e: unknown) => e instanceof UnimplementedError && /r\.hugepage_limits: .*2MB: 4194304/.test(e.message));
    const unified = resources({ unified: { 'memory.high': '1000000' } });
    assert.throws(() => refuseUnsupported('r', unified, checkResources('r', unified)), (e: unknown) => e instanceof UnimplementedError && /r\.unified: .*memory\.high/.test(e.message));
  });

  it('refuses a swap limit without a memory limit', () => {
    assert.throws(() => checkResources('r', resources({ memorySwapLimitInBytes: '134217728' })), (e: unknown) => e instanceof InvalidArgumentError && /needs memory_limit_in_bytes/.test(e.message));
  });

  it('gives containers their oom_score_adj at create', () => {
    assert.deepEqual(toDockerResources('config.linux.resources', resources({ oomScoreAdj: '500', memoryLimitInBytes: '67108864' })), {
      Memory: 67108864,
      MemorySwap: 67108864,
      OomScoreAdj: 500,
    });
  });
});
