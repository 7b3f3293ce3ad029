// HostportManager's own bookkeeping at scale, without iptables: a runner that keeps the nat
// table as the last restore wrote it. The real rules are tested in
// test/integration/hostport-manager.test.ts.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { setTimeout as nextTimer } from 'node:timers/promises';
import type { PortMapping } from '../../../../src/network/network-host';
import { HostPortInUseError, HostportManager } from '../../../../src/network/hostport/hostport-manager';
import type { PodHostports } from '../../../../src/network/hostport/hostport-rules';
import type { CommandRunner } from '../../../../src/network/hostport/runner';

/** iptables for one nat table: -save prints what the last -restore declared and appended. */
class TableRunner implements CommandRunner {
  readonly where = 'fake';
  table = '';
  restores = 0;
  async run(command: string, _args: readonly string[], input?: string): Promise<string> {
    if (command === 'iptables-save') return this.table;
    if (command === 'iptables-restore') {
      this.restores += 1;
      this.table = (input ?? '')
        .split('\n')
        .filter((l) => !l.startsWith('-X ') && !l.startsWith('-D '))
        .join('\n');
      return '';
    }
    throw new Error(`unexpected command ${command}`);
  }
}

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const C = 'c'.repeat(64);

function manyPorts(sandboxId: string, ip: string, first: number, extra: PortMapping[] = []): PodHostports {
  const portMappings = Array.from({ length: 4000 }, (_, i): PortMapping => ({ protocol: 'TCP', hostPort: first + i, containerPort: 80, hostIp: '' }));
  return { sandboxId, ips: [ip], portMappings: [...portMappings, ...extra] };
}

function hostportRules(table: string): number {
  return table.split('\n').filter((l) => l.startsWith('-A CDS-HOSTPORTS ')).length;
}

// Adding the second pod scanned every mapping of every pod for each of its mappings: 45 s of
// event loop for two pods of 4,000 ports, and as long again for syncAll after every restart.
describe('host port manager with two pods of 4,000 host ports each', () => {
  const a = manyPorts(A, '10.0.0.2', 20000);
  const clashing = manyPorts(B, '10.0.0.3', 30000, [{ protocol: 'TCP', hostPort: 23999, containerPort: 80, hostIp: '' }]);
  const c = manyPorts(C, '10.0.0.4', 40000);

  it('refuses the second when its last port is taken, and adds one that fits', { timeout: 10_000 }, async () => {
    const runner = new TableRunner();
    const manager = new HostportManager({ runner, portHolder: null, families: [4] });
    await manager.add(a);
    await assert.rejects(manager.add(clashing), (e: unknown) => e instanceof HostPortInUseError && /TCP\/23999 is already used by pod sandbox aaaaaaaaaaaa/.test(e.message));
    await manager.add(c);
    assert.equal(hostportRules(runner.table), 8000);
    await manager.remove(A);
    assert.equal(hostportRules(runner.table), 4000);
    // The timeout can only be reported once a timer runs: a blocked event loop holds it back.
    await nextTimer(0);
  });

  it('syncAll keeps the first of two clashing pods and every pod that fits', { timeout: 10_000 }, async () => {
    const runner = new TableRunner();
    const manager = new HostportManager({ runner, portHolder: null, families: [4] });
    const report = await manager.syncAll([a, clashing, c]);
    assert.deepEqual(report.conflicts, [`pod sandbox ${B.slice(0, 12)}: host port TCP/23999 is already used by pod sandbox ${A.slice(0, 12)}`]);
    assert.equal(report.chains[4], 8000);
    assert.equal(hostportRules(runner.table), 8000);
    // A restart: a new manager told the same pods again finds them all in the table.
    const again = await new HostportManager({ runner, portHolder: null, families: [4] }).syncAll([c, a]);
    assert.deepEqual(again.conflicts, []);
    assert.deepEqual(again.deleted, []);
    await nextTimer(0);
  });
});
