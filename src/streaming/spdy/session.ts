// The server side of one SPDY/3 connection after the HTTP upgrade: the client opens streams
// (each SYN_STREAM carries headers such as streamType), we reply and hand each stream on as
// a Duplex. Go's spdystream, which kubelet and kubectl use, neither sends nor honours
// WINDOW_UPDATE, so this side never waits for send window; it still grants window for what it
// receives so that clients which do count windows (spdy-transport) keep sending.
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import {
  ControlType,
  decodeFrames,
  encodeControl,
  encodeData,
  FLAG_FIN,
  goAwayPayload,
  HeaderCodec,
  parseSynStream,
  rstStreamPayload,
  RST_PROTOCOL_ERROR,
  GOAWAY_PROTOCOL_ERROR,
  streamIdOf,
  synReplyPayload,
  type Frame,
  type HeaderBlock,
} from './framing';

/** Data frames we send are cut to this size so one stream cannot hog the connection. */
const MAX_DATA_CHUNK = 32 * 1024;

export class SpdyStream extends Duplex {
  constructor(
    readonly id: number,
    readonly headers: HeaderBlock,
    private readonly session: SpdyServerSession,
  ) {
    super({ allowHalfOpen: true });
  }

  /** The first value of a request header (names are case-insensitive). */
  header(name: string): string | undefined {
    return this.headers[name.toLowerCase()]?.[0];
  }

  override _read(): void {
    // Data is pushed as frames arrive.
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    this.session.sendData(this.id, chunk, false, done);
  }

  override _final(done: (err?: Error | null) => void): void {
    this.session.sendData(this.id, Buffer.alloc(0), true, done);
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.session.forget(this.id);
    done(err);
  }
}

export interface SpdyServerSession {
  on(event: 'stream', listener: (stream: SpdyStream) => void): this;
  on(event: 'close', listener: () => void): this;
}

export class SpdyServerSession extends EventEmitter {
  private readonly codec = new HeaderCodec();
  private readonly streams = new Map<number, SpdyStream>();
  private buffered: Buffer = Buffer.alloc(0);
  private chain: Promise<void> = Promise.resolve();
  private lastStreamId = 0;
  private closed = false;

  constructor(private readonly socket: Socket) {
    super();
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('error', () => this.teardown());
    socket.on('close', () => this.teardown());
    socket.on('end', () => this.teardown());
  }

  /**
   * Says goodbye (GOAWAY, with `status`: 0 is OK, 1 PROTOCOL_ERROR) and closes the connection
   * once everything queued is written.
   */
  close(status = 0): void {
    if (this.closed) return;
    this.write(encodeControl(ControlType.GoAway, 0, goAwayPayload(this.lastStreamId, status)));
    this.socket.end();
    this.teardown();
  }

  sendData(streamId: number, data: Buffer, fin: boolean, done: (err?: Error | null) => void): void {
    if (this.closed) return done(new Error('SPDY connection is closed'));
    for (let off = 0; off < data.length; off += MAX_DATA_CHUNK) {
      const piece = data.subarray(off, off + MAX_DATA_CHUNK);
      const last = off + MAX_DATA_CHUNK >= data.length;
      if (!last) this.write(encodeData(streamId, 0, piece));
      else return void this.write(encodeData(streamId, fin ? FLAG_FIN : 0, piece), done);
    }
    this.write(encodeData(streamId, fin ? FLAG_FIN : 0, Buffer.alloc(0)), done);
  }

  forget(streamId: number): void {
    this.streams.delete(streamId);
  }

  private write(frame: Buffer, done?: (err?: Error | null) => void): void {
    if (this.socket.writable) this.socket.write(frame, done);
    else done?.(new Error('SPDY connection is closed'));
  }

  private receive(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    let frames: Frame[];
    try {
      ({ frames, rest: this.buffered } = decodeFrames(this.buffered));
    } catch {
      this.socket.destroy();
      return;
    }
    for (const frame of frames) {
      // Frames are handled strictly in order: a stream's data must not overtake its SYN_STREAM,
      // whose headers inflate asynchronously.
      // A frame that cannot be handled (a header block over its bounds, one that does not
      // inflate) ends the session: the header compression state cannot be resynchronised.
      this.chain = this.chain.then(() => this.handle(frame)).catch(() => this.close(GOAWAY_PROTOCOL_ERROR));
    }
  }

  private async handle(frame: Frame): Promise<void> {
    if (this.closed) return;
    if (frame.kind === 'data') {
      const stream = this.streams.get(frame.streamId);
      if (!stream) return;
      if (frame.data.length > 0) {
        stream.push(frame.data);
        this.grantWindow(frame.streamId, frame.data.length);
      }
      if ((frame.flags & FLAG_FIN) !== 0) stream.push(null);
      return;
    }
    switch (frame.type) {
      case ControlType.SynStream:
        return this.openStream(frame.payload, frame.flags);
      case ControlType.RstStream:
        this.streams.get(streamIdOf(frame.payload))?.destroy();
        return;
      case ControlType.Ping:
        this.write(encodeControl(ControlType.Ping, 0, frame.payload));
        return;
      case ControlType.GoAway:
        this.socket.end();
        this.teardown();
        return;
      case ControlType.Headers:
        // Later headers carry nothing the streaming protocols use, but the block must still go
        // through the decompressor to keep its state in step.
        await this.codec.inflate(frame.payload.subarray(4));
        return;
      default:
        // SETTINGS, WINDOW_UPDATE, SYN_REPLY (we open no streams): nothing to do.
        return;
    }
  }

  private async openStream(payload: Buffer, flags: number): Promise<void> {
    const { streamId, compressedHeaders } = parseSynStream(payload);
    const headers = await this.codec.inflate(compressedHeaders);
    if (streamId % 2 !== 1 || streamId <= this.lastStreamId) {
      this.write(encodeControl(ControlType.RstStream, 0, rstStreamPayload(streamId, RST_PROTOCOL_ERROR)));
      return;
    }
    this.lastStreamId = streamId;
    const stream = new SpdyStream(streamId, headers, this);
    this.streams.set(streamId, stream);
    // spdystream ignores the reply's headers; HTTP-minded clients (spdy-transport) want a status.
    const reply = await this.codec.deflate({ ':status': ['200'], ':version': ['HTTP/1.1'] });
    this.write(encodeControl(ControlType.SynReply, 0, synReplyPayload(streamId, reply)));
    if ((flags & FLAG_FIN) !== 0) stream.push(null);
    this.emit('stream', stream);
  }

  private grantWindow(streamId: number, bytes: number): void {
    for (const id of [streamId, 0]) {
      const b = Buffer.alloc(8);
      b.writeUInt32BE(id, 0);
      b.writeUInt32BE(bytes, 4);
      this.write(encodeControl(ControlType.WindowUpdate, 0, b));
    }
  }

  private teardown(): void {
    if (this.closed) return;
    this.closed = true;
    for (const stream of this.streams.values()) {
      stream.push(null);
      stream.destroy();
    }
    this.streams.clear();
    this.codec.close();
    this.emit('close');
  }
}
