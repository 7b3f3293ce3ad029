// The server side of one SPDY/3 connection after the HTTP upgrade: the client opens streams
// (each SYN_STREAM carries headers such as streamType), we reply and hand each stream on as
// a Duplex.
//
// Flow control, both ways, against a client that may ignore it:
// - Receiving: each stream holds at most STREAM_BUFFER_BYTES its reader has not taken. Window is
//   granted back (stream and session) only as the reader takes data, so a client that counts
//   windows never sends more. Go's spdystream (kubectl, client-go) counts no windows: for it, the
//   connection is not read while any stream holds more than its bound, so TCP holds the client.
// - Sending: spdystream never grants window, so we wait for window only once the client has
//   shown it keeps windows (SETTINGS with a window size, or WINDOW_UPDATE). Either way a stream's
//   writes complete only while the socket holds less than SEND_BUFFER_BYTES unsent, so a client
//   that stops reading stops the writers (and, through pipes, the command's output).
// The connection is not read either while frames wait to be handled (a header block inflating)
// or while our own output piles up unsent (a client that pings and never reads). While it is not
// read, a PING now and then notices a client that has gone. (The holds, the probe and the pace
// of writers are ../backpressure.ts, shared with the WebSocket channels.) A stream count per
// session, a bound on control frames, a bound on streams refused (a client that keeps opening
// streams the session will not take is not one of Kubernetes') and an idle timeout complete the
// bounds.
//
// On a TCP connection of its own the session reads into a few reused buffers (lent reads,
// ../../util/lent-reads.ts): a read's data frames go on as views of it, and the buffer is read
// into again once every stream it fed has handed them on and the stream's pipe target has sent
// them to the kernel (pipedTo); a read that fed a stream with no such target is given back not
// reusable. While all the reads it may lend are out, the connection is not read.
import { EventEmitter } from 'node:events';
import { Socket } from 'node:net';
import { Duplex, type Writable } from 'node:stream';
import type { GiveBack, LentReadConnection } from '../../util/lent-reads';
import { Backpressure } from '../backpressure';
import { TurnCork } from '../batched-pipe';
import { afterSocketSent } from '../socket-sent';
import { FRAMES_PER_TURN, IdleTimer, MAX_UNSENT_BYTES, PING_REPLIES_PER_SECOND, RateBudget, STREAM_BUFFER_BYTES } from '../limits';
import {
  ControlType,
  dataFrameHead,
  DEFAULT_INITIAL_WINDOW,
  encodeControl,
  FLAG_FIN,
  FrameReader,
  goAwayPayload,
  GOAWAY_PROTOCOL_ERROR,
  HeaderCodec,
  MAX_WINDOW,
  parseSettings,
  parseSynStream,
  parseWindowUpdate,
  RST_CANCEL,
  RST_PROTOCOL_ERROR,
  RST_REFUSED_STREAM,
  rstStreamPayload,
  SETTINGS_INITIAL_WINDOW_SIZE,
  streamIdOf,
  synReplyPayload,
  windowUpdatePayload,
  type FrameEvent,
  type HeaderBlock,
} from './framing';

/** Data frames we send are cut to this size so one stream cannot hog the connection. */
const MAX_DATA_CHUNK = 32 * 1024;
/** Frames received and not handled yet (they wait only while a header block inflates). */
const MAX_QUEUED_BYTES = 256 * 1024;
/** Small data frames of one stream, one after another, are delivered together up to this many bytes. */
const MAX_GATHERED_BYTES = 1024;
/** After we said goodbye, how long the client has to close its side before the socket is destroyed. */
const CLOSE_GRACE_MS = 10_000;
/** Window is granted back in steps of at least this (half the initial window). */
const MIN_WINDOW_GRANT = DEFAULT_INITIAL_WINDOW / 2;
/**
 * The session ends (GOAWAY PROTOCOL_ERROR) once it refused this many streams the protocol does
 * not allow: a type the request does not use or already has, once nobody takes streams, an
 * invalid ID. kubectl and crictl open only the streams the request needs. A stream past the
 * bound of open streams is refused but not counted: a busy port forward (a browser's many
 * connections) is a legitimate client, and each refusal costs one bounded header block.
 */
export const MAX_REFUSED_STREAMS = 8;
/**
 * Data frames for a stream the session does not hold open (never opened, ended or reset by the
 * client, reset by us) are dropped; a session that sends more than this many of them, regained
 * at STRAY_DATA_FRAMES_PER_SECOND, ends with GOAWAY PROTOCOL_ERROR. What a client sends after we
 * reset a stream, until it reads the RST_STREAM, is a few frames (kubectl writes 32 KiB ones);
 * a flood of 1-byte frames to an unknown stream stalled every CRI call for seconds.
 */
const MAX_STRAY_DATA_FRAMES = 1024;
const STRAY_DATA_FRAMES_PER_SECOND = 64;

export interface SpdySessionOptions {
  /** Streams the client may have open at once; a SYN_STREAM past it is answered RST_STREAM REFUSED_STREAM. */
  maxStreams: number;
  /** The session closes (GOAWAY) after this long without a frame either way; 0 never. */
  idleTimeoutMs: number;
  /** While the connection is not read, a PING this often; for tests. */
  pausedProbeMs?: number;
}

interface Outgoing {
  data: Buffer;
  off: number;
  fin: boolean;
  done: (err?: Error | null) => void;
}

export class SpdyStream extends Duplex {
  /** Bytes received, and how many of them were granted back as window. */
  received = 0;
  granted = 0;
  /** How much more we may send before the client grants window (counted only if it keeps windows). */
  sendWindow: number;
  remoteEnded = false;
  localEnded = false;
  /** Reset (by either side) or torn down: nothing more goes out for it. */
  reset = false;
  outgoing: Outgoing | undefined;
  /** Where its reader writes what it takes (pipeInBatches): a lent read is given back once that has sent it. */
  pipedTo: Writable | undefined = undefined;
  /** Data received that the Readable's own buffer has not taken yet. */
  private inbox: Buffer[] = [];
  private inboxBytes = 0;
  private wantsData = false;
  private endPending = false;
  private checkScheduled = false;

  constructor(
    readonly id: number,
    readonly headers: HeaderBlock,
    private readonly session: SpdyServerSession,
    sendWindow: number,
  ) {
    super({ allowHalfOpen: true, writableHighWaterMark: MAX_DATA_CHUNK * 2 });
    this.sendWindow = sendWindow;
    // Failures show up as 'close' to whoever holds the stream; an unhandled 'error' would end the shim.
    this.on('error', () => undefined);
  }

  /** The first value of a request header (names are case-insensitive). */
  header(name: string): string | undefined {
    return this.headers[name.toLowerCase()]?.[0];
  }

  /** Bytes received that the reader has not taken. */
  get unread(): number {
    return this.inboxBytes + this.readableLength;
  }

  /** Bytes the reader has taken. */
  get taken(): number {
    return this.received - this.unread;
  }

  /** Refuses the stream (RST_STREAM REFUSED_STREAM, counted by the session) and destroys it. */
  refuse(): void {
    if (!this.reset) {
      this.reset = true;
      this.session.refuseStream(this.id, RST_REFUSED_STREAM);
    }
    this.destroy();
  }

  /** Data from the client, for the reader. */
  deliver(data: Buffer): void {
    this.received += data.length;
    if (this.wantsData && this.inbox.length === 0) this.wantsData = this.push(data);
    else {
      this.inbox.push(data);
      this.inboxBytes += data.length;
    }
  }

  /** The client's FIN: the reader gets end once it has taken everything before it. */
  remoteEnd(): void {
    this.remoteEnded = true;
    if (this.inbox.length === 0 && this.wantsData) this.push(null);
    else this.endPending = true;
  }

  override _read(): void {
    while (this.inbox.length > 0) {
      const next = this.inbox.shift()!;
      this.inboxBytes -= next.length;
      if (!this.push(next)) {
        this.wantsData = false;
        this.scheduleCheck();
        return;
      }
    }
    if (this.endPending) {
      this.endPending = false;
      this.push(null);
    }
    this.wantsData = true;
    this.scheduleCheck();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    this.session.sendData(this, chunk, false, done);
  }

  /**
   * `then(true)` once the kernel took everything written to this stream so far (a lent read of
   * Docker's may then be read into again: ../docker-output.ts); false while some waits here.
   */
  afterSent(then: (sent: boolean) => void): void {
    if (this.writableLength > 0 || this.outgoing) return then(false);
    this.session.afterSent(then);
  }

  override _final(done: (err?: Error | null) => void): void {
    this.session.sendData(this, Buffer.alloc(0), true, done);
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.inbox = [];
    this.inboxBytes = 0;
    this.session.streamDestroyed(this);
    done(err);
  }

  /**
   * _read runs before the read that called it takes its chunk: what was taken is counted once
   * the reads of this turn are done.
   */
  private scheduleCheck(): void {
    if (this.checkScheduled) return;
    this.checkScheduled = true;
    process.nextTick(() => {
      this.checkScheduled = false;
      this.session.consumed(this);
    });
  }
}

/** The connection's reads lent (a TCP connection taken over), and the bytes read with the upgrade (not lent). */
export interface SpdyLentReads {
  connection: LentReadConnection;
  head: Buffer;
}

export interface SpdyServerSession {
  on(event: 'stream', listener: (stream: SpdyStream) => void): this;
  on(event: 'close', listener: () => void): this;
}

export class SpdyServerSession extends EventEmitter {
  private readonly codec = new HeaderCodec();
  private readonly reader = new FrameReader();
  private readonly streams = new Map<number, SpdyStream>();
  /** Frames received, not handled yet; `head` is the next one. */
  private queue: FrameEvent[] = [];
  private head = 0;
  private queuedBytes = 0;
  private handling = false;
  private lastStreamId = 0;
  private refusedStreams = 0;
  private closed = false;
  /** Streams holding more than STREAM_BUFFER_BYTES unread. */
  private readonly full = new Set<SpdyStream>();
  private readonly flow: Backpressure;
  private pingId = 0;
  /** Whether the client keeps windows; until it shows it does, we never wait for window. */
  private peerCountsWindows = false;
  private initialSendWindow = DEFAULT_INITIAL_WINDOW;
  private sessionSendWindow = DEFAULT_INITIAL_WINDOW;
  private readonly waitingForWindow = new Set<SpdyStream>();
  /** Streams whose reader took half a window or more since the last grant: granted as the poll phase ends. */
  private readonly toGrant = new Set<SpdyStream>();
  /** Bytes of data dropped (for streams the session does not have) since the last grant: session window given back with it. */
  private strayBytes = 0;
  private grantScheduled = false;
  private readonly strayFrames = new RateBudget(STRAY_DATA_FRAMES_PER_SECOND, MAX_STRAY_DATA_FRAMES);
  private readonly pingReplies = new RateBudget(PING_REPLIES_PER_SECOND);
  /** The frames of this turn's budget are handled: the rest wait for the next turn, the connection not read. */
  private nextTurnScheduled = false;
  private readonly idle: IdleTimer;
  private readonly batch: TurnCork;
  /** Lent reads not given back yet, by their buffer, in the order read. */
  private readonly lentReads = new Map<ArrayBufferLike, LentRead>();
  private lentConnection: LentReadConnection | undefined;
  /** Frame events queued and dequeued since the session began: a lent read waits until its last one is handled. */
  private enqueued = 0;
  private dequeued = 0;

  constructor(
    /** The upgraded connection: a TCP socket, or a WebSocket tunnel (ws-port-forward.ts). */
    private readonly socket: Duplex,
    private readonly options: SpdySessionOptions,
    lent?: SpdyLentReads,
  ) {
    super();
    this.idle = new IdleTimer(options.idleTimeoutMs, () => this.close());
    this.batch = new TurnCork(socket);
    // (A WebSocket's socket has it already.)
    if (socket instanceof Socket) socket.setNoDelay(true);
    this.flow = new Backpressure(
      {
        socket,
        unsent: () => socket.writableLength,
        pause: () => socket.pause(),
        resume: () => socket.resume(),
        ping: () => this.ping(),
      },
      options.pausedProbeMs,
    );
    if (lent) {
      lent.connection.read((data, giveBack) => this.receive(data, giveBack), () => this.updateReading());
      const { head } = lent;
      // (After the listeners of 'stream' are there, as a pipe's first data would come.)
      if (head.length > 0) process.nextTick(() => this.receive(head));
      this.lentConnection = lent.connection;
    } else socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('error', () => this.teardown());
    socket.on('close', () => this.teardown());
    socket.on('end', () => this.teardown());
  }

  /** Streams open now (for tests and logs). */
  get openStreams(): number {
    return this.streams.size;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Says goodbye (GOAWAY, with `status`: 0 is OK, 1 PROTOCOL_ERROR) and closes the connection
   * once everything queued is written.
   */
  close(status = 0): void {
    if (this.closed) return;
    this.write(encodeControl(ControlType.GoAway, 0, goAwayPayload(this.lastStreamId, status)));
    this.teardown();
  }

  sendData(stream: SpdyStream, data: Buffer, fin: boolean, done: (err?: Error | null) => void): void {
    if (this.closed || stream.reset) return done(new Error('SPDY stream is closed'));
    stream.outgoing = { data, off: 0, fin, done };
    this.flush(stream);
  }

  /**
   * Answers a stream the session will not serve with RST_STREAM `status`, and ends the session
   * once it refused MAX_REFUSED_STREAMS that count (`counted`: not a stream past the bound).
   */
  refuseStream(streamId: number, status: number, counted = true): void {
    this.write(encodeControl(ControlType.RstStream, 0, rstStreamPayload(streamId, status)));
    if (counted && ++this.refusedStreams >= MAX_REFUSED_STREAMS) this.close(GOAWAY_PROTOCOL_ERROR);
  }

  /** Sends RST_STREAM for a stream still open; nothing more goes out for it. */
  resetStream(stream: SpdyStream, status: number): void {
    if (stream.reset) return;
    stream.reset = true;
    this.write(encodeControl(ControlType.RstStream, 0, rstStreamPayload(stream.id, status)));
  }

  streamDestroyed(stream: SpdyStream): void {
    // Destroyed before both sides ended: the client is told (CANCEL) it need not send more.
    if (!this.closed && !(stream.localEnded && stream.remoteEnded)) this.resetStream(stream, RST_CANCEL);
    stream.reset = true;
    stream.outgoing = undefined;
    this.forget(stream);
  }

  /** A stream's reader took data: grant the window back and read the connection again if it can be. */
  consumed(stream: SpdyStream): void {
    if (this.closed) return;
    // In steps of half the window: the client always has the other half to send with.
    if (stream.received - stream.unread - stream.granted >= MIN_WINDOW_GRANT && !this.toGrant.has(stream)) {
      this.toGrant.add(stream);
      this.scheduleGrant();
    }
    if (stream.unread <= STREAM_BUFFER_BYTES && this.full.delete(stream)) this.updateReading();
    this.settleReads();
  }

  private scheduleGrant(): void {
    if (this.grantScheduled) return;
    this.grantScheduled = true;
    setImmediate(this.grantWindows);
  }

  /**
   * Grants back, as the poll phase ends, what readers took during it and what was dropped: one
   * WINDOW_UPDATE a stream and one for the session, in one write, however many reads of the
   * connection the turn made (a pair a read, or one a dropped frame, cost a write to the client
   * and a wake-up of it each).
   */
  private readonly grantWindows = (): void => {
    this.grantScheduled = false;
    if (this.closed) return this.toGrant.clear();
    this.batch.cork();
    let session = this.strayBytes;
    this.strayBytes = 0;
    for (const stream of this.toGrant) {
      const taken = stream.received - stream.unread;
      const delta = taken - stream.granted;
      stream.granted = taken;
      session += delta;
      if (!stream.remoteEnded && !stream.reset) this.write(encodeControl(ControlType.WindowUpdate, 0, windowUpdatePayload(stream.id, delta)));
    }
    this.toGrant.clear();
    if (session > 0) this.write(encodeControl(ControlType.WindowUpdate, 0, windowUpdatePayload(0, session)));
  };

  private forget(stream: SpdyStream): void {
    if (this.streams.get(stream.id) === stream) this.streams.delete(stream.id);
    this.waitingForWindow.delete(stream);
    if (this.full.delete(stream)) this.updateReading();
  }

  /**
   * Sends what the stream has to send, as far as the client's windows allow when it keeps them.
   * The frames of a turn of the event loop (those of one read of Docker's connection, whichever
   * streams they are for) leave in one write to the socket (corked), each frame's payload a view
   * of the chunk, not a copy.
   */
  private flush(stream: SpdyStream): void {
    const out = stream.outgoing;
    if (!out) return;
    this.batch.cork();
    for (;;) {
      const left = out.data.length - out.off;
      let n = Math.min(left, MAX_DATA_CHUNK);
      if (this.peerCountsWindows) n = Math.min(n, stream.sendWindow, this.sessionSendWindow);
      if (left > 0 && n <= 0) {
        this.waitingForWindow.add(stream);
        return;
      }
      const piece = out.data.subarray(out.off, out.off + n);
      out.off += n;
      stream.sendWindow -= n;
      this.sessionSendWindow -= n;
      if (out.off < out.data.length) {
        this.writeData(stream.id, 0, piece);
        continue;
      }
      stream.outgoing = undefined;
      this.waitingForWindow.delete(stream);
      this.writeData(stream.id, out.fin ? FLAG_FIN : 0, piece);
      this.whenSent(out.done);
      if (out.fin) {
        stream.localEnded = true;
        if (stream.remoteEnded) this.forget(stream);
      }
      return;
    }
  }

  /** `then(true)` once the socket has handed everything written so far to the kernel. */
  afterSent(then: (sent: boolean) => void): void {
    afterSocketSent(this.socket, then);
  }

  /** Calls `done` now if the socket has room, else once it drains (or fails). */
  private whenSent(done: (err?: Error | null) => void): void {
    if (!this.socket.writable) return done(new Error('SPDY connection is closed'));
    this.flow.whenSent(done);
  }

  private write(frame: Buffer, done?: (err?: Error | null) => void, activity = true): void {
    if (activity) this.idle.touch();
    if (!this.socket.writable) {
      done?.(new Error('SPDY connection is closed'));
      return;
    }
    this.socket.write(frame, done);
    if (this.socket.writableLength > MAX_UNSENT_BYTES) this.updateReading();
  }

  /** A data frame as its head and its payload, two writes of one corked turn. */
  private writeData(streamId: number, flags: number, data: Buffer): void {
    this.write(dataFrameHead(streamId, flags, data.length));
    if (data.length > 0) this.write(data);
  }

  /** One read of the connection; `giveBack` when it is lent. */
  private receive(chunk: Buffer, giveBack?: GiveBack): void {
    if (this.closed) return giveBack?.(true);
    let events: FrameEvent[];
    try {
      events = this.reader.push(chunk);
    } catch {
      this.close(GOAWAY_PROTOCOL_ERROR);
      return giveBack?.(true);
    }
    for (const e of events) {
      this.queue.push(e);
      this.queuedBytes += sizeOf(e);
    }
    this.enqueued += events.length;
    if (giveBack) this.lentReads.set(chunk.buffer, { giveBack, lastEvent: this.enqueued, fed: new Map() });
    this.handleQueued();
    this.updateReading();
    this.settleReads();
  }

  /**
   * Gives back each lent read none of whose data waits here any more: reusable once the pipe
   * target of every stream it fed has sent it (pipedTo), not reusable when a stream it fed has
   * none or is gone (its data may still be referenced).
   */
  private settleReads(): void {
    for (const [buffer, read] of this.lentReads) {
      if (this.dequeued < read.lastEvent) continue;
      let ready = true;
      for (const [stream, end] of read.fed) if (!stream.destroyed && stream.taken < end) ready = false;
      if (!ready) continue;
      this.lentReads.delete(buffer);
      let waiting = 1;
      let reusable = true;
      const settle = (sent: boolean): void => {
        reusable &&= sent;
        if (--waiting === 0) read.giveBack(reusable);
      };
      for (const stream of read.fed.keys()) {
        const target = stream.pipedTo;
        if (!target || stream.destroyed) {
          reusable = false;
          continue;
        }
        waiting++;
        afterSocketSent(target, settle);
      }
      settle(true);
    }
  }

  /**
   * Frames are handled strictly in order: a stream's data must not overtake its SYN_STREAM,
   * whose headers inflate asynchronously. Everything else is handled at once, synchronously (no
   * promise a frame); a header block that inflates holds the frames behind it until it is done.
   * A frame that cannot be handled (a header block over its bounds, one that does not inflate)
   * ends the session: the header compression state cannot be resynchronised.
   * At most FRAMES_PER_TURN a turn, their answers (PING replies, RST_STREAMs) in one write.
   */
  private handleQueued(): void {
    if (this.handling || this.nextTurnScheduled) return;
    this.batch.cork();
    let budget = FRAMES_PER_TURN;
    // Frames that are not stray data are activity for the idle timeout: read the clock once.
    let active = false;
    try {
      while (this.head < this.queue.length && !this.closed) {
        if (budget <= 0) {
          this.nextTurnScheduled = true;
          setImmediate(this.nextTurn);
          break;
        }
        const e = this.dequeue();
        if (e.kind === 'data') {
          // A run of one stream's small frames goes on as one chunk (copied, up to
          // MAX_GATHERED_BYTES): 1-byte frames would cost a push and a write toward Docker each.
          // Larger ones go on as they are, views of the read.
          let parts: Buffer[] | undefined;
          let fin = e.fin;
          let frames = 1;
          let size = e.data.length;
          while (!fin && frames < budget && this.head < this.queue.length) {
            const next = this.queue[this.head]!;
            if (next.kind !== 'data' || next.streamId !== e.streamId || size + next.data.length > MAX_GATHERED_BYTES) break;
            this.dequeue();
            (parts ??= [e.data]).push(next.data);
            size += next.data.length;
            fin = next.fin;
            frames++;
          }
          budget -= frames;
          if (this.onData(e.streamId, parts ? Buffer.concat(parts) : e.data, fin, frames)) active = true;
          continue;
        }
        budget--;
        active = true;
        const inflating = this.onControl(e);
        if (inflating) {
          this.handling = true;
          if (active) this.idle.touch();
          inflating.then(
            () => this.resumeHandling(),
            () => this.resumeHandling(true),
          );
          return;
        }
      }
    } catch {
      this.close(GOAWAY_PROTOCOL_ERROR);
    }
    if (active) this.idle.touch();
    if (this.head >= this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    }
    this.updateReading();
  }

  private dequeue(): FrameEvent {
    const e = this.queue[this.head]!;
    this.queue[this.head++] = undefined as unknown as FrameEvent;
    this.queuedBytes -= sizeOf(e);
    this.dequeued++;
    return e;
  }

  private readonly nextTurn = (): void => {
    this.nextTurnScheduled = false;
    this.handleQueued();
    this.settleReads();
  };

  /** A header block is done: the frames behind it go on, unless it failed. */
  private resumeHandling(failed = false): void {
    this.handling = false;
    if (failed) this.close(GOAWAY_PROTOCOL_ERROR);
    this.handleQueued();
    this.settleReads();
  }

  /** `frames` data frames (pieces) of one stream; answers whether a stream took them (activity). */
  private onData(streamId: number, data: Buffer, fin: boolean, frames: number): boolean {
    const stream = this.streams.get(streamId);
    if (!stream || stream.remoteEnded || stream.reset) {
      // Data for a stream that is gone, refused or never opened: dropped, its session window
      // given back with the turn's grants; counted against MAX_STRAY_DATA_FRAMES.
      if (data.length > 0) {
        this.strayBytes += data.length;
        this.scheduleGrant();
      }
      if (!this.strayFrames.take(frames)) this.close(GOAWAY_PROTOCOL_ERROR);
      return false;
    }
    if (data.length > 0) {
      stream.deliver(data);
      this.lentReads.get(data.buffer)?.fed.set(stream, stream.received);
      if (stream.unread > STREAM_BUFFER_BYTES) this.full.add(stream);
    }
    if (fin) {
      stream.remoteEnd();
      // Nothing more can come for it: what it holds no longer stops the others.
      if (this.full.delete(stream)) this.updateReading();
      if (stream.localEnded) this.forget(stream);
    }
    return true;
  }

  /** Handles a control frame; answers a promise only while a header block inflates. */
  private onControl(e: Extract<FrameEvent, { kind: 'control' }>): Promise<void> | undefined {
    switch (e.type) {
      case ControlType.SynStream:
        return this.openStream(e.payload, e.flags);
      case ControlType.RstStream: {
        const stream = this.streams.get(streamIdOf(e.payload));
        if (stream) {
          stream.reset = true;
          stream.destroy();
        }
        return;
      }
      case ControlType.Ping:
        if (e.payload.length < 4) throw new Error('PING is too short');
        // The client's pings (odd IDs) are answered, at most PING_REPLIES_PER_SECOND (the rest
        // dropped, as SPDY allows); ours (even) come back and are done.
        if ((e.payload.readUInt32BE(0) & 1) === 1 && this.pingReplies.take()) this.write(encodeControl(ControlType.Ping, 0, e.payload));
        return;
      case ControlType.GoAway:
        this.teardown();
        return;
      case ControlType.Headers:
        // Later headers carry nothing the streaming protocols use, but the block must still go
        // through the decompressor to keep its state in step. (A copy, as for SYN_STREAM.)
        return this.codec.inflate(Buffer.from(e.payload.subarray(4))).then(() => undefined);
      case ControlType.Settings: {
        const size = parseSettings(e.payload).get(SETTINGS_INITIAL_WINDOW_SIZE);
        if (size === undefined) return;
        const delta = Math.min(size, MAX_WINDOW) - this.initialSendWindow;
        this.initialSendWindow += delta;
        for (const stream of this.streams.values()) stream.sendWindow += delta;
        this.peerCountsWindows = true;
        this.flushWaiting();
        return;
      }
      case ControlType.WindowUpdate: {
        const { streamId, delta } = parseWindowUpdate(e.payload);
        this.peerCountsWindows = true;
        if (streamId === 0) this.sessionSendWindow = Math.min(this.sessionSendWindow + delta, MAX_WINDOW);
        else {
          const stream = this.streams.get(streamId);
          if (stream) stream.sendWindow = Math.min(stream.sendWindow + delta, MAX_WINDOW);
        }
        this.flushWaiting();
        return;
      }
      default:
        // SYN_REPLY (we open no streams), NOOP, unknown types: nothing to do.
        return;
    }
  }

  private flushWaiting(): void {
    for (const stream of [...this.waitingForWindow]) this.flush(stream);
  }

  private async openStream(payload: Buffer, flags: number): Promise<void> {
    const { streamId, compressedHeaders } = parseSynStream(payload);
    // Inflated whatever becomes of the stream, to keep the decompressor in step; a copy, which the
    // inflater reads later (the frame may be a view of a lent read, given back once it is handled).
    const headers = await this.codec.inflate(Buffer.from(compressedHeaders));
    if (this.closed) return;
    if (streamId % 2 !== 1 || streamId <= this.lastStreamId) return this.refuseStream(streamId, RST_PROTOCOL_ERROR);
    this.lastStreamId = streamId;
    // Nobody is taking streams any more (exec has all it asked for), or past the bound.
    if (this.listenerCount('stream') === 0) return this.refuseStream(streamId, RST_REFUSED_STREAM);
    if (this.streams.size >= this.options.maxStreams) return this.refuseStream(streamId, RST_REFUSED_STREAM, false);
    const stream = new SpdyStream(streamId, headers, this, this.initialSendWindow);
    this.streams.set(streamId, stream);
    // spdystream ignores the reply's headers; HTTP-minded clients (spdy-transport) want a status.
    const reply = await this.codec.deflate({ ':status': ['200'], ':version': ['HTTP/1.1'] });
    if (this.closed) return;
    this.write(encodeControl(ControlType.SynReply, 0, synReplyPayload(streamId, reply)));
    if ((flags & FLAG_FIN) !== 0) stream.remoteEnd();
    this.emit('stream', stream);
  }

  /** Reads the connection unless a stream, the queue or our unsent output is over its bound. */
  private updateReading(): void {
    if (this.closed) return;
    this.flow.update({
      'full streams': this.full.size > 0,
      'queued frames': this.queuedBytes > MAX_QUEUED_BYTES,
      'frames for the next turn': this.nextTurnScheduled,
      'lent reads': this.lentConnection?.exhausted === true,
    });
  }

  /**
   * A PING of ours (even ID): unanswered while we do not read, but writing it makes the socket
   * fail once the client has gone. It is not activity for the idle timeout.
   */
  private ping(): void {
    this.pingId = (this.pingId + 2) & 0x7ffffffe;
    const id = Buffer.alloc(4);
    id.writeUInt32BE(this.pingId, 0);
    this.write(encodeControl(ControlType.Ping, 0, id), undefined, false);
  }

  private teardown(): void {
    if (this.closed) return;
    this.closed = true;
    this.idle.stop();
    for (const stream of this.streams.values()) {
      stream.reset = true;
      stream.destroy();
    }
    this.streams.clear();
    this.full.clear();
    this.waitingForWindow.clear();
    this.queue = [];
    this.head = 0;
    this.queuedBytes = 0;
    // What the streams held is dropped with them; what their targets hold may still be referenced.
    for (const read of this.lentReads.values()) read.giveBack(false);
    this.lentReads.clear();
    this.flow.close(new Error('SPDY connection is closed'));
    this.codec.close();
    // What we queued goes out, then our FIN; what the client still sends is read and dropped so
    // that its FIN is seen; a client that never closes its side is cut off after a grace period.
    if (!this.socket.destroyed) {
      this.socket.end();
      this.socket.resume();
      setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS).unref();
    }
    this.emit('close');
  }
}

/** A lent read of the connection: its last frame event (counting from the first), and how far each stream it fed must have taken it. */
interface LentRead {
  giveBack: GiveBack;
  lastEvent: number;
  fed: Map<SpdyStream, number>;
}

function sizeOf(e: FrameEvent): number {
  return 8 + (e.kind === 'data' ? e.data.length : e.payload.length);
}
