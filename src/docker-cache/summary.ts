// The list entry (GET /containers/json) Docker would give for a container, built from its
// inspect document, so the cache can answer list queries without asking Docker. Pure: the
// caller supplies the clock and what the container's image reference resolves to today.
import type { ContainerInspect, ContainerSummary } from '../docker/types';

/** Docker's zero time, which inspect reports for "never". */
function isZeroTime(rfc3339: string | undefined): boolean {
  return !rfc3339 || rfc3339.startsWith('0001-01-01');
}

/** Docker's rounded, human duration ("Less than a second", "3 minutes", "About an hour", ...). */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < 1) return 'Less than a second';
  if (seconds === 1) return '1 second';
  if (seconds < 60) return `${seconds} seconds`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes === 1) return 'About a minute';
  if (minutes < 60) return `${minutes} minutes`;
  const hours = Math.trunc(ms / 3_600_000 + 0.5);
  if (hours === 1) return 'About an hour';
  if (hours < 48) return `${hours} hours`;
  if (hours < 24 * 7 * 2) return `${Math.trunc(hours / 24)} days`;
  if (hours < 24 * 30 * 2) return `${Math.trunc(hours / 24 / 7)} weeks`;
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24 / 30)} months`;
  return `${Math.trunc(ms / 3_600_000 / 24 / 365)} years`;
}

function since(rfc3339: string, nowMs: number): string {
  return humanDuration(Math.max(0, nowMs - Date.parse(rfc3339)));
}

/** The list's "Status" text ("Up 5 minutes", "Exited (0) 3 seconds ago", "Created", ...). */
export function statusText(state: ContainerInspect['State'], nowMs: number): string {
  if (state.Running) {
    if (state.Paused) return `Up ${since(state.StartedAt, nowMs)} (Paused)`;
    if (state.Restarting) return `Restarting (${state.ExitCode}) ${since(state.FinishedAt, nowMs)} ago`;
    const health = state.Health?.Status;
    if (health) return `Up ${since(state.StartedAt, nowMs)} (${health === 'starting' ? 'health: starting' : health})`;
    return `Up ${since(state.StartedAt, nowMs)}`;
  }
  if (state.Status === 'removing') return 'Removal In Progress';
  if (state.Dead) return 'Dead';
  if (isZeroTime(state.StartedAt)) return 'Created';
  if (isZeroTime(state.FinishedAt)) return '';
  return `Exited (${state.ExitCode}) ${since(state.FinishedAt, nowMs)} ago`;
}

/** The list's "Command": the path, then the arguments, those with a space single-quoted. */
export function commandText(path: string, args: readonly string[] | null | undefined): string {
  if (!args || args.length === 0) return path;
  return `${path} ${args.map((a) => (a.includes(' ') ? `'${a}'` : a)).join(' ')}`;
}

/** The list's "Ports": one entry per host binding, or one without a host side for a bare exposed port. */
export function portsOf(ports: ContainerInspect['NetworkSettings']['Ports'] | null | undefined): ContainerSummary['Ports'] {
  const out: ContainerSummary['Ports'] = [];
  for (const [key, bindings] of Object.entries(ports ?? {})) {
    const [port, proto = 'tcp'] = key.split('/');
    const privatePort = Number(port);
    if (!bindings || bindings.length === 0) {
      // Docker leaves IP and PublicPort out here; the typed shape wants them, so they are absent at run time.
      out.push({ PrivatePort: privatePort, Type: proto } as ContainerSummary['Ports'][number]);
      continue;
    }
    for (const b of bindings) out.push({ IP: b.HostIp, PrivatePort: privatePort, PublicPort: Number(b.HostPort), Type: proto });
  }
  return out;
}

function copyNetworks(networks: ContainerInspect['NetworkSettings']['Networks'] | null | undefined): ContainerSummary['NetworkSettings']['Networks'] {
  const out: ContainerSummary['NetworkSettings']['Networks'] = {};
  for (const [name, n] of Object.entries(networks ?? {})) out[name] = { ...n };
  return out;
}

/**
 * The list entry for `c`. `image` is what Docker shows as Image: the reference the container
 * was created from while that reference still names the container's image, else the image ID.
 */
export function summaryFromInspect(c: ContainerInspect, image: string, nowMs: number): ContainerSummary {
  return {
    Id: c.Id,
    Names: c.Name ? [c.Name.startsWith('/') ? c.Name : `/${c.Name}`] : [],
    Image: image,
    ImageID: c.Image,
    Command: commandText(c.Path, c.Args),
    Created: Math.floor(Date.parse(c.Created) / 1000),
    Ports: portsOf(c.NetworkSettings?.Ports),
    Labels: { ...(c.Config.Labels ?? {}) },
    State: c.State.Status,
    Status: statusText(c.State, nowMs),
    HostConfig: { NetworkMode: c.HostConfig.NetworkMode ?? '' },
    NetworkSettings: { Networks: copyNetworks(c.NetworkSettings?.Networks) },
    Mounts: (c.Mounts ?? []).map((m) => ({ ...m })),
  };
}

/**
 * Whether Docker's list entry `listed` shows the container as the document `held` describes it:
 * the same name, state and status text (which carries the start or exit time, the exit code and
 * the health), so no start, stop, exit or rename came between. Only a head start for a saved
 * document (container-snapshot.ts): what a list cannot show (a resource update) waits for the
 * inspect that confirms it. A status text at a rounding boundary may differ: one more inspect.
 */
export function listedAsHeld(held: ContainerInspect, listed: ContainerSummary, nowMs: number): boolean {
  const name = held.Name.startsWith('/') ? held.Name : `/${held.Name}`;
  return listed.Id === held.Id && (listed.Names ?? []).includes(name) && listed.State === held.State.Status && listed.Status === statusText(held.State, nowMs);
}
