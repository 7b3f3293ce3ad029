import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { matchesImage, matchPatternProblem, registryOf } from '../../../src/credentials/match';

describe('matchesImage (kubelet matchImages semantics)', () => {
  it('matches a host, with globs within one label each', () => {
    assert.equal(matchesImage('registry.example.com', 'registry.example.com/app:1'), true);
    assert.equal(matchesImage('*.example.com', 'registry.example.com/app:1'), true);
    assert.equal(matchesImage('registry.*.com', 'registry.example.com/app'), true);
    assert.equal(matchesImage('reg*.example.com', 'registry.example.com/app'), true);
    assert.equal(matchesImage('*.com', 'registry.example.com/app'), false, 'a glob spans one label only');
    assert.equal(matchesImage('*.example.com', 'example.com/app'), false);
    assert.equal(matchesImage('registry.example.com', 'other.example.com/app'), false);
  });

  it('ports must be equal: none matches none', () => {
    assert.equal(matchesImage('127.0.0.1:5000', '127.0.0.1:5000/app:1'), true);
    assert.equal(matchesImage('127.0.0.1:5000', '127.0.0.1:5001/app:1'), false);
    assert.equal(matchesImage('127.0.0.1', '127.0.0.1:5000/app:1'), false);
    assert.equal(matchesImage('*.*.*.*:5000', '127.0.0.1:5000/app:1'), true);
  });

  it('the pattern path is a prefix of the image path', () => {
    assert.equal(matchesImage('registry.example.com/team', 'registry.example.com/team/app:1'), true);
    assert.equal(matchesImage('registry.example.com/team', 'registry.example.com/other/app:1'), false);
  });

  it('host labels compare case-insensitively', () => {
    assert.equal(matchesImage('Registry.Example.com', 'registry.example.com/app'), true);
  });

  it('registryOf is the host and port', () => {
    assert.equal(registryOf('127.0.0.1:5000/app:1'), '127.0.0.1:5000');
    assert.equal(registryOf('docker.io/library/busybox:latest'), 'docker.io');
  });

  it('bad patterns are reported', () => {
    assert.equal(matchPatternProblem('*.example.com:5000/team'), undefined);
    assert.match(matchPatternProblem('https://x.io')!, /scheme/);
    assert.match(matchPatternProblem('x.io:*')!, /numeric port/);
    assert.match(matchPatternProblem('x.io/te*')!, /only in the host/);
    assert.match(matchPatternProblem('a..b')!, /empty or malformed/);
    assert.match(matchPatternProblem('')!, /empty/);
  });
});
