// Answers to values no kubelet sends, through the real shim and Docker: a wait of years
// (StopContainer's, ExecSync's timeout, up to int64's) is a long wait, never INTERNAL nor one
// that ends at once; a registry credential too long for Docker's 1 MiB header is refused
// before Docker sees it; and a full root directory makes RunPodSandbox RESOURCE_EXHAUSTED
// naming the directory, leaves nothing half-made, and works again once space is freed.
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { status as Code } from '@grpc/grpc-js';
import { rejectsWith } from '../support/client';
import { TEST_LABEL } from '../support/cleanup';
import { useShim } from '../support/fixture';
import { dockerApi, TEST_BUSYBOX_IMAGE } from '../support/images';
import { busybox, logFile, podConfig, waitExited } from '../support/pods';
import { waitFor } from '../support/poll';

/** The fuzzer's StopContainer timeout: 907,189,589 s (28.7 years). */
const YEARS = '907189589';
const INT64_MAX = '9223372036854775807';

describe('waits of years', () => {
  const f = useShim({ pod: 'waits' });

  it('StopContainer with a timeout of years sends the stop signal and answers OK once the container exits', async () => {
    // Exits on SIGTERM (within the second its sleep takes), so the long grace is never waited out.
    const id = await f.runContainer('term-exits', { command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done'] });
    await f.client.runtime.StopContainer({ containerId: id, timeout: YEARS });
    const status = await waitExited(f.client, id);
    assert.equal(status.exitCode, 0, 'it exited from its TERM trap, not killed');
  });

  it('StopContainer with int64’s largest timeout does the same', async () => {
    const id = await f.runContainer('term-exits-max', { command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done'] });
    await f.client.runtime.StopContainer({ containerId: id, timeout: INT64_MAX });
    assert.equal((await waitExited(f.client, id)).exitCode, 0);
  });

  it('ExecSync with a timeout past a timer’s 24.8 days runs the command to its end (it timed out at once)', async () => {
    const id = await f.runContainer('exec-target', { command: ['sleep', '3600'] });
    for (const timeout of ['3000000', INT64_MAX]) {
      const res = await f.client.runtime.ExecSync({ containerId: id, cmd: ['sh', '-c', 'sleep 1; echo done'], timeout });
      assert.equal(res.exitCode, 0, timeout);
      assert.equal(res.stdout.toString(), 'done\n', timeout);
    }
  });

  it('a negative timeout is INVALID_ARGUMENT naming the field', async () => {
    await assert.rejects(
      f.client.runtime.StopContainer({ containerId: f.pod.id, timeout: '-1' }),
      rejectsWith(Code.INVALID_ARGUMENT, /^timeout: "-1" must be a number of seconds, 0 or more$/),
    );
  });
});

describe('PullImage with an oversized credential', () => {
  const f = useShim();

  it('a 790 KB server_address is INVALID_ARGUMENT naming the field (Docker answered 431: UNKNOWN)', async () => {
    const auth = { username: 'u', password: 'p', serverAddress: 'r'.repeat(790_000) };
    await assert.rejects(
      f.client.images.PullImage({ image: { image: TEST_BUSYBOX_IMAGE }, auth }),
      rejectsWith(Code.INVALID_ARGUMENT, /^auth\.server_address: 790000 characters; at most 16384 are allowed$/),
    );
  });

  it('a 1 MB registry token likewise, never echoing it', async () => {
    const token = 't'.repeat(1_000_000);
    await assert.rejects(f.client.images.PullImage({ image: { image: TEST_BUSYBOX_IMAGE }, auth: { registryToken: token } }), (err: unknown) => {
      rejectsWith(Code.INVALID_ARGUMENT, /^auth\.registry_token: 1000000 characters/)(err);
      assert.doesNotMatch((err as Error).message, /tttt/);
      return true;
    });
  });
});

describe('RunPodSandbox with the root directory’s filesystem full', () => {
  const f = useShim({ shim: false });

  /** A 1 MiB tmpfs for the shim's root directory, unmounted at clean-up (after the shim stops). */
  function smallRoot(): string {
    const mountPoint = f.tempDir('full-root');
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', mountPoint]);
    f.onCleanUp(() => {
      execFileSync('umount', [mountPoint]);
    });
    return mountPoint;
  }

  /** Writes `file` until the filesystem has no room left. */
  function fill(file: string): void {
    const fd = fs.openSync(file, 'w');
    try {
      const chunk = Buffer.alloc(4096, 1);
      for (;;) fs.writeSync(fd, chunk);
    } catch (err) {
      assert.equal((err as NodeJS.ErrnoException).code, 'ENOSPC');
    } finally {
      fs.closeSync(fd);
    }
  }

  async function containersOf(app: string): Promise<string[]> {
    const list = await dockerApi().listContainers({ all: true, filters: { label: [`${TEST_LABEL}=${f.run}`, `app=${app}`] } });
    return list.map((c) => c.Id);
  }

  it('answers RESOURCE_EXHAUSTED naming the directory, leaves nothing, lets reads go on, and works once space is freed', async () => {
    const root = smallRoot();
    const { shim } = await f.startShim({ rootDir: root });
    const filler = path.join(root, 'filler');
    fill(filler);

    const config = podConfig(f.run);
    const app = config.labels!.app!;
    const sandboxDir = path.join(root, 'sandbox');
    await assert.rejects(
      shim.client.runtime.RunPodSandbox({ config }),
      rejectsWith(Code.RESOURCE_EXHAUSTED, new RegExp(`^no space left on device in ${sandboxDir} \\(ENOSPC on write\\)$`)),
    );
    assert.deepEqual(await containersOf(app), [], 'no pause container left');
    const left = fs.existsSync(sandboxDir) ? fs.readdirSync(sandboxDir) : [];
    assert.deepEqual(left, [], 'no checkpoint (nor temp file) left');
    const { items } = await shim.client.runtime.ListPodSandbox({ filter: { labelSelector: { app } } });
    assert.deepEqual(items, [], 'ListPodSandbox answers');

    fs.rmSync(filler);
    const { podSandboxId } = await shim.client.runtime.RunPodSandbox({ config });
    f.trackPod(podSandboxId, shim.client);
    assert.deepEqual(await containersOf(app), [podSandboxId]);
    const listed = await shim.client.runtime.ListPodSandbox({ filter: { labelSelector: { app } } });
    assert.deepEqual(
      listed.items.map((s) => [s.id, s.state]),
      [[podSandboxId, 'SANDBOX_READY']],
    );
  });

  it('StartContainer answers RESOURCE_EXHAUSTED naming the directory and leaves no container running unlogged', async () => {
    const root = smallRoot();
    const { shim } = await f.startShim({ rootDir: root });
    const pod = await f.startPod('full-start', {}, shim.client);
    const create = async (name: string): Promise<string> =>
      (await shim.client.runtime.CreateContainer({ podSandboxId: pod.id, config: busybox(f.run, name, { command: ['sh', '-c', 'echo up; sleep 3600'] }), sandboxConfig: pod.config })).containerId;
    const first = await create('first');
    const filler = path.join(root, 'filler');
    fill(filler);

    const recordDir = path.join(root, 'container-logs');
    await assert.rejects(
      shim.client.runtime.StartContainer({ containerId: first }),
      rejectsWith(Code.RESOURCE_EXHAUSTED, new RegExp(`^no space left on device in ${recordDir} \\(ENOSPC on \\w+\\)$`)),
    );
    const { status } = await shim.client.runtime.ContainerStatus({ containerId: first });
    assert.equal(status?.state, 'CONTAINER_EXITED', 'stopped, not left running unlogged');
    const left = fs.existsSync(recordDir) ? fs.readdirSync(recordDir) : [];
    assert.deepEqual(left, [], 'no record (nor temp file) left');

    fs.rmSync(filler);
    const second = await create('second');
    await shim.client.runtime.StartContainer({ containerId: second });
    const log = logFile(pod, 'second');
    await waitFor('the second container’s output in its CRI log', () => fs.existsSync(log) && fs.readFileSync(log, 'utf8').includes(' stdout F up'));

    // ReopenContainerLog saves the follower's record first: on a full disk it answers the same,
    // and once space is freed a reopen works.
    fill(filler);
    await assert.rejects(
      shim.client.runtime.ReopenContainerLog({ containerId: second }),
      rejectsWith(Code.RESOURCE_EXHAUSTED, new RegExp(`^no space left on device in ${recordDir} \\(ENOSPC on \\w+\\)$`)),
    );
    fs.rmSync(filler);
    fs.renameSync(log, `${log}.1`);
    await shim.client.runtime.ReopenContainerLog({ containerId: second });
    assert.ok(fs.existsSync(log), 'a fresh log file');
  });
});
