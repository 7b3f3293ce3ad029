// Opening a container's CRI log file the way containerd's CRI plugin does, so kubelet and log
// readers find the same thing on disk: the file is created (empty) before the container
// starts and again on each reopen, its directory is made if kubelet has not made it yet
// (0755), the file is 0640, writes always append, and a symlink at the path is refused (the
// shim runs as root and must not be steered into writing some other file).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FailedPreconditionError, PermissionDeniedError, ResourceExhaustedError, type ShimError } from '../errors';

const LOG_DIR_MODE = 0o755;
const LOG_FILE_MODE = 0o640;

const OPEN_FLAGS = fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW;

/** Opens (creating if needed) the CRI log file at `logPath` for appending. */
export async function openContainerLog(logPath: string): Promise<fs.promises.FileHandle> {
  try {
    await fs.promises.mkdir(path.dirname(logPath), { recursive: true, mode: LOG_DIR_MODE });
    return await fs.promises.open(logPath, OPEN_FLAGS, LOG_FILE_MODE);
  } catch (err) {
    throw logFileError(logPath, err);
  }
}

/**
 * Opens the CRI log file a previous run wrote, to read its tail and cut off a torn last line:
 * never through a symlink (one put at the path between runs would have root truncate another
 * file), and only a regular file. Undefined for anything else, or no file.
 */
export async function openWrittenContainerLog(logPath: string): Promise<fs.promises.FileHandle | undefined> {
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(logPath, fs.constants.O_RDWR | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  if ((await handle.stat()).isFile()) return handle;
  await handle.close();
  return undefined;
}

/** The typed error for a log file that cannot be opened: the host's state forbids it. */
export function logFileError(logPath: string, err: unknown): ShimError {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const reason = code === 'ELOOP' ? 'it is a symbolic link' : err instanceof Error ? err.message : String(err);
  const message = `cannot open the container log ${logPath}: ${reason}`;
  switch (code) {
    case 'EACCES':
    case 'EPERM':
      return new PermissionDeniedError(message, { cause: err });
    case 'ENOSPC':
    case 'EDQUOT':
      return new ResourceExhaustedError(message, { cause: err });
    default:
      return new FailedPreconditionError(message, { cause: err });
  }
}
