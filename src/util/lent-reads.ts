// Reads lent: a connection read into a few buffers of our own, reused, instead of a fresh one a
// read. Node allocates a new 64 KiB ArrayBuffer for every read of a socket it reads itself; on a
// stream of bytes those allocations cost the shim a third of its CPU in garbage collection (its
// external memory starts a mark-compact every few tens of MiB). Each read is a view of one of the
// buffers, lent to its reader until it gives it back; given back as reusable, it is read into
// again. A reader that cannot tell when its views are no longer referenced gives its read back as
// not reusable, and the pool allocates another.
//
// Used by Docker's hijacked connections (../docker/hijack.ts), which we dial ourselves, and by
// the streaming clients' SPDY connections (../streaming/spdy/session.ts), which the HTTP server
// accepted: net.Server gives its sockets no `onread`, so such a socket's handle is taken over by
// a socket that reads into our buffers (readInto).
import * as net from 'node:net';

/** The bytes of one read (and of each reused buffer). */
export const READ_BUFFER_BYTES = 64 * 1024;

/** `reusable`: the read's buffer may be read into again (nothing references it any more). */
export type GiveBack = (reusable: boolean) => void;

/** A reader of lent reads: `giveBack(reusable)` once `data` is no longer referenced anywhere. */
export type LentReader = (data: Buffer, giveBack: GiveBack) => void;

/** The buffers of one connection's reads: handed to the socket, lent to the reader, given back. */
export class ReadLender {
  private readonly free: Buffer[] = [];
  private lent = 0;

  constructor(
    /** Reads lent at once past which the connection should not be read. */
    private readonly maxLent: number,
    /** A read came back (the connection may be read again). */
    private readonly onBack: () => void = () => undefined,
  ) {}

  /** The buffer the next read goes into (net's onread.buffer). */
  readonly nextBuffer = (): Buffer => this.free.pop() ?? Buffer.allocUnsafeSlow(READ_BUFFER_BYTES);

  /** Whether all the reads it may lend are out: the connection waits. */
  get exhausted(): boolean {
    return this.lent >= this.maxLent;
  }

  /** A read landed in `buffer`: lent until the answer is called (once; later calls do nothing). */
  lend(buffer: Buffer): GiveBack {
    this.lent++;
    let given = false;
    return (reusable) => {
      if (given) return;
      given = true;
      this.lent--;
      this.keep(reusable ? buffer : undefined);
      this.onBack();
    };
  }

  /** A buffer free to be read into again (a read's buffer of our size), kept up to the bound. */
  keep(buffer: Buffer | undefined): void {
    if (buffer?.length === READ_BUFFER_BYTES && this.free.length < this.maxLent) this.free.push(buffer);
  }
}

/**
 * A connection net.Server accepted, taken over by a socket that reads it into reused buffers:
 * each read is lent to the reader (`read`). Reads are taken at once; the reader pauses the socket
 * (`exhausted` says when it should).
 */
export class LentReadConnection {
  readonly socket: net.Socket;
  private readonly lender: ReadLender;
  /** Until a reader comes, reads are dropped (a refused upgrade's client may still send). */
  private reader: LentReader = (_data, giveBack) => giveBack(true);
  private onBack: () => void = () => undefined;

  private constructor(handle: NonNullable<net.SocketConstructorOpts['handle']>, allowHalfOpen: boolean, maxLent: number) {
    this.lender = new ReadLender(maxLent, () => this.onBack());
    this.socket = new net.Socket({
      handle,
      allowHalfOpen,
      onread: {
        buffer: this.lender.nextBuffer,
        callback: (n, buffer) => {
          this.reader((buffer as Buffer).subarray(0, n), this.lender.lend(buffer as Buffer));
          return true;
        },
      },
    });
  }

  /**
   * The connection `accepted` holds, read into at most `maxLent` buffers lent at once; undefined
   * when it cannot be taken over (then use `accepted` as it is). After a take-over `accepted`
   * holds no connection: listeners go on `socket`. Take it over in the turn that accepted it (the
   * HTTP upgrade's), before anything else reads it; the bytes read with the upgrade stay the
   * caller's.
   */
  static take(accepted: net.Socket, maxLent: number): LentReadConnection | undefined {
    // The handle is Node's own, not in its API: net.Socket takes one as `handle` (its own
    // constructor's way), and then reads it into `onread`'s buffers. net.Server has no way to give
    // its sockets `onread`. lent-reads.test.ts holds the pinned Node to this.
    const holder = accepted as unknown as { _handle: net.SocketConstructorOpts['handle'] | null };
    const handle = holder._handle;
    if (!handle || accepted.destroyed || accepted.readableLength > 0 || accepted.writableLength > 0) return undefined;
    holder._handle = null;
    const taken = new LentReadConnection(handle, accepted.allowHalfOpen, maxLent);
    // Closed with no handle, it closes nothing: its server stops counting it (so that the server
    // can close), and 'close' listeners on it run now.
    accepted.destroy();
    return taken;
  }

  /** From now on every read goes to `reader`, lent; `onBack` whenever one comes back. */
  read(reader: LentReader, onBack: () => void): void {
    this.reader = reader;
    this.onBack = onBack;
  }

  /** All the reads it may lend are out: the reader should pause the socket until one comes back. */
  get exhausted(): boolean {
    return this.lender.exhausted;
  }
}
