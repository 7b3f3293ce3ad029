// Makes the release artifacts from a build (`npm run build`) into dist/package (or --out):
//   sea    cri-docker-shim: one executable that needs no Node on the node. Node's single
//          executable application: a copy of the project's Node (scripts/project-node.mjs), which
//          made the code cache, with the shim injected (postject). Its main script is main.js
//          bundled with what it imports; the bundle, its code cache and the static pause and
//          port-relay programs ride along as assets (src/util/single-executable.ts).
//   deb    cri-docker-shim_<version>_<arch>.deb (dpkg-deb): that executable as /usr/bin/cri-docker-shim,
//          the systemd units, /etc/cri-docker-shim/config.yaml as a conffile; nothing enabled.
//   image  the three images of docker-compose.yml (scripts/build-image.sh).
//   node scripts/package.mjs [sea|deb|image ...] [--deb-compression=xz|gzip|none] [--out=DIR]
//   (default: all three; deb implies sea. xz, as Debian's own packages, is the smaller by a
//   third and the slower by ten times; the test, which throws the package away, takes none.)
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { projectNode } from './project-node.mjs';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const args = process.argv.slice(2);
const option = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const out = path.resolve(option('out') ?? path.join(dist, 'package'));
const work = path.join(out, 'work');
const NAME = 'cri-docker-shim';
/** Node's sentinel for the SEA blob in its binary (the same in every Node that has SEA). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

const say = (m) => process.stdout.write(`package: ${m}\n`);
const size = (file) => `${(fs.statSync(file).size / 1024 / 1024).toFixed(1)} MiB`;
const run = (cmd, args, opts = {}) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...opts });

function needBuild() {
  for (const f of ['src/main.js', 'src/cli.bundle.js', 'src/cli.bundle.cache', 'pause/pause', 'port-relay/port-relay']) {
    if (!fs.existsSync(path.join(dist, f))) throw new Error(`dist/${f} is missing: run npm run build first`);
  }
}

/** The single executable, dist/package/cri-docker-shim. */
async function singleExecutable() {
  needBuild();
  // The project's Node, which made the code cache (scripts/bundle.mjs), so V8 takes the cache.
  const node = projectNode();
  if (!fs.readFileSync(node).includes(`${SEA_FUSE}:0`)) throw new Error(`${node} has no single-executable fuse`);
  const { SEA_ASSETS, BUNDLE_FILE, CODE_CACHE_FILE } = require(path.join(dist, 'src/util/single-executable.js'));
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(work, { recursive: true });
  // The main script may require Node's own modules only: main.js with its imports inlined. Its
  // fallback to tsc's cli.js (no bundle) never runs here, so it stays out.
  const main = path.join(work, 'sea-main.js');
  await build({
    entryPoints: [path.join(dist, 'src/main.js')],
    outfile: main,
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'cjs',
    logLevel: 'warning',
    plugins: [{ name: 'no-cli', setup: (b) => b.onResolve({ filter: /^\.\/cli$/ }, () => ({ path: './cli', external: true })) }],
  });
  // A shebang is no JavaScript inside the wrapper Node runs the main script in.
  fs.writeFileSync(main, fs.readFileSync(main, 'utf8').replace(/^#!.*/, ''));
  const blob = path.join(work, 'sea.blob');
  const config = {
    main,
    output: blob,
    disableExperimentalSEAWarning: true,
    assets: {
      [SEA_ASSETS.bundle]: path.join(dist, 'src', BUNDLE_FILE),
      [SEA_ASSETS.codeCache]: path.join(dist, 'src', CODE_CACHE_FILE),
      [SEA_ASSETS.pause]: path.join(dist, 'pause/pause'),
      [SEA_ASSETS.portRelay]: path.join(dist, 'port-relay/port-relay'),
    },
  };
  const configFile = path.join(work, 'sea-config.json');
  fs.writeFileSync(configFile, JSON.stringify(config, null, 2));
  run(node, ['--experimental-sea-config', configFile]);
  const exe = path.join(out, NAME);
  const unstripped = path.join(work, 'node');
  fs.copyFileSync(node, unstripped);
  // Node's symbols and debug information are most of its size and nothing the shim uses
  // (dynamic symbols, which addons would link against, stay).
  run('strip', ['--strip-debug', '--strip-unneeded', '-o', exe, unstripped]);
  fs.chmodSync(exe, 0o755);
  const { inject } = require('postject');
  // postject's ELF reader (LIEF) warns about each of node's many notes sections on console.warn;
  // those lines are kept for a failure only.
  const warnings = [];
  const warn = console.warn;
  console.warn = (...line) => warnings.push(line.join(' '));
  try {
    await inject(exe, 'NODE_SEA_BLOB', fs.readFileSync(blob), { sentinelFuse: SEA_FUSE });
  } catch (err) {
    throw new Error(`postject: ${err.message}\n${warnings.join('\n')}`);
  } finally {
    console.warn = warn;
  }
  const version = run(exe, ['--version']).trim();
  say(`${exe} (${size(exe)}): ${version}`);
  return exe;
}

/** The shared libraries the executable links, as Depends (dpkg-shlibdeps wants a debian/ tree). */
function sharedLibraryDepends(exe) {
  const dir = path.join(work, 'shlibdeps');
  fs.mkdirSync(path.join(dir, 'debian'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'debian/control'), `Source: ${NAME}\n\nPackage: ${NAME}\nArchitecture: any\n`);
  const line = run('dpkg-shlibdeps', ['-O', exe], { cwd: dir }).trim();
  return line.replace(/^shlibs:Depends=/, '');
}

function debianVersion() {
  return JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).version;
}

/** Copies `from` to `to` in the package tree with `mode`, making its folders. */
function place(tree, to, from, mode = 0o644) {
  const target = path.join(tree, to);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  if (Buffer.isBuffer(from) || typeof from !== 'string' || !fs.existsSync(from)) fs.writeFileSync(target, from);
  else fs.copyFileSync(from, target);
  fs.chmodSync(target, mode);
}

/** The Debian package, dist/package/cri-docker-shim_<version>_<arch>.deb. */
async function debianPackage(compression) {
  const exe = await singleExecutable();
  const pkg = path.join(root, 'packaging/deb');
  const systemd = path.join(root, 'packaging/systemd');
  const version = debianVersion();
  const arch = run('dpkg', ['--print-architecture']).trim();
  const tree = path.join(work, 'deb');
  fs.rmSync(tree, { recursive: true, force: true });
  const doc = `usr/share/doc/${NAME}`;
  place(tree, `usr/bin/${NAME}`, exe, 0o755);
  for (const unit of [`${NAME}.service`, `${NAME}.socket`]) place(tree, `usr/lib/systemd/system/${unit}`, path.join(systemd, unit));
  place(tree, `etc/${NAME}/config.yaml`, path.join(systemd, 'config.yaml'));
  // An example, not active: the socket at cri-dockerd's path, for a node that used cri-dockerd.
  place(tree, `${doc}/examples/cri-dockerd-socket.conf`, path.join(systemd, 'cri-dockerd-socket.conf'));
  place(tree, `${doc}/README.md`, path.join(root, 'README.md'));
  place(tree, `${doc}/systemd.md`, path.join(root, 'docs/systemd.md'));
  place(tree, `${doc}/copyright`, path.join(pkg, 'copyright'));
  place(tree, `usr/share/lintian/overrides/${NAME}`, path.join(pkg, 'lintian-overrides'));
  // Debian wants a changelog; a native package's is changelog.gz.
  const date = run('date', ['-R', '-u', '-d', `@${Math.floor(fs.statSync(exe).mtimeMs / 1000)}`]).trim();
  const template = fs.readFileSync(path.join(pkg, 'control'), 'utf8');
  const maintainer = /^Maintainer: (.+)$/m.exec(template)[1];
  const changelog = `${NAME} (${version}) unstable; urgency=medium\n\n  * Release ${version}.\n\n -- ${maintainer}  ${date}\n`;
  place(tree, `${doc}/changelog.gz`, gzipSync(changelog, { level: 9 }));

  const control = path.join(tree, 'DEBIAN');
  fs.mkdirSync(control);
  const installedKiB = Number(run('du', ['-sk', '--exclude=DEBIAN', tree]).split('\t')[0]);
  const fields = { VERSION: version, ARCH: arch, INSTALLED_SIZE: String(installedKiB), SHLIBS: sharedLibraryDepends(exe) };
  place(tree, 'DEBIAN/control', template.replace(/@(\w+)@/g, (m, key) => fields[key] ?? m));
  place(tree, 'DEBIAN/conffiles', `/etc/${NAME}/config.yaml\n`);
  for (const script of ['postinst', 'prerm', 'postrm']) place(tree, `DEBIAN/${script}`, path.join(pkg, script), 0o755);
  const files = run('find', ['.', '-type', 'f', '!', '-path', './DEBIAN/*'], { cwd: tree }).split('\n').filter(Boolean).map((f) => f.slice(2)).sort();
  place(tree, 'DEBIAN/md5sums', files.length ? run('md5sum', files, { cwd: tree }) : '');

  const deb = path.join(out, `${NAME}_${version}_${arch}.deb`);
  // Owned by root in the package whoever builds it.
  run('dpkg-deb', ['--root-owner-group', `-Z${compression}`, '--build', tree, deb]);
  say(`${deb} (${size(deb)})`);
  return deb;
}

function image() {
  execFileSync(path.join(root, 'scripts/build-image.sh'), [], { stdio: 'inherit', cwd: root });
}

const compression = option('deb-compression') ?? 'xz';
const targets = args.filter((a) => !/^--(deb-compression|out)=/.test(a));
const unknown = targets.filter((t) => !['sea', 'deb', 'image'].includes(t));
if (unknown.length > 0 || !['xz', 'gzip', 'none'].includes(compression)) {
  process.stderr.write(`package: usage: package.mjs [sea|deb|image ...] [--deb-compression=xz|gzip|none] [--out=DIR]\n`);
  process.exit(2);
}
const want = (t) => targets.length === 0 || targets.includes(t);
try {
  fs.mkdirSync(out, { recursive: true });
  if (want('deb')) await debianPackage(compression);
  else if (want('sea')) await singleExecutable();
  if (want('image')) image();
} catch (err) {
  process.stderr.write(`package: ${err.stderr?.toString().trim() || err.message}\n`);
  process.exitCode = 1;
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
