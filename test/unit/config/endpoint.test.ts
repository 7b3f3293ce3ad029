import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { parseEndpoint, parseListenEndpoint } from '../../../src/config/endpoint';
import { activatedSocketFd, forgetActivationEnv } from '../../../src/config/socket-activation';
import { parseDuration } from '../../../src/util/duration';
import { isCidr } from '../../../src/util/net';

describe('parseDuration', () => {
  const cases: Array<[string, number]> = [
    ['0', 0],
    ['1s', 1000],
    ['1m30s', 90_000],
    ['2h', 7_200_000],
    ['250ms', 250],
    ['1.5s', 1500],
    ['1500us', 2],
  ];
  for (const [text, ms] of cases) it(`${text} is ${ms} ms`, () => assert.equal(parseDuration(text), ms));
  for (const text of ['', '10', 's', '1x', '1m trailing', '-1s']) {
    it(`refuses ${JSON.stringify(text)}`, () => assert.throws(() => parseDuration(text), /is not a duration/));
  }
});

describe('parseEndpoint', () => {
  it('reads unix URLs and bare paths', () => {
    assert.deepEqual(parseEndpoint('unix:///run/x.sock'), { kind: 'unix', path: '/run/x.sock', url: 'unix:///run/x.sock' });
    assert.deepEqual(parseEndpoint('/run/x.sock'), { kind: 'unix', path: '/run/x.sock', url: 'unix:///run/x.sock' });
  });
  it('reads tcp and http URLs, with IPv6 hosts', () => {
    assert.deepEqual(parseEndpoint('tcp://localhost:2375'), { kind: 'tcp', host: 'localhost', port: 2375, url: 'tcp://localhost:2375' });
    assert.deepEqual(parseEndpoint('http://[::1]:2375'), { kind: 'tcp', host: '::1', port: 2375, url: 'http://[::1]:2375' });
  });
  for (const text of ['unix://relative', 'tcp://nohost', 'ftp://x:1', 'tcp://h:0', '']) {
    it(`refuses ${JSON.stringify(text)}`, () => assert.throws(() => parseEndpoint(text)));
  }
});

describe('parseListenEndpoint', () => {
  it('reads fd:// and fd://NAME besides what parseEndpoint reads', () => {
    assert.deepEqual(parseListenEndpoint('fd://'), { kind: 'fd', name: undefined, url: 'fd://' });
    assert.deepEqual(parseListenEndpoint('fd://cri-docker-shim.socket'), { kind: 'fd', name: 'cri-docker-shim.socket', url: 'fd://cri-docker-shim.socket' });
    assert.equal(parseListenEndpoint('unix:///run/x.sock').kind, 'unix');
  });
  it('refuses fd:// with a path and keeps fd:// from the Docker endpoint', () => {
    assert.throws(() => parseListenEndpoint('fd:///run/x.sock'), /is not fd:\/\/ or fd:\/\/NAME/);
    assert.throws(() => parseEndpoint('fd://'));
  });
});

describe('activatedSocketFd', () => {
  it('serves on fd 3 when systemd passed sockets to this process', () => {
    assert.equal(activatedSocketFd({ LISTEN_PID: '42', LISTEN_FDS: '1' }, 42, undefined), 3);
    assert.equal(activatedSocketFd({ LISTEN_PID: '42', LISTEN_FDS: '2', LISTEN_FDNAMES: 'metrics:cri' }, 42, 'cri'), 4);
  });
  it('says why when there is no socket for us', () => {
    assert.throws(() => activatedSocketFd({}, 42, undefined), /LISTEN_PID\/LISTEN_FDS are not set/);
    assert.throws(() => activatedSocketFd({ LISTEN_PID: '7', LISTEN_FDS: '1' }, 42, undefined), /for process 7, not this one \(42\)/);
    assert.throws(() => activatedSocketFd({ LISTEN_PID: '42', LISTEN_FDS: '0' }, 42, undefined), /passed no socket/);
    assert.throws(() => activatedSocketFd({ LISTEN_PID: '42', LISTEN_FDS: 'x' }, 42, undefined), /passed no socket/);
    assert.throws(() => activatedSocketFd({ LISTEN_PID: '42', LISTEN_FDS: '1', LISTEN_FDNAMES: 'a' }, 42, 'b'), /fd:\/\/b: no passed socket has that name \(names: a\)/);
  });
  it('clears the variables so plugins the shim runs do not take them as theirs', () => {
    const env: NodeJS.ProcessEnv = { LISTEN_PID: '1', LISTEN_FDS: '1', LISTEN_FDNAMES: 'x', PATH: '/bin' };
    forgetActivationEnv(env);
    assert.deepEqual(env, { PATH: '/bin' });
  });
});

describe('isCidr', () => {
  it('accepts IPv4 and IPv6 CIDRs', () => {
    assert.equal(isCidr('10.244.0.0/16'), true);
    assert.equal(isCidr('fd00::/64'), true);
  });
  it('refuses prefixes that do not fit and non-addresses', () => {
    for (const bad of ['10.0.0.0/33', 'fd00::/129', '10.0.0.0', 'example/8', '10.0.0.0/x']) assert.equal(isCidr(bad), false, bad);
  });
});
