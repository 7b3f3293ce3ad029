// The host as CreateContainer's translation sees it: seccomp profile files and symlinked
// mount sources.
import * as fs from 'node:fs';
import type { HostView } from './create-spec';

/** Seccomp profiles are small JSON documents; anything bigger is not one. */
const MAX_PROFILE_BYTES = 1024 * 1024;

export const nodeHostView: HostView = {
  readText(p) {
    const { size } = fs.statSync(p);
    if (size > MAX_PROFILE_BYTES) throw Object.assign(new Error('too large'), { code: 'EFBIG' });
    return fs.readFileSync(p, 'utf8');
  },
  resolvePath(p) {
    try {
      return fs.realpathSync(p);
    } catch {
      // Docker creates a missing bind source as a directory, as kubelet expects.
      return p;
    }
  },
};
