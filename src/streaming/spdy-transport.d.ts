// The parts of spdy-transport@3.0.0 the shim uses: its SPDY/3 header-compression dictionary
// (server side) and its client connection (tests). The package ships no types.
declare module 'spdy-transport/lib/spdy-transport/protocol/spdy/dictionary' {
  const dictionary: { readonly [version: number]: Buffer };
  export = dictionary;
}

declare module 'spdy-transport' {
  import type { Duplex } from 'node:stream';
  import type { EventEmitter } from 'node:events';

  export interface SpdyClientStream extends Duplex {
    readonly id: number;
    on(event: 'response', listener: (status: number, headers: Record<string, string>) => void): this;
    on(event: string, listener: (...args: unknown[]) => void): this;
  }

  export interface SpdyConnection extends EventEmitter {
    start(version: number): void;
    request(
      uri: { method: string; path: string; host?: string; headers: Record<string, string> },
      callback?: (err: Error | null, stream: SpdyClientStream) => void,
    ): SpdyClientStream;
    end(callback?: () => void): void;
  }

  export const connection: {
    create(socket: Duplex, options: { protocol: 'spdy' | 'http2'; isServer: boolean; windowSize?: number }): SpdyConnection;
  };
}
