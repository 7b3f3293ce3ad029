// The healthcheck probe's pure parts: its flags, the address it dials, and its verdict on a
// Status answer.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { StatusResponse__Output } from '../../../src/generated/runtime/v1/StatusResponse';
import { grpcAddress, judgeStatus, parseHealthFlags } from '../../../src/tools/health-check';

function status(runtime: boolean, network: boolean): StatusResponse__Output {
  return {
    status: {
      conditions: [
        { type: 'RuntimeReady', status: runtime, reason: runtime ? '' : 'DockerDaemonNotReady', message: runtime ? '' : 'connect ENOENT' },
        { type: 'NetworkReady', status: network, reason: network ? '' : 'NetworkPluginNotReady', message: '' },
      ],
    },
    info: {},
    runtimeHandlers: [],
    features: null,
  };
}

describe('health-check verdict', () => {
  it('is healthy when the runtime is ready, whatever the network says', () => {
    const v = judgeStatus(status(true, false), false);
    assert.equal(v.healthy, true);
    assert.equal(v.summary, 'RuntimeReady=true NetworkReady=false (NetworkPluginNotReady)');
  });

  it('is unhealthy when Docker is not ready, and says why', () => {
    const v = judgeStatus(status(false, true), false);
    assert.equal(v.healthy, false);
    assert.match(v.summary, /RuntimeReady=false \(DockerDaemonNotReady: connect ENOENT\)/);
  });

  it('counts the network only when asked to', () => {
    assert.equal(judgeStatus(status(true, false), true).healthy, false);
    assert.equal(judgeStatus(status(true, true), true).healthy, true);
  });

  it('is unhealthy when the answer has no conditions', () => {
    const v = judgeStatus({ status: null, info: {}, runtimeHandlers: [], features: null }, false);
    assert.deepEqual(v, { healthy: false, summary: 'Status answered without conditions' });
  });
});

describe('health-check flags', () => {
  it('defaults to the shim’s default socket and a 5 s deadline', () => {
    const o = parseHealthFlags([]);
    assert.equal(o.endpoint.url, 'unix:///run/cri-docker-shim.sock');
    assert.equal(o.timeoutMs, 5000);
    assert.equal(o.requireNetwork, false);
  });

  it('takes an endpoint, a timeout and --require-network', () => {
    const o = parseHealthFlags(['--endpoint', 'unix:///x/s.sock', '--timeout=250ms', '--require-network']);
    assert.equal(grpcAddress(o.endpoint), 'unix:///x/s.sock');
    assert.equal(o.timeoutMs, 250);
    assert.equal(o.requireNetwork, true);
  });

  it('dials tcp endpoints as host:port, IPv6 hosts in brackets', () => {
    assert.equal(grpcAddress(parseHealthFlags(['--endpoint=tcp://127.0.0.1:9000']).endpoint), '127.0.0.1:9000');
    assert.equal(grpcAddress(parseHealthFlags(['--endpoint=tcp://[::1]:9000']).endpoint), '[::1]:9000');
  });

  it('refuses unknown flags and bad values', () => {
    assert.throws(() => parseHealthFlags(['--nope']), /Unknown option/);
    assert.throws(() => parseHealthFlags(['--endpoint=/x', '--timeout=5']), /duration|unit|ambiguous/i);
    assert.throws(() => parseHealthFlags(['--endpoint=http:/x']), /is not unix/);
  });
});
