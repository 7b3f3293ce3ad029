// Exec and attach over WebSocket (the *.channel.k8s.io sub-protocols): every message starts
// with its channel number (0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize); the base64
// variants send text, the channel as an ASCII digit followed by base64 data. v5 adds channel
// 255, by which the client closes one of its channels (stdin EOF).
import { PassThrough, Writable } from 'node:stream';
import type { RawData, WebSocket } from 'ws';
import { endWritable, type StdioChannels } from './channels';
import { encodeOutcome, isBase64WebSocket, JsonMessageSplitter, parseResize, type Outcome, type TerminalSize } from './protocol';
import type { StdioOptions } from './requests';

export const enum Channel {
  Stdin = 0,
  Stdout = 1,
  Stderr = 2,
  Error = 3,
  Resize = 4,
  Close = 255,
}

/** One message on a channel as the protocol frames it. */
export function encodeChannelMessage(channel: number, data: Buffer, base64: boolean): Buffer | string {
  if (base64) return String.fromCharCode(0x30 + channel) + data.toString('base64');
  return Buffer.concat([Buffer.from([channel]), data]);
}

/** The channel and payload of a received message; undefined for an empty or malformed one. */
export function decodeChannelMessage(message: Buffer, base64: boolean): { channel: number; data: Buffer } | undefined {
  if (message.length === 0) return undefined;
  if (!base64) return { channel: message[0]!, data: message.subarray(1) };
  const channel = message[0]! - 0x30;
  if (channel < 0 || channel > 9) return undefined;
  return { channel, data: Buffer.from(message.subarray(1).toString('latin1'), 'base64') };
}

export function wsChannels(ws: WebSocket, opts: StdioOptions): StdioChannels {
  const protocol = ws.protocol;
  const base64 = isBase64WebSocket(protocol);
  const send = (channel: number, data: Buffer, done: (err?: Error | null) => void): void => {
    if (ws.readyState !== ws.OPEN) return done();
    ws.send(encodeChannelMessage(channel, data, base64), { binary: !base64 }, (err) => done(err ?? null));
  };
  const output = (channel: number): Writable =>
    new Writable({ write: (chunk: Buffer, _enc, done) => send(channel, chunk, done) });

  const stdin = opts.stdin ? new PassThrough() : undefined;
  const stdout = opts.stdout ? output(Channel.Stdout) : undefined;
  const stderr = opts.stderr && !opts.tty ? output(Channel.Stderr) : undefined;
  const resizeListeners: Array<(size: TerminalSize) => void> = [];
  const resizeSplitter = new JsonMessageSplitter();

  // A broken connection shows up as 'close' too; an unhandled 'error' would end the shim.
  ws.on('error', () => undefined);
  ws.on('message', (raw: RawData) => {
    const msg = decodeChannelMessage(toBuffer(raw), base64);
    if (!msg) return;
    if (msg.channel === Channel.Stdin && stdin && !stdin.writableEnded) stdin.write(msg.data);
    else if (msg.channel === Channel.Resize) {
      for (const text of resizeSplitter.push(msg.data.toString('utf8'))) {
        const size = parseResize(text);
        if (size) for (const l of resizeListeners) l(size);
      }
    } else if (msg.channel === Channel.Close && msg.data[0] === Channel.Stdin) stdin?.end();
  });
  const clientGone = new Promise<void>((resolve) =>
    ws.once('close', () => {
      stdin?.end();
      resolve();
    }),
  );

  // The first (empty) message tells the client the connection is ready, as kubelet does.
  const first = stdout ? Channel.Stdout : stderr ? Channel.Stderr : Channel.Error;
  send(first, Buffer.alloc(0), () => undefined);

  return {
    protocol,
    stdin,
    stdout,
    stderr,
    onResize: (listener) => void resizeListeners.push(listener),
    clientGone,
    async finish(outcome: Outcome): Promise<void> {
      await Promise.all([endWritable(stdout), endWritable(stderr)]);
      const status = encodeOutcome(outcome, protocol);
      if (status.length > 0) await new Promise<void>((resolve) => send(Channel.Error, status, () => resolve()));
      ws.close(1000);
    },
  };
}

function toBuffer(raw: RawData): Buffer {
  if (Buffer.isBuffer(raw)) return raw;
  if (Array.isArray(raw)) return Buffer.concat(raw);
  return Buffer.from(raw);
}
