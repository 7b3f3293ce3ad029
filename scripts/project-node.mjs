// The project's Node: package.json pins one exact version as node-linux-<cpu>, an optional
// dependency per CPU, so that `npm ci` brings from the lock file the one for this machine and
// skips the others. It is node_modules/.bin/node, which npm's run-scripts (npm test, npm run
// build, ...) put first on PATH. The code cache (bundle.mjs) is only taken by the Node that made
// it, and the single executable (package.mjs) is a copy of the Node that runs the script: both
// must be this binary. A system Node only runs npm.
//   PROJECT_NODE                    node_modules/.bin/node
//   projectNodeVersion()            'v24.x.y', as pinned for this CPU
//   requireProjectNode(what)        throws unless this process runs on PROJECT_NODE
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const PROJECT_NODE = path.join(root, 'node_modules', '.bin', 'node');

export function projectNodeVersion() {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const version = pkg.optionalDependencies?.[`node-linux-${process.arch}`];
  if (!version) throw new Error(`package.json pins no Node for this CPU (node-linux-${process.arch} in optionalDependencies)`);
  return `v${version}`;
}

const realpath = (file) => {
  try {
    return fs.realpathSync(file);
  } catch {
    return undefined;
  }
};

export function requireProjectNode(what) {
  const pinned = projectNodeVersion();
  const own = realpath(PROJECT_NODE);
  const bin = path.relative(root, PROJECT_NODE);
  // npm ci leaves out an optional dependency it could not fetch, saying so only at --loglevel=verbose.
  let fix = `${bin} is missing: run npm ci (again)`;
  if (own !== undefined && own === realpath(process.execPath)) {
    if (process.version === pinned) return;
    fix = `${bin} is older than package.json: run npm ci`;
  } else if (own !== undefined) {
    fix = `run it through npm (npm run ...), which puts ${bin} first on PATH`;
  }
  throw new Error(`${what} needs the project's Node ${pinned}, not ${process.version} (${process.execPath}); ${fix}`);
}
