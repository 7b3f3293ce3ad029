import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { parseEndpoint } from '../../src/config/endpoint';
import { parseDuration } from '../../src/util/duration';
import { isCidr } from '../../src/util/net';

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

describe('isCidr', () => {
  it('accepts IPv4 and IPv6 CIDRs', () => {
    assert.equal(isCidr('10.244.0.0/16'), true);
    assert.equal(isCidr('fd00::/64'), true);
  });
  it('refuses prefixes that do not fit and non-addresses', () => {
    for (const bad of ['10.0.0.0/33', 'fd00::/129', '10.0.0.0', 'example/8', '10.0.0.0/x']) assert.equal(isCidr(bad), false, bad);
  });
});
