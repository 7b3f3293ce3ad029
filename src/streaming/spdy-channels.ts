// Exec and attach over SPDY: the client opens one stream per channel, naming it in the
// streamType header; we wait (bounded) for the ones the request asked for, then run.
import { endWritable, ResizeFeed, type ResizeListener, type StdioChannels } from './channels';
import { encodeOutcome, supportsResize, type Outcome } from './protocol';
import type { StdioOptions } from './requests';
import type { SpdyServerSession, SpdyStream } from './spdy/session';

type StreamType = 'error' | 'stdin' | 'stdout' | 'stderr' | 'resize';

/** The streams a client must open for these options under this protocol. */
export function expectedStreamTypes(opts: StdioOptions, protocol: string): StreamType[] {
  const types: StreamType[] = ['error'];
  if (opts.stdin) types.push('stdin');
  if (opts.stdout) types.push('stdout');
  if (opts.stderr && !opts.tty) types.push('stderr');
  if (opts.tty && supportsResize(protocol)) types.push('resize');
  return types;
}

export function waitForStdioStreams(
  session: SpdyServerSession,
  protocol: string,
  opts: StdioOptions,
  timeoutMs: number,
): Promise<StdioChannels> {
  const expected = expectedStreamTypes(opts, protocol);
  return new Promise((resolve, reject) => {
    const got = new Map<StreamType, SpdyStream>();
    const timer = setTimeout(() => fail(new Error(`timed out waiting for streams ${expected.filter((t) => !got.has(t)).join(', ')}`)), timeoutMs);
    const onClose = (): void => fail(new Error('client closed the connection before opening its streams'));
    function fail(err: Error): void {
      clearTimeout(timer);
      session.off('stream', onStream);
      session.off('close', onClose);
      reject(err);
    }
    function onStream(stream: SpdyStream): void {
      const type = stream.header('streamType') as StreamType | undefined;
      if (!type || !expected.includes(type) || got.has(type)) {
        stream.refuse();
        return;
      }
      got.set(type, stream);
      if (got.size < expected.length) return;
      clearTimeout(timer);
      session.off('stream', onStream);
      session.off('close', onClose);
      resolve(spdyChannels(session, protocol, got));
    }
    session.on('stream', onStream);
    session.on('close', onClose);
  });
}

function spdyChannels(session: SpdyServerSession, protocol: string, streams: Map<StreamType, SpdyStream>): StdioChannels {
  const error = streams.get('error')!;
  const stdout = streams.get('stdout');
  const stderr = streams.get('stderr');
  const resize = streams.get('resize');
  // Streams the client only writes to (stdin, resize) and the error stream it only reads: we
  // end our side of them at the end, so the client sees each one finish. What a client sends on
  // the streams it only reads (error, stdout, stderr) is dropped as it comes.
  for (const s of [error, stdout, stderr]) s?.resume();
  const clientGone = new Promise<void>((resolve) => session.on('close', resolve));
  return {
    protocol,
    stdin: streams.get('stdin'),
    stdout,
    stderr,
    takeResizes(listener?: ResizeListener): void {
      if (resize) readResizes(resize, listener);
    },
    clientGone,
    async finish(outcome: Outcome): Promise<void> {
      await Promise.all([endWritable(stdout), endWritable(stderr)]);
      const status = encodeOutcome(outcome, protocol);
      if (status.length > 0) error.write(status);
      await endWritable(error);
      for (const s of [streams.get('stdin'), resize]) if (s) await endWritable(s);
      session.close();
    },
  };
}

/**
 * Reads the resize stream into `listener`; until then it is not read (its data waits within the
 * stream's bound). Without a listener (the container has no TTY), or once a message is over the
 * bound, the stream is reset: the client need send nothing more there.
 */
function readResizes(stream: SpdyStream, listener: ResizeListener | undefined): void {
  if (!listener) return void stream.destroy();
  const feed = new ResizeFeed(true);
  feed.take(listener);
  stream.on('data', (chunk: Buffer) => {
    if (!feed.push(chunk)) stream.destroy();
  });
}
