// A SPDY/3 client for tests that drive the streaming server frame by frame (see RawSpdyClient).
import type { Duplex } from 'node:stream';
import { ControlType, decodeFrames, encodeControl, encodeData, FLAG_FIN, HeaderCodec } from '../../src/streaming/spdy/framing';

/**
 * A SPDY/3 client as Go's spdystream (kubectl, client-go) is one: streams opened without HTTP
 * pseudo-headers, no SETTINGS, and no flow-control window ever counted or granted, so it writes
 * whatever it is given. It records what the server sends: data and FIN per stream, RST_STREAM
 * statuses, GOAWAY, WINDOW_UPDATEs.
 */
export class RawSpdyClient {
  private readonly codec = new HeaderCodec();
  private nextId = 1;
  private buffered: Buffer = Buffer.alloc(0);
  private readonly data = new Map<number, Buffer[]>();
  private readonly fins = new Set<number>();
  private readonly replies = new Set<number>();
  private readonly resets = new Map<number, number>();
  private readonly waiters: Array<() => void> = [];
  /** Stream ID → window granted by WINDOW_UPDATE (0 for the session). */
  readonly windowUpdates = new Map<number, number>();
  /** WINDOW_UPDATE frames received, all streams and the session. */
  windowUpdateFrames = 0;
  goAwayStatus: number | undefined;
  closed = false;
  /** Bytes of data frames received, all streams. */
  received = 0;

  /** `socket`: an upgraded connection, or a WebSocket tunnel's stream (streaming-clients.ts). */
  constructor(readonly socket: Duplex) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => undefined);
    socket.once('close', () => {
      this.closed = true;
      this.wake();
    });
  }

  /** Opens a stream (SYN_STREAM with these headers); resolves with its ID once the server replied. */
  async open(headers: Record<string, string>, { fin = false, waitReply = true }: { fin?: boolean; waitReply?: boolean } = {}): Promise<number> {
    const id = this.nextId;
    this.nextId += 2;
    const head = Buffer.alloc(10);
    head.writeUInt32BE(id, 0);
    const block = await this.codec.deflate(Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])));
    this.socket.write(encodeControl(ControlType.SynStream, fin ? FLAG_FIN : 0, Buffer.concat([head, block])));
    if (waitReply) await this.until(`SYN_REPLY or RST_STREAM for stream ${id}`, () => this.replies.has(id) || this.resets.has(id));
    return id;
  }

  /** Writes one data frame; answers socket.write's return. */
  write(id: number, data: Buffer, fin = false): boolean {
    return this.socket.write(encodeData(id, fin ? FLAG_FIN : 0, data));
  }

  /** Writes a control frame (SETTINGS, WINDOW_UPDATE, PING, RST_STREAM, …) as given. */
  control(type: ControlType, payload: Buffer, flags = 0): boolean {
    return this.socket.write(encodeControl(type, flags, payload));
  }

  replied(id: number): boolean {
    return this.replies.has(id);
  }

  dataOf(id: number): Buffer {
    return Buffer.concat(this.data.get(id) ?? []);
  }

  finished(id: number): boolean {
    return this.fins.has(id);
  }

  resetStatus(id: number): number | undefined {
    return this.resets.get(id);
  }

  /** Resolves once `probe` holds (checked on every frame and on close); rejects after `timeoutMs`. */
  until(what: string, probe: () => boolean, timeoutMs = 10_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
      const check = (): void => {
        if (probe()) {
          clearTimeout(timer);
          resolve();
        } else if (this.closed) {
          clearTimeout(timer);
          probe() ? resolve() : reject(new Error(`connection closed while waiting for ${what}`));
        } else this.waiters.push(check);
      };
      check();
    });
  }

  destroy(): void {
    this.codec.close();
    this.socket.destroy();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  private onData(chunk: Buffer): void {
    const { frames, rest } = decodeFrames(this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]));
    this.buffered = rest;
    for (const f of frames) {
      if (f.kind === 'data') {
        this.received += f.data.length;
        const parts = this.data.get(f.streamId) ?? [];
        parts.push(f.data);
        this.data.set(f.streamId, parts);
        if ((f.flags & FLAG_FIN) !== 0) this.fins.add(f.streamId);
        continue;
      }
      switch (f.type) {
        case ControlType.SynReply:
          this.replies.add(f.payload.readUInt32BE(0) & 0x7fffffff);
          break;
        case ControlType.RstStream:
          this.resets.set(f.payload.readUInt32BE(0) & 0x7fffffff, f.payload.readUInt32BE(4));
          break;
        case ControlType.GoAway:
          this.goAwayStatus = f.payload.readUInt32BE(4);
          break;
        case ControlType.WindowUpdate: {
          const id = f.payload.readUInt32BE(0) & 0x7fffffff;
          this.windowUpdateFrames++;
          this.windowUpdates.set(id, (this.windowUpdates.get(id) ?? 0) + (f.payload.readUInt32BE(4) & 0x7fffffff));
          break;
        }
        case ControlType.Ping:
          // spdystream answers the server's pings (even IDs) and nothing else.
          if ((f.payload.readUInt32BE(0) & 1) === 0) this.socket.write(encodeControl(ControlType.Ping, 0, f.payload));
          break;
      }
    }
    this.wake();
  }
}
