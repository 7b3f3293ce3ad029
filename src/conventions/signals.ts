// CRI's Signal enum names as the signal names Docker takes ("SIGRTMIN+3", "SIGRTMAX-2"), and
// back. CRI v1.37 gave the enum's names a SIGNAL_ prefix (SIGNAL_SIGTERM; the numbers, which are
// what the wire carries, did not change): a name is read in either form, and the answers use the
// names of the proto we serve.
import type { Signal__Output } from '../cri/types';
import { Signal } from '../generated/runtime/v1/Signal';

const PREFIX = 'SIGNAL_';
const KNOWN: ReadonlySet<string> = new Set(Object.values(Signal));
const RUNTIME_DEFAULT: Signal__Output = Signal.SIGNAL_RUNTIME_DEFAULT;

/** Docker's name for a CRI stop signal ("SIGTERM" or "SIGNAL_SIGTERM"); undefined for the runtime's default. */
export function dockerStopSignal(signal: string | undefined): string | undefined {
  const name = signal?.startsWith(PREFIX) ? signal.slice(PREFIX.length) : signal;
  if (!name || name === 'RUNTIME_DEFAULT') return undefined;
  const plus = /^SIGRTMINPLUS(\d+)$/.exec(name);
  if (plus) return `SIGRTMIN+${plus[1]}`;
  const minus = /^SIGRTMAXMINUS(\d+)$/.exec(name);
  if (minus) return `SIGRTMAX-${minus[1]}`;
  return name;
}

/** Docker's stop signal back as CRI's enum; anything unrecognised is the runtime's default. */
export function criSignal(dockerSignal: string | undefined): Signal__Output {
  if (!dockerSignal) return RUNTIME_DEFAULT;
  const upper = dockerSignal.toUpperCase();
  const named = upper.startsWith('SIG') ? upper : `SIG${upper}`;
  const enumName = PREFIX + named.replace(/^SIGRTMIN\+(\d+)$/, 'SIGRTMINPLUS$1').replace(/^SIGRTMAX-(\d+)$/, 'SIGRTMAXMINUS$1');
  return KNOWN.has(enumName) ? (enumName as Signal__Output) : RUNTIME_DEFAULT;
}
