// The host as CreateContainer's translation sees it: seccomp profile files and symlinked
// mount sources.
import * as fs from 'node:fs';
import { nodeHostFiles } from './security-options';
import type { HostView } from './container-create-spec';

export const nodeHostView: HostView = {
  ...nodeHostFiles,
  resolvePath(p) {
    try {
      return fs.realpathSync(p);
    } catch {
      // Docker creates a missing bind source as a directory, as kubelet expects.
      return p;
    }
  },
};
