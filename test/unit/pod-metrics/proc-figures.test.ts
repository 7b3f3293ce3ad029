// What /proc says for the metrics: net/dev, cgroup.procs, /proc/partitions and dev numbers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePartitions, splitDev } from '../../../src/pod-metrics/proc-figures';
import { parsePids } from '../../../src/cgroups/parse';
import { parseNetDev } from '../../../src/cgroups/net-dev';

describe('/proc parsing for metrics', () => {
  it('net/dev: all eight counters of every interface but lo', () => {
    const text = [
      'Inter-|   Receive                                                |  Transmit',
      ' face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed',
      '    lo:     100       1    0    0    0     0          0         0      100       1    0    0    0     0       0          0',
      '  eth0:    5000      50    1    2    0     0          0         0     3000      30    3    4    0     0       0          0',
    ].join('\n');
    assert.deepEqual(parseNetDev(text), [{ name: 'eth0', rxBytes: 5000n, rxPackets: 50n, rxErrors: 1n, rxDropped: 2n, txBytes: 3000n, txPackets: 30n, txErrors: 3n, txDropped: 4n }]);
  });

  it('cgroup.procs, /proc/partitions and dev numbers', () => {
    assert.deepEqual(parsePids('12\n345\n\n'), [12, 345]);
    assert.deepEqual([...parsePartitions('major minor  #blocks  name\n\n 254        0  268435456 vda\n   8       1    1000 sda1\n')], [['254:0', '/dev/vda'], ['8:1', '/dev/sda1']]);
    assert.deepEqual(splitDev(254 * 256 + 3), { major: 254, minor: 3 });
    assert.deepEqual(splitDev(259 * 256 + (0x1000 << 12)), { major: 259, minor: 4096 });
  });
});
