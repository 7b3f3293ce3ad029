// The one set of resource rules pods and containers share.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { InvalidArgumentError, UnimplementedError } from '../../../../src/errors';
import { toDockerResources } from '../../../../src/translate/to-docker/container-resources';
import { checkResources, refuseUnsupported } from '../../../../src/translate/to-docker/linux-resources';
import { linuxResources } from '../../../support/fixtures/cri';

describe('shared resource rules', () => {
  it('accepts -1 as "no CPU quota"', () => {
    assert.equal(checkResources('r', linuxResources({ cpuQuota: '-1' })).docker.CpuQuota, -1);
  });

  it('keeps a CPU quota within the kernel’s 2^44-1 µs and refuses a larger one (it failed only at start, with a 500)', () => {
    assert.equal(checkResources('r', linuxResources({ cpuQuota: '17592186044415' })).docker.CpuQuota, 2 ** 44 - 1);
    for (const q of ['17592186044416', '9007199254740991']) {
      assert.throws(
        () => checkResources('r', linuxResources({ cpuQuota: q })),
        (e: unknown) => e instanceof InvalidArgumentError && e.message === `r.cpu_quota: ${q} is outside 1000..17592186044415 µs (0 means unset)`,
      );
    }
  });

  it('treats hugepage limits of 0 (kubelet lists every size) as nothing asked', () => {
    const r = linuxResources({ hugepageLimits: [{ pageSize: '2MB', limit: '0' }, { pageSize: '1GB', limit: '0' }] });
    const checked = checkResources('r', r);
    assert.deepEqual(checked.unsupported, []);
    assert.doesNotThrow(() => refuseUnsupported('r', r, checked));
  });

  it('refuses a non-zero hugepage limit and unified entries as UNIMPLEMENTED, naming them', () => {
    const huge = linuxResources({ hugepageLimits: [{ pageSize: '2MB', limit: '4194304' }] });
    assert.throws(() => refuseUnsupported('r', huge, checkResources('r', huge)), (e: unknown) => e instanceof UnimplementedError && /r\.hugepage_limits: .*2MB: 4194304/.test(e.message));
    const unified = linuxResources({ unified: { 'memory.high': '1000000' } });
    assert.throws(() => refuseUnsupported('r', unified, checkResources('r', unified)), (e: unknown) => e instanceof UnimplementedError && /r\.unified: .*memory\.high/.test(e.message));
  });

  it('refuses a swap limit without a memory limit', () => {
    assert.throws(() => checkResources('r', linuxResources({ memorySwapLimitInBytes: '134217728' })), (e: unknown) => e instanceof InvalidArgumentError && /needs memory_limit_in_bytes/.test(e.message));
  });

  it('gives containers their oom_score_adj at create', () => {
    assert.deepEqual(toDockerResources('config.linux.resources', linuxResources({ oomScoreAdj: '500', memoryLimitInBytes: '67108864' })), {
      Memory: 67108864,
      MemorySwap: 67108864,
      OomScoreAdj: 500,
    });
  });
});
