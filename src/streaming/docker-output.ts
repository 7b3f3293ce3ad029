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
import { Writable } from 'node:stream';
import { FrameSplitter, type FramePieceListener } from '../docker/stream-frames';
import { whenRoomIn } from '../util/stream-room';

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
    done?.();
  }
}
