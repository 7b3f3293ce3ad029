// Temporary files for tests, named so a leftover shows which suite made it. Kept apart from
// ./shim so unit tests can use it without loading the Docker helpers.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `cds-${prefix}-`));
}
