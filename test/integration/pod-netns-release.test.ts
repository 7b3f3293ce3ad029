// A pod's network namespace ends with its pause process, whatever the stats and metrics RPCs
// read from it: a file open in /proc/<pid>/net holds a reference to the namespace, so a
// descriptor kept between scrapes kept a stopped pod's namespace (and every interface in it)
// alive until the next scrape or sweep. Each test puts one end of a veth pair of its own into
// the pod's namespace; the host end goes away when, and only when, the namespace is destroyed.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { describe, it } from 'node:test';
import { dockerApi } from '../support/images';
import { waitFor } from '../support/poll';
import { useShim } from '../support/fixture';
import type { TestPod } from '../support/pods';

function linkExists(name: string): boolean {
  return fs.existsSync(`/sys/class/net/${name}`);
}

describe("a pod's network namespace after a scrape", () => {
  const f = useShim();
  const links: string[] = [];
  f.onCleanUp(() => {
    for (const link of links) if (linkExists(link)) execFileSync('ip', ['link', 'del', link]);
  });

  /** A running pod with a veth pair of the test's own across its namespace; answers the host end. */
  async function podWithVeth(name: string): Promise<{ pod: TestPod; hostEnd: string }> {
    const pod = await f.startPod(name);
    const pid = (await dockerApi().getContainer(pod.id).inspect()).State.Pid;
    const hostEnd = `cdsnr${randomBytes(4).toString('hex')}`;
    links.push(hostEnd);
    execFileSync('ip', ['link', 'add', hostEnd, 'type', 'veth', 'peer', 'name', 'cdsnrpod', 'netns', String(pid)]);
    return { pod, hostEnd };
  }

  const scrapes = {
    ListPodSandboxStats: async (pod: TestPod): Promise<boolean> => {
      const { stats } = await f.client.runtime.ListPodSandboxStats({ filter: { id: pod.id } });
      return (stats[0]?.linux?.network?.interfaces.length ?? 0) > 0;
    },
    ListPodSandboxMetrics: async (pod: TestPod): Promise<boolean> => {
      const { podMetrics } = await f.client.runtime.ListPodSandboxMetrics({});
      const ours = podMetrics.find((m) => m.podSandboxId === pod.id);
      return (ours?.metrics ?? []).some((m) => m.name === 'container_network_receive_bytes_total');
    },
  };

  for (const [rpc, scrape] of Object.entries(scrapes)) {
    it(`ends when the pod is stopped and removed after ${rpc} read its interfaces`, async () => {
      const { pod, hostEnd } = await podWithVeth(`netns-${rpc === 'ListPodSandboxStats' ? 'stats' : 'metrics'}`);
      // Read twice: the second read is the one a descriptor kept from the first would serve.
      assert.ok(await scrape(pod), `${rpc} has the pod's interfaces`);
      assert.ok(await scrape(pod));
      assert.ok(linkExists(hostEnd));
      await f.client.runtime.StopPodSandbox({ podSandboxId: pod.id });
      await f.removePod(pod);
      await waitFor(`the veth ${hostEnd} in the removed pod's namespace to go`, () => !linkExists(hostEnd), { timeoutMs: 10_000 });
    });
  }

  it('ends when the pause process dies behind the shim, without a Stop or another scrape', async () => {
    const { pod, hostEnd } = await podWithVeth('netns-killed');
    assert.ok(await scrapes.ListPodSandboxStats(pod));
    assert.ok(await scrapes.ListPodSandboxMetrics(pod));
    await dockerApi().getContainer(pod.id).kill();
    await waitFor(`the veth ${hostEnd} in the dead pod's namespace to go`, () => !linkExists(hostEnd), { timeoutMs: 10_000 });
  });
});
