// The run census tells timer-driven runs from event-driven ones in a real Node process: an
// interval and a polling loop (re-armed from its own callbacks, though an event began it: from
// its fourth run on) are the clock's; a debounce armed by each incoming message is the message's.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { censusEnv, startCensus, timerRuns } from '../../support/census';
import { waitFor } from '../../support/poll';
import { tempDir } from '../../support/temp';

const PROGRAM = `
const net = require('node:net');
setInterval(function anInterval() {}, 40);
let loopStarted = false;
const server = net.createServer((socket) => {
  socket.on('data', () => {
    setTimeout(function aDebounce() {}, 5);
    if (!loopStarted) {
      loopStarted = true;
      const poll = () => setTimeout(function aPollingLoop() { poll(); }, 30);
      poll();
    }
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));
`;

describe('run census', () => {
  const dir = tempDir('census-unit');
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('counts an interval and a polling loop as timer-driven, a debounce armed by a message as its event', async () => {
    const script = path.join(dir, 'program.js');
    fs.writeFileSync(script, PROGRAM);
    const file = path.join(dir, 'census.json');
    const child = spawn(process.execPath, [script], { env: { ...process.env, ...censusEnv(file) }, stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      let out = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      const port = Number(await waitFor('the program to listen', () => out.includes('\n') && out.trim()));
      const { connect } = await import('node:net');
      const socket = connect(port, '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      const endCensus = startCensus(child, file);
      // Messages keep coming while the clock runs; the window ends once each kind has run a few times.
      for (let i = 0; i < 10; i++) {
        socket.write('x');
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
      socket.destroy();
      const census = await endCensus();
      // Each resource is named by the program's line that made it.
      const lineOf = (name: string): number => PROGRAM.split('\n').findIndex((l) => l.includes(name)) + 1;
      const runsOf = (name: string, timer: boolean): number =>
        census.filter((e) => e.timer === timer && e.site.includes(`program.js:${lineOf(name)}:`)).reduce((sum, e) => sum + e.runs, 0);
      const shown = JSON.stringify(census);
      assert.ok(runsOf('anInterval', true) >= 3, shown);
      assert.ok(runsOf('aPollingLoop', true) >= 3, shown);
      assert.ok(runsOf('aDebounce', false) >= 3, shown);
      assert.equal(runsOf('aDebounce', true), 0, shown);
      assert.equal(runsOf('anInterval', false), 0, shown);
      // The loop's first three runs are the message's: it armed the first, the first the second...
      assert.equal(runsOf('aPollingLoop', false), 3, shown);
      assert.equal(timerRuns(census), runsOf('anInterval', true) + runsOf('aPollingLoop', true));
    } finally {
      child.kill();
    }
  });
});
