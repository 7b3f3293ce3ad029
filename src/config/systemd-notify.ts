// systemd's readiness protocol (sd_notify) for a unit of Type=notify, as cri-dockerd's own
// cri-docker.service is: without READY=1 systemd holds such a unit in "activating" (its
// TimeoutSec=0 never gives up), so a copied unit would never be "active". Node cannot send on a
// unix datagram socket, so systemd-notify (part of systemd, there wherever NOTIFY_SOCKET is set)
// sends it on our behalf: --pid names us as the sender, which systemd accepts from root, and
// --no-block skips its wait for systemd's acknowledgement.
import { execFile } from 'node:child_process';
import type { Logger } from '../util/logger';

interface NotifyEnv {
  NOTIFY_SOCKET?: string;
}

/** The systemd-notify arguments that say this process is ready; undefined when no one asked (no NOTIFY_SOCKET). */
export function readyArguments(env: NotifyEnv, pid: number): string[] | undefined {
  if (!env.NOTIFY_SOCKET) return undefined;
  return [`--pid=${pid}`, '--no-block', '--ready', 'STATUS=serving CRI'];
}

/** Tells systemd the shim serves, when it was started as a Type=notify unit; logs a failure, never throws. */
export function notifyReady(env: NodeJS.ProcessEnv, log: Logger): Promise<void> {
  const args = readyArguments(env, process.pid);
  if (!args) return Promise.resolve();
  // Child processes (CNI and credential plugins) must not speak for the unit.
  const socket = env.NOTIFY_SOCKET;
  delete env.NOTIFY_SOCKET;
  return new Promise((resolve) => {
    execFile('systemd-notify', args, { env: { ...env, NOTIFY_SOCKET: socket }, timeout: 5_000 }, (err) => {
      if (err) log.warn({ error: err.message }, 'systemd-notify failed: a Type=notify unit stays "activating" (use Type=exec, as the packaged unit does)');
      else log.debug('told systemd the shim is ready');
      resolve();
    });
  });
}
