// systemd socket activation: systemd (or systemd-socket-activate) opens the listening socket,
// starts us with it as fd 3 onwards, and says so in LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES.
// The socket outlives the shim, so kubelet's calls queue there across a restart.

/** The first descriptor systemd passes (SD_LISTEN_FDS_START). */
const FIRST_PASSED_FD = 3;

class SocketActivationError extends Error {}

interface ActivationEnv {
  LISTEN_PID?: string;
  LISTEN_FDS?: string;
  LISTEN_FDNAMES?: string;
}

/**
 * The descriptor to serve on: the one named `name`, or without a name the only one passed (the
 * first, when there are several). Throws when the environment does not hand us a socket.
 */
export function activatedSocketFd(env: ActivationEnv, pid: number, name: string | undefined): number {
  if (env.LISTEN_PID === undefined || env.LISTEN_FDS === undefined) {
    throw new SocketActivationError('fd:// needs a socket from systemd, but LISTEN_PID/LISTEN_FDS are not set (start it from a .socket unit or systemd-socket-activate)');
  }
  if (env.LISTEN_PID !== String(pid)) {
    throw new SocketActivationError(`fd://: the sockets systemd passed are for process ${env.LISTEN_PID.slice(0, 16)}, not this one (${pid})`);
  }
  const count = /^\d{1,4}$/.test(env.LISTEN_FDS) ? Number(env.LISTEN_FDS) : 0;
  if (count === 0) throw new SocketActivationError('fd://: systemd passed no socket (LISTEN_FDS is 0 or not a number)');
  if (name === undefined) return FIRST_PASSED_FD;
  const names = (env.LISTEN_FDNAMES ?? '').split(':');
  const index = names.indexOf(name);
  if (index < 0 || index >= count) {
    throw new SocketActivationError(`fd://${name}: no passed socket has that name (names: ${names.filter((n) => n !== '').join(', ') || 'none'})`);
  }
  return FIRST_PASSED_FD + index;
}

/** Keeps child processes (CNI and credential plugins) from believing the sockets are theirs. */
export function forgetActivationEnv(env: NodeJS.ProcessEnv): void {
  delete env.LISTEN_PID;
  delete env.LISTEN_FDS;
  delete env.LISTEN_FDNAMES;
}
