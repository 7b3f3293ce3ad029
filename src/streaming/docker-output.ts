// Docker's output of an exec or attach, written to the client's stdout and stderr with
// backpressure: each piece is written only once the channel it goes to took the one before, and
// this Writable completes a chunk only then, so a pipe from Docker's connection stops reading
// (and the command blocks on its output) while the client does not read. docker-modem's
// demuxStream writes whatever arrives and ignores write()'s answer: a client that stopped
// reading `cat /dev/zero` grew the shim without bound.
//
// Without a TTY the stream is multiplexed (../docker/stream-frames.ts splits it, a payload
// passed on as it arrives); with a TTY (`raw`) everything goes to stdout.
//
// Output for a channel the client reset (SPDY RST_STREAM) while keeping the session is dropped
// up to MAX_DROPPED_BYTES, so that a command with little left to say still ends and its exit
// code is reported; past it the piece waits for good, so Docker's connection is no longer read and
// the command blocks on its output, as for a client that stops reading. Dropping all of it read
// `cat /dev/zero` at full speed to throw it away. Closing Docker's connection would not stop the
// command either: Docker then drains a detached exec's output itself, at full speed.
// (containerd's CRI closes the command's pipe on a failed write, so the command meets EPIPE;
// Docker gives no such handle.)
//
// Docker's connection from ../docker/hijack.ts lends its reads (readFrom): a read's buffer is
// given back for reuse once its pieces are on their way to the kernel (each channel it went to
// says so, SentBarrier), and not reusable when a channel still holds them.
import { type Readable, Writable } from 'node:stream';
import { HijackedConnection } from '../docker/hijack';
import { FrameSplitter, type FramePieceListener } from '../docker/stream-frames';
import { whenRoomIn } from '../util/stream-room';

/**
 * A channel that can tell when what was written to it has left the process: `then(true)` once
 * the kernel has taken every byte written so far, `then(false)` when it cannot say (it holds
 * some, waiting for window or room).
 */
export interface SentBarrier {
  afterSent(then: (sent: boolean) => void): void;
}

function barrierOf(target: Writable): SentBarrier | undefined {
  const candidate = target as Writable & Partial<SentBarrier>;
  return typeof candidate.afterSent === 'function' ? (candidate as Writable & SentBarrier) : undefined;
}

type GiveBack = (reusable: boolean) => void;

/** Output dropped for channels the client reset, all of them together, before Docker's connection is left unread. */
export const MAX_DROPPED_BYTES = 1024 * 1024;

export class DockerOutput extends Writable {
  private readonly frames: FrameSplitter;
  private droppable = MAX_DROPPED_BYTES;
  /** The chunk under way waits for room in a channel: `done` once it has room. */
  private blocked = false;
  /** Output past the drop bound: nothing completes any more. */
  private stuck = false;
  /** Pieces of the chunk under way behind the blocked one, in order (rarely any). */
  private readonly waiting: Array<[Writable, Buffer]> = [];
  private done: (() => void) | undefined;
  // Made once, not a closure a chunk or a piece.
  private readonly onPiece: FramePieceListener = (stream, data) => this.put(stream === 'stderr' ? this.stderr : this.stdout, data);
  private readonly onRoom = (): void => this.resume();
  /** Lent reads written and not completed, in order (readFrom): each given back on completion. */
  private readonly lent: GiveBack[] = [];
  /** Which channels took pieces of the chunk under way. */
  private wroteOut = false;
  private wroteErr = false;
  private readonly onLent = (data: Buffer, giveBack: GiveBack): void => {
    this.lent.push(giveBack);
    this.write(data);
  };

  constructor(
    private readonly stdout: Writable,
    private readonly stderr: Writable,
    raw: boolean,
  ) {
    // Two of Docker's reads (64 KiB each) may wait here, so that its connection is not paused
    // and resumed for every chunk.
    super({ highWaterMark: 128 * 1024 });
    this.frames = new FrameSplitter(raw);
  }

  /**
   * Copies `connection`'s output to the channels until it ends: its reads lent when it is Docker's
   * hijacked connection, else piped.
   */
  readFrom(connection: Readable): void {
    if (!(connection instanceof HijackedConnection)) {
      connection.pipe(this);
      return;
    }
    connection.once('end', () => this.end());
    connection.lendReads(this.onLent);
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    this.done = done;
    this.frames.push(chunk, this.onPiece);
    this.completeIfWritten();
  }

  /**
   * Writes a piece once its channel has room, after those before it. A piece for a channel we
   * ended is dropped, one for a channel destroyed (reset) too while the bound allows.
   */
  private put(target: Writable, data: Buffer): void {
    if (this.stuck) return;
    if (target === this.stdout) this.wroteOut = true;
    else this.wroteErr = true;
    if (this.blocked) {
      this.waiting.push([target, data]);
      return;
    }
    if (target.destroyed) {
      if (data.length > this.droppable) {
        this.stuck = true;
        this.waiting.length = 0;
        return;
      }
      this.droppable -= data.length;
      return;
    }
    if (target.writableEnded) return;
    if (!target.write(data)) {
      this.blocked = true;
      whenRoomIn(target, this.onRoom);
    }
  }

  /** The channel that was full has room: the pieces behind it go on. */
  private resume(): void {
    this.blocked = false;
    while (this.waiting.length > 0 && !this.blocked && !this.stuck) {
      const [target, data] = this.waiting.shift()!;
      this.put(target, data);
    }
    this.completeIfWritten();
  }

  private completeIfWritten(): void {
    if (this.blocked || this.stuck || this.waiting.length > 0) return;
    const done = this.done;
    this.done = undefined;
    if (done) this.giveBack();
    done?.();
  }

  /** The chunk just completed: a lent read goes back, reusable once every channel it went to has sent it. */
  private giveBack(): void {
    const giveBack = this.lent.shift();
    const targets = [this.wroteOut ? this.stdout : undefined, this.wroteErr ? this.stderr : undefined];
    this.wroteOut = this.wroteErr = false;
    if (!giveBack) return;
    let waiting = 1;
    let reusable = true;
    const settle = (sent: boolean): void => {
      reusable &&= sent;
      if (--waiting === 0) giveBack(reusable);
    };
    for (const target of targets) {
      if (!target) continue;
      const barrier = barrierOf(target);
      // (A channel reset or ended since may have left pieces in its connection's queue.)
      if (!barrier || target.destroyed || target.writableEnded) {
        reusable = false;
        continue;
      }
      waiting++;
      barrier.afterSent(settle);
    }
    settle(true);
  }
}
