// Runs the whole test suite with node's built-in runner: builds the offline test images once,
// runs every compiled *.test.js (unit tests need no Docker; integration tests use the real
// engine), then sweeps any container a failed test left behind. The cgroup v2 lane's suite
// (dist/test/cgroup2) needs its guest: test/cgroup2/lane.mjs runs it, as the last pass.
// Usage: node test/run.mjs [substring ...]   (only test files whose path contains one of them)
// The tests run on the project's Node whichever Node runs this (scripts/project-node.mjs), with
// it first on their PATH: the shim they start through its shebang runs on it too, and takes the
// code cache the build made with it.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { projectNode, projectNodeEnv } from '../scripts/project-node.mjs';

const require = createRequire(import.meta.url);
const root = new URL('..', import.meta.url).pathname;
const dist = join(root, 'dist', 'test');

function findTests(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    // The cgroup v2 lane's suite runs against its QEMU guest only (the last pass below).
    if (statSync(p).isDirectory()) return p === join(dist, 'cgroup2') ? [] : findTests(p);
    return p.endsWith('.test.js') ? [p] : [];
  });
}

const filters = process.argv.slice(2);
const files = findTests(dist)
  .filter((f) => filters.length === 0 || filters.some((s) => relative(dist, f).includes(s)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}

// Tests run the built command itself (its shebang carries Node flags); a plain `tsc` build
// leaves it without the execute bit that `npm run build` gives it.
const mainJs = join(root, 'dist', 'src', 'main.js');
if (existsSync(mainJs)) chmodSync(mainJs, 0o755);

const needsDocker = files.some((f) => !relative(dist, f).startsWith('unit'));

let node;
try {
  node = projectNode();
} catch (err) {
  console.error(err.message);
  process.exit(1);
}

/** Test files run after the others, alone (see runPass). */
const RUN_ALONE = /streaming-frame-floods/;

/**
 * Runs `testFiles` with node's runner on the engine Docker's socket names now, then sweeps the
 * containers they left; true when all passed.
 */
async function runPass(testFiles, label) {
  const docker = testFiles.some((f) => !relative(dist, f).startsWith('unit'));
  if (docker) {
    const { ensureTestImages } = require(join(dist, 'support', 'images.js'));
    try {
      await ensureTestImages();
    } catch (err) {
      console.error(`cannot prepare test images${label}: ${err.message}`);
      console.error('Is Docker running? Start it with ../shared/ci/docker-sandbox.sh or scripts/setup.sh.');
      return false;
    }
  }
  const session = `s${Date.now().toString(36)}${process.pid}`;
  const concurrency = process.env.TEST_CONCURRENCY ?? '2';
  const run = (list, withConcurrency) =>
    list.length === 0
      ? 0
      : spawnSync(node, ['--test', `--test-concurrency=${withConcurrency}`, '--test-reporter=spec', '--test-timeout=600000', ...list], {
          stdio: 'inherit',
          cwd: root,
          env: projectNodeEnv({ ...process.env, CDS_TEST_SESSION: session }),
        }).status;
  // Suites whose checks read the shim's call latency under an attack (the frame floods' Version
  // p99) run after the rest, one file at a time: a neighbour file's load is not the shim's.
  const alone = testFiles.filter((f) => RUN_ALONE.test(relative(dist, f)));
  const together = testFiles.filter((f) => !alone.includes(f));
  const statuses = [run(together, concurrency), run(alone, '1')];
  const result = { status: statuses.every((s) => s === 0) ? 0 : 1 };
  if (docker) {
    // Node's global agent keeps the connection the image check used alive (Node 19 on); spawnSync
    // held the event loop for the whole run, so its close by dockerd in the meantime was never
    // seen, and reusing it fails with EPIPE (seen after runs of 6 minutes and more on Node 20).
    // The sweep starts on new ones.
    (await import('node:http')).globalAgent.destroy();
    const { removeTestContainers } = require(join(dist, 'support', 'cleanup.js'));
    const left = await removeTestContainers({ session });
    if (left > 0) console.error(`removed ${left} container(s) that tests left behind${label}`);
  }
  return result.status === 0;
}

let passed = await runPass(files, '');

// A second pass of the Docker-dependent tests on a newer engine, started by
// ../shared/ci/docker-newer.sh with its own data root and switched `off` after: under CI, or with
// CDS_TEST_DOCKER_NEWER set. Docker 29 (`29`, the default: Docker Engine 29.7, API 1.55, the
// containerd image store, what a fresh install gets); `28c` or `28` for Debian's 28.5 with the
// containerd store or overlay2; `0` skips the pass. The first pass covers the oldest engine we
// serve (20.10, overlay2). The compose suites and the package's test (which would build their
// images again from nothing in that data root: a debootstrap of Debian) and the bench's smoke
// run stay on the default engine.
const newer = join(root, '..', 'shared', 'ci', 'docker-newer.sh');
const engine = process.env.CDS_TEST_DOCKER_NEWER ?? (process.env.CI === 'true' ? '29' : '0');
if (!['0', '29', '28c', '28'].includes(engine)) {
  console.error(`CDS_TEST_DOCKER_NEWER=${engine}: 29, 28c, 28 or 0`);
  process.exit(1);
}
if (needsDocker && engine !== '0' && existsSync(newer)) {
  const second = files.filter((f) => !relative(dist, f).startsWith('unit') && !/compose-|bench-smoke|deb-package/.test(relative(dist, f)));
  const label = ` on Docker ${engine}`;
  console.log(`\n# the Docker-dependent tests again on Docker ${engine} (${engine === '28' ? 'overlay2' : 'the containerd image store'}; ${second.length} files)`);
  const up = spawnSync('bash', [newer, engine], { stdio: 'inherit' });
  try {
    passed = (up.status === 0 && (await runPass(second, label))) && passed;
    if (up.status !== 0) console.error(`could not start Docker ${engine}: its pass did not run`);
  } finally {
    spawnSync('bash', [newer, 'off'], { stdio: 'inherit' });
  }
}

// The cgroup v2 lane (test/cgroup2/lane.mjs): the shim's single executable in a QEMU guest on
// the unified hierarchy with Docker's systemd cgroup driver, which these cgroup v1 machines
// cannot be. Under CI (CDS_TEST_CGROUP2=0 leaves it out), or with CDS_TEST_CGROUP2=1; 1.5-2.5 min
// with the guest image kept in /var/tmp, 1-3 min more when it is built first, at most ~20 min
// by its deadlines (CONTRIBUTING.md).
const wantV2 = process.env.CDS_TEST_CGROUP2 === '1' || (process.env.CI === 'true' && process.env.CDS_TEST_CGROUP2 !== '0');
if (needsDocker && wantV2) {
  const hasQemu = spawnSync('sh', ['-c', 'command -v qemu-system-x86_64'], { stdio: 'ignore' }).status === 0;
  // CI installs QEMU (test/cgroup2/build-guest.sh); a developer's machine is asked to.
  if (!hasQemu && process.env.CI !== 'true') {
    console.log('\n# the cgroup v2 lane is skipped: no qemu-system-x86_64 (apt-get install --no-install-recommends qemu-system-x86 qemu-utils mmdebstrap)');
  } else {
    console.log('\n# the cgroup v2 lane: the shim in a QEMU guest on cgroup v2 with Docker\'s systemd cgroup driver');
    passed = spawnSync(process.execPath, [join(root, 'test', 'cgroup2', 'lane.mjs')], { stdio: 'inherit', cwd: root }).status === 0 && passed;
  }
}
process.exit(passed ? 0 : 1);
