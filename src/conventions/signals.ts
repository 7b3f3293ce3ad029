// CRI's Signal enum names as the signal names Docker takes ("SIGRTMIN+3", "SIGRTMAX-2").
import type { Signal__Output } from '../cri/types';
import { Signal } from '../generated/runtime/v1/Signal';

const KNOWN: ReadonlySet<string> = new Set(Object.values(Signal));

export function dockerStopSignal(signal: Signal__Output | undefined): string | undefined {
  if (!signal || signal === 'RUNTIME_DEFAULT') return undefined;
  const plus = /^SIGRTMINPLUS(\d+)$/.exec(signal);
  if (plus) return `SIGRTMIN+${plus[1]}`;
  const minus = /^SIGRTMAXMINUS(\d+)$/.exec(signal);
  if (minus) return `SIGRTMAX-${minus[1]}`;
  return signal;
}

/** Docker's stop signal back as CRI's enum; anything unrecognised is RUNTIME_DEFAULT. */
export function criSignal(dockerSignal: string | undefined): Signal__Output {
  if (!dockerSignal) return 'RUNTIME_DEFAULT';
  const upper = dockerSignal.toUpperCase();
  const named = upper.startsWith('SIG') ? upper : `SIG${upper}`;
  const enumName = named.replace(/^SIGRTMIN\+(\d+)$/, 'SIGRTMINPLUS$1').replace(/^SIGRTMAX-(\d+)$/, 'SIGRTMAXMINUS$1');
  return KNOWN.has(enumName) ? (enumName as Signal__Output) : 'RUNTIME_DEFAULT';
}
