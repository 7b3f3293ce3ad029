// The project's Node: package.json pins one exact version as node-linux-<cpu>, an optional
// dependency per CPU, so that `npm ci` brings from the lock file the one for this machine and
// skips the others. Its binary is named by path, not found as node_modules/.bin/node: npm 9
// (Debian's) deletes that link when it skips the other CPU's package, which claims the same
// name (npm/cli#4362). The code cache (bundle.mjs), the single executable (package.mjs) and the
// tests (test/run.mjs) are made and run on it; a system Node only runs npm and these scripts.
//   projectNode()                     the binary's path, checked against the pin
//   node scripts/project-node.mjs FILE [ARG...]
//                                     runs FILE on it, its folder first on PATH (so that
//                                     main.js's shebang finds it too); exits as FILE did
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export function projectNode() {
  const name = `node-linux-${process.arch}`;
  const pinned = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).optionalDependencies?.[name];
  if (!pinned) throw new Error(`package.json pins no Node for this CPU (${name} in optionalDependencies)`);
  const dir = path.join(root, 'node_modules', name);
  let installed;
  try {
    installed = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
  } catch {
    // npm ci leaves out an optional dependency it could not fetch, saying so only at --loglevel=verbose.
    throw new Error(`the project's Node ${pinned} (node_modules/${name}) is missing: run npm ci (again)`);
  }
  if (installed !== pinned) throw new Error(`node_modules/${name} is ${installed}, package.json pins ${pinned}: run npm ci`);
  return path.join(dir, 'bin', 'node');
}

/** The environment for a child on the project's Node: its folder first on PATH. */
export function projectNodeEnv(env = process.env) {
  return { ...env, PATH: [path.dirname(projectNode()), env.PATH ?? ''].join(path.delimiter) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const res = spawnSync(projectNode(), process.argv.slice(2), { stdio: 'inherit', env: projectNodeEnv() });
    if (res.error) throw res.error;
    process.exitCode = res.status ?? 1;
  } catch (err) {
    process.stderr.write(`project-node: ${err.message}\n`);
    process.exitCode = 1;
  }
}
