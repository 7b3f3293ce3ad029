// The pure parts of port forward over WebSocket: which ports a connection forwards (the URL's
// query as kubelet reads it, else the CRI request's), bounded; the port prefix of each channel.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { forwardingError, portPrefix, portsOfWebSocket } from '../../../src/streaming/ws-port-forward';

const q = (s: string) => new URLSearchParams(s);

describe('portsOfWebSocket', () => {
  it('reads repeated and comma-separated port values, in order, duplicates kept', () => {
    assert.deepEqual(portsOfWebSocket(q('port=80&port=8080,443&port=80'), [], 10), [80, 8080, 443, 80]);
  });

  it("takes the CRI request's ports when the query names none", () => {
    assert.deepEqual(portsOfWebSocket(q(''), [8080, 9090], 10), [8080, 9090]);
    assert.equal(portsOfWebSocket(q('other=1'), [], 10), 'query parameter "port" is required');
  });

  it('refuses what is not a port, with the value quoted', () => {
    for (const bad of ['0', '65536', '-1', '', '8o', '1e3', '123456', ' 80']) {
      assert.equal(portsOfWebSocket(q(`port=${encodeURIComponent(bad)}`), [], 10), `query parameter "port": ${JSON.stringify(bad)} is not a port (1-65535)`, bad);
    }
  });

  it('refuses more ports than the bound, from the query or the request, without reading past it', () => {
    assert.equal(portsOfWebSocket(q('port=1,2,3'), [], 2), 'at most 2 ports per port-forward connection');
    assert.equal(portsOfWebSocket(q(`port=${'1,'.repeat(10_000)}x`), [], 2), 'at most 2 ports per port-forward connection');
    assert.equal(portsOfWebSocket(q(''), [1, 2, 3], 2), 'at most 2 ports per port-forward connection');
    assert.deepEqual(portsOfWebSocket(q('port=1,2'), [], 2), [1, 2]);
  });

  it('allows only the ports a request named, when it named any', () => {
    assert.equal(portsOfWebSocket(q('port=8080&port=22'), [8080], 10), 'port 22 was not requested');
    assert.deepEqual(portsOfWebSocket(q('port=8080'), [8080], 10), [8080]);
  });
});

describe('port prefix and error text', () => {
  it('writes the port as uint16 little endian', () => {
    assert.deepEqual(portPrefix(8080), Buffer.from([0x90, 0x1f]));
    assert.deepEqual(portPrefix(65535), Buffer.from([0xff, 0xff]));
  });

  it("words a failure as kubelet's streaming library does", () => {
    assert.equal(forwardingError(80, 'abc', 'connection refused'), 'error forwarding port 80 to pod abc, uid : connection refused');
  });
});
