// Counts the calls of docker-modem's dial in this process (every DockerModem shares its
// prototype's), for tests that check which Docker requests go through the modem.
import DockerModem from 'docker-modem';

export interface ModemDials {
  /** Dials since start or the last reset. */
  readonly count: number;
  reset(): void;
  /** Puts docker-modem's own dial back. */
  stop(): void;
}

export function countModemDials(): ModemDials {
  const dial = DockerModem.prototype.dial;
  let count = 0;
  DockerModem.prototype.dial = function (this: DockerModem, ...args: Parameters<DockerModem['dial']>) {
    count++;
    return dial.apply(this, args);
  } as DockerModem['dial'];
  return {
    get count() {
      return count;
    },
    reset: () => void (count = 0),
    stop: () => void (DockerModem.prototype.dial = dial),
  };
}
