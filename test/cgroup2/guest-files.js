// The cgroup v2 lane's window on its guest's kernel files (run in the guest by start.sh, reached
// over a QEMU port forward): GET /read?path=P answers the file's text (P under /sys/fs/cgroup,
// /proc or /root), GET /pids?comm=NAME the PIDs whose /proc/<pid>/comm is NAME, POST /poweroff
// ends the guest. Read-only otherwise; the guest is a throwaway VM reached from the host only.
'use strict';
const fs = require('node:fs');
const http = require('node:http');
const { spawn } = require('node:child_process');

const allowed = ['/sys/fs/cgroup/', '/proc/', '/root/'];
http
  .createServer((req, res) => {
    const url = new URL(req.url, 'http://guest');
    const send = (code, body) => {
      res.writeHead(code, { 'content-type': 'text/plain' });
      res.end(body);
    };
    try {
      if (url.pathname === '/read') {
        const p = url.searchParams.get('path') || '';
        if (!allowed.some((a) => p.startsWith(a)) || p.includes('..')) return send(403, `not readable here: ${p}`);
        return send(200, fs.readFileSync(p));
      }
      if (url.pathname === '/pids') {
        const comm = url.searchParams.get('comm');
        const pids = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((d) => {
          try {
            return fs.readFileSync(`/proc/${d}/comm`, 'utf8').trim() === comm;
          } catch {
            return false; // gone meanwhile
          }
        });
        return send(200, JSON.stringify(pids.map(Number)));
      }
      if (url.pathname === '/poweroff' && req.method === 'POST') {
        send(200, 'powering off');
        spawn('systemctl', ['--no-block', 'poweroff'], { stdio: 'ignore', detached: true }).unref();
        return undefined;
      }
      return send(404, 'no such request');
    } catch (err) {
      return send(404, String(err.message));
    }
  })
  .listen(Number(process.argv[2]), '0.0.0.0', () => console.log(`=== LANE files on ${process.argv[2]}`));
