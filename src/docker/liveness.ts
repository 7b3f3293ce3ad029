// Is Docker answering? Status asks this every few seconds and must answer within a second
// even when Docker hangs (a stopped or wedged daemon accepts connections and answers nothing):
// kubelet's own call would time out, and a hung Status is worse than a "not ready". So one
// ping at a time goes to Docker, and Status waits for it only ANSWER_WITHIN_MS; past that it
// answers from the last ping that came back. Docker counts as not ready once it has not
// answered for NOT_READY_AFTER_MS (a daemon busy for a moment is not down), or at once when a
// ping fails outright (no daemon on the socket). Ready again with the first ping that answers.
import { errorMessage } from '../errors';
import type { DockerClient } from './client';

const ANSWER_WITHIN_MS = 800;
const NOT_READY_AFTER_MS = 5_000;

type Liveness = { ready: true } | { ready: false; message: string };

export class DockerLiveness {
  private inFlight: Promise<void> | undefined;
  private inFlightSinceMs = 0;
  private lastFailure: string | undefined;

  constructor(
    private readonly docker: Pick<DockerClient, 'ping'>,
    private readonly now: () => number = Date.now,
    private readonly answerWithinMs = ANSWER_WITHIN_MS,
    private readonly notReadyAfterMs = NOT_READY_AFTER_MS,
  ) {}

  /** Docker's state as of now, in at most answerWithinMs (or until `signal` gives up). */
  async check(signal?: AbortSignal): Promise<Liveness> {
    if (!this.inFlight) {
      this.inFlightSinceMs = this.now();
      this.inFlight = this.ping();
    }
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.answerWithinMs);
      signal?.addEventListener('abort', () => resolve(), { once: true });
    });
    await Promise.race([this.inFlight, waited]);
    clearTimeout(timer);
    return this.state();
  }

  private state(): Liveness {
    if (this.lastFailure !== undefined) return { ready: false, message: `docker: ${this.lastFailure}` };
    // A ping under way for this long: Docker takes no calls (the last answer stands until then).
    const silentMs = this.inFlight ? this.now() - this.inFlightSinceMs : 0;
    if (silentMs >= this.notReadyAfterMs) return { ready: false, message: `docker: no answer for ${Math.round(silentMs / 1000)} s` };
    return { ready: true };
  }

  private async ping(): Promise<void> {
    try {
      await this.docker.ping();
      this.lastFailure = undefined;
    } catch (err) {
      this.lastFailure = errorMessage(err);
    } finally {
      this.inFlight = undefined;
    }
  }
}
