// The cgroup v2 lane: the shim's single executable in a Debian trixie guest booted by QEMU (TCG)
// on the unified hierarchy, with Docker's systemd cgroup driver, and a short suite
// (dist/test/cgroup2/*.test.js) run from here against it over QEMU's port forwards on 127.0.0.1.
// These machines boot cgroup v1 and cannot switch; this is where v2 is tried on real kernel files.
//   node test/cgroup2/lane.mjs     (root; after `npm run build`; test/run.mjs runs it under CI)
// Steps, each timed: the single executable (scripts/package.mjs sea), the guest image
// (build-guest.sh: kept between runs while its inputs are unchanged), the boot until the shim
// answers, the suite, the power-off. Every wait has a deadline; the guest's disk is thrown away.
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { projectNode, projectNodeEnv } from '../../scripts/project-node.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const vmDir = process.env.CDS_V2_VM_DIR ?? '/var/tmp/cds-cgroup2-lane';
// Generous: TCG makes the guest 10-20x slower than the host, and other work shares the 2 cores
// (seen: the guest image built in 42 s, the shim answering 57-150 s after QEMU starts, the suite
// 27-40 s, with host loads of 1-10). Bounded all the same, so that the lane's worst case (about
// 20 min with a first build) stays inside CI's budget.
const BUILD_DEADLINE_S = 480;
const BOOT_DEADLINE_MS = Number(process.env.CDS_V2_BOOT_DEADLINE_MS ?? 300_000);
const SUITE_DEADLINE_MS = 300_000;
const POWEROFF_DEADLINE_MS = 90_000;

const costs = [];
const say = (m) => console.log(`cgroup2 lane: ${m}`);
async function step(name, fn) {
  const t0 = Date.now();
  try {
    return await fn();
  } finally {
    costs.push([name, (Date.now() - t0) / 1000]);
    say(`${name}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
}
function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})`);
}

/** A port free on 127.0.0.1 now (QEMU takes it a moment later; a clash fails the boot loudly). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function request(port, method, pathname, timeoutMs = 30_000) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: pathname, timeout: timeoutMs }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

async function until(what, deadlineMs, probe, alive) {
  const deadline = Date.now() + deadlineMs;
  let last;
  for (;;) {
    if (!alive()) throw new Error(`QEMU exited while waiting for ${what}`);
    try {
      if (await probe()) return;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}${last ? ` (${last.message})` : ''}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

const exe = path.join(root, 'dist', 'package', 'cri-docker-shim');
let ok = false;
let qemu;
let qemuExited = false;
let work;
let ports;
const consoleLog = path.join(vmDir, 'console.log');
try {
  await step('single executable', () => run(process.execPath, [path.join(root, 'scripts', 'package.mjs'), 'sea'], { cwd: root }));
  // timeout(1) ends the whole build (mmdebstrap and apt under it), not just its shell.
  await step('guest image', () => run('timeout', [String(BUILD_DEADLINE_S), 'bash', path.join(here, 'build-guest.sh'), vmDir]));

  // This run's disks: a copy-on-write layer over the image, and the lane's own (start.sh, the
  // executable, the file reader, the ports), both removed at the end.
  work = fs.mkdtempSync(path.join(vmDir, 'run-'));
  ports = { docker: await freePort(), cri: await freePort(), stream: await freePort(), files: await freePort() };
  const laneDir = path.join(work, 'lane');
  fs.mkdirSync(laneDir);
  for (const f of ['start.sh', 'guest-files.js']) fs.copyFileSync(path.join(here, f), path.join(laneDir, f));
  fs.chmodSync(path.join(laneDir, 'start.sh'), 0o755);
  fs.copyFileSync(exe, path.join(laneDir, 'cri-docker-shim'));
  fs.chmodSync(path.join(laneDir, 'cri-docker-shim'), 0o755);
  // The same port numbers inside: the streaming server's URLs then name a port forwarded here.
  fs.writeFileSync(path.join(laneDir, 'ports.env'), `CRI_PORT=${ports.cri}\nSTREAM_PORT=${ports.stream}\nFILES_PORT=${ports.files}\n`);
  await step('lane disk', () => {
    run('truncate', ['-s', '512M', path.join(work, 'lane.img')]);
    run('mkfs.ext4', ['-q', '-F', '-L', 'lane', '-d', laneDir, path.join(work, 'lane.img')]);
    run('qemu-img', ['create', '-q', '-f', 'qcow2', '-b', path.join(vmDir, 'root.img'), '-F', 'raw', path.join(work, 'run.qcow2')]);
  });

  const fwd = [
    `hostfwd=tcp:127.0.0.1:${ports.docker}-:2375`,
    `hostfwd=tcp:127.0.0.1:${ports.cri}-:${ports.cri}`,
    `hostfwd=tcp:127.0.0.1:${ports.stream}-:${ports.stream}`,
    `hostfwd=tcp:127.0.0.1:${ports.files}-:${ports.files}`,
  ].join(',');
  const log = fs.openSync(consoleLog, 'w');
  await step('boot until the shim answers', async () => {
    // restrict=on: the guest reaches nothing beyond the forwards (no registry, no internet).
    qemu = spawn('qemu-system-x86_64', [
      '-machine', 'q35', '-cpu', 'max', '-accel', 'tcg,thread=multi', '-smp', '2', '-m', '4G',
      '-nographic', '-no-reboot', '-kernel', path.join(vmDir, 'vmlinuz'), '-initrd', path.join(vmDir, 'initrd.img'),
      '-append', 'console=ttyS0 root=/dev/vda rw systemd.unified_cgroup_hierarchy=1 net.ifnames=0 quiet',
      '-drive', `file=${path.join(work, 'run.qcow2')},if=virtio,format=qcow2,cache=unsafe`,
      '-drive', `file=${path.join(work, 'lane.img')},if=virtio,format=raw,readonly=on`,
      '-nic', `user,model=virtio-net-pci,restrict=on,${fwd}`,
    ], { stdio: ['ignore', log, log] });
    qemu.once('exit', () => (qemuExited = true));
    // An interrupted lane leaves no guest taking both cores behind it.
    for (const signal of ['SIGINT', 'SIGTERM']) {
      process.once(signal, () => {
        qemu.kill('SIGKILL');
        if (work) fs.rmSync(work, { recursive: true, force: true });
        process.exit(1);
      });
    }
    const { criClient } = await import(path.join(root, 'dist', 'test', 'support', 'client.js'));
    await until('the shim in the guest to answer Version', BOOT_DEADLINE_MS, async () => {
      // A client, and a subchannel, of its own for each attempt: QEMU takes the connection and
      // drops it while nothing listens in the guest, and a channel's reconnect backoff after such
      // failures (up to 2 minutes) would hide the shim's coming up.
      const client = criClient(`127.0.0.1:${ports.cri}`, { 'grpc.use_local_subchannel_pool': 1 });
      try {
        await client.runtime.Version({}, { deadline: Date.now() + 30_000 });
        return true;
      } finally {
        client.close();
      }
    }, () => !qemuExited);
  });

  const tests = fs.readdirSync(path.join(root, 'dist', 'test', 'cgroup2')).filter((f) => f.endsWith('.test.js'));
  await step('suite', () => {
    // On the project's Node, as test/run.mjs runs the other suites, whichever Node runs this
    // (CI's npm test: Debian's).
    const r = spawnSync(projectNode(), ['--test', '--test-concurrency=1', '--test-reporter=spec', `--test-timeout=${SUITE_DEADLINE_MS}`,
      ...tests.map((f) => path.join(root, 'dist', 'test', 'cgroup2', f))], {
      stdio: 'inherit',
      cwd: root,
      timeout: SUITE_DEADLINE_MS,
      env: projectNodeEnv({
        ...process.env,
        CDS_V2_CRI: `127.0.0.1:${ports.cri}`,
        CDS_V2_DOCKER_PORT: String(ports.docker),
        CDS_V2_STREAM_PORT: String(ports.stream),
        CDS_V2_FILES_PORT: String(ports.files),
      }),
    });
    if (r.error) console.error(`cgroup2 lane: the suite: ${r.error.message}`);
    ok = r.status === 0;
  });
} catch (err) {
  console.error(`cgroup2 lane: ${err.message}`);
} finally {
  if (!ok && ports && qemu && !qemuExited) {
    const shimLog = await request(ports.files, 'GET', '/read?path=/root/shim.log').catch((e) => ({ body: `(unreadable: ${e.message})` }));
    console.error(`--- the guest's shim log (last 40 lines):\n${shimLog.body.split('\n').slice(-40).join('\n')}`);
  }
  if (qemu && !qemuExited) {
    await step('power-off', async () => {
      await request(ports.files, 'POST', '/poweroff').catch(() => undefined);
      await until('the guest to power off', POWEROFF_DEADLINE_MS, () => qemuExited, () => true).catch(() => {
        say('the guest did not power off in time: ending QEMU');
        qemu.kill('SIGKILL');
      });
    });
  }
  if (!ok && fs.existsSync(consoleLog)) {
    console.error(`--- the guest's console (${consoleLog}, last 30 lines):\n${fs.readFileSync(consoleLog, 'utf8').split('\n').slice(-30).join('\n')}`);
  }
  if (work) fs.rmSync(work, { recursive: true, force: true });
  say(`cost: ${costs.map(([n, s]) => `${n} ${s.toFixed(0)} s`).join(', ')}; total ${costs.reduce((a, [, s]) => a + s, 0).toFixed(0)} s`);
}
process.exit(ok ? 0 : 1);
