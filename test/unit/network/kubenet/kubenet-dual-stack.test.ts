import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import pino from 'pino';
import type { CommandRunner } from '../../../../src/network/hostport/runner';
import { KubenetNetworkPlugin } from '../../../../src/network/kubenet/kubenet-plugin';
import type { NetworkHost } from '../../../../src/network/network-host';

/** The iptables-restore inputs kubenet writes for kubelet's two pod CIDRs, by family. */
async function rulesFor(dualStack: boolean): Promise<{ v4: string; v6: string }> {
  const cidrs = ['10.1.0.0/24', 'fd00:1::/64'];
  const restored: Record<string, string> = {};
  const runner: CommandRunner = {
    where: 'host',
    run: async (command, _args, input) => {
      if (command.endsWith('-restore')) restored[command] = input ?? '';
      return '';
    },
  };
  const host = { podCidrs: () => cidrs } as unknown as NetworkHost;
  const plugin = new KubenetNetworkPlugin(
    { binDirs: ['/nonexistent'], cacheDir: '/nonexistent', mtu: 1500, hairpinMode: 'none', nonMasqueradeCidr: '10.0.0.0/8', dualStack, runner },
    host,
    pino({ level: 'silent' }),
  );
  plugin.podCidrsChanged(cidrs);
  // A pod's set-up waits for the rules first, then fails here (no CNI plugins): the rules are written by then.
  await assert.rejects(plugin.setUpPod({ sandboxId: 'a'.repeat(64), podName: 'p', podNamespace: 'n', podUid: 'u', annotations: {} }, undefined), /kubenet needs the CNI plugins/);
  return { v4: restored['iptables-restore'] ?? '', v6: restored['ip6tables-restore'] ?? '' };
}

describe('kubenet and --ipv6-dual-stack', () => {
  it('uses only the first pod CIDR without it, as cri-dockerd does', async () => {
    const { v4, v6 } = await rulesFor(false);
    assert.match(v4, /10\.1\.0\.0\/24/);
    assert.doesNotMatch(v6, /fd00:1::\/64/);
  });

  it('uses both with it', async () => {
    const { v4, v6 } = await rulesFor(true);
    assert.match(v4, /10\.1\.0\.0\/24/);
    assert.match(v6, /fd00:1::\/64/);
  });
});
