'use strict';
// powerfs.js — mounts powerfs (powerfs.c) for a test and drives its power cuts.  See README.md.
//
//   const disk = await powerfs.mount(dir)   // mounts on dir; POWERFS_BIN names the binary
//   disk.cut()            every unsynced page is lost
//   disk.cut(seed)        a random subset (fixed by seed) of them is kept, the rest lost
//   disk.stats()          {cuts, syncs, pages_synced, pages_dropped, pages_kept, bytes_written}
//   await disk.unmount()  fusermount3 -u, then the process is waited for (killed by PID if need be)
//
// A watchdog unmounts and kills the file system if this process dies first or after
// MAX_LIFE_S, so no test leaves a mount behind.

const fs = require('fs');
const path = require('path');
const { spawn, execFileSync } = require('child_process');

const CONTROL = '.powerfs';
const MAX_LIFE_S = 3600;

function binary() {
  const bin = process.env.POWERFS_BIN;
  if (!bin || !fs.existsSync(bin)) {
    throw new Error(`POWERFS_BIN must point to the powerfs binary (got '${bin || ''}'; ` +
      'built as tests/powercut/powerfs by the test build)');
  }
  return bin;
}

function startWatchdog(pid, dir) {
  const script = `end=$(( $(date +%s) + ${MAX_LIFE_S} ));
    while kill -0 ${pid} 2>/dev/null && kill -0 ${process.pid} 2>/dev/null && [ $(date +%s) -lt $end ];
    do sleep 0.5; done; fusermount3 -u -z '${dir}' 2>/dev/null; kill -9 ${pid} 2>/dev/null`;
  const w = spawn('bash', ['-c', script], { stdio: 'ignore' });
  w.unref();
  return w;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function isMounted(dir) {
  const want = path.resolve(dir);
  return fs.readFileSync('/proc/mounts', 'utf8').split('\n')
    .some((l) => l.split(' ')[1] === want && /^powerfs /.test(l));
}

async function mount(dir) {
  fs.mkdirSync(dir, { recursive: true });
  let log = '';
  const proc = spawn(binary(), [dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (c) => { log += c; });
  let exited = null;
  const exitPromise = new Promise((resolve) => {
    proc.on('exit', (code, signal) => { exited = { code, signal }; resolve(exited); });
  });
  const watchdog = startWatchdog(proc.pid, dir);
  const control = path.join(dir, CONTROL);
  for (let i = 0; i < 200 && !exited && !(isMounted(dir) && fs.existsSync(control)); i++) await sleep(25);
  if (exited || !isMounted(dir)) {
    try { process.kill(proc.pid, 'SIGKILL'); } catch (e) { /* gone */ }
    throw new Error(`powerfs did not mount on ${dir} (is /dev/fuse usable here?): ${log}`);
  }

  return {
    dir, pid: proc.pid, log: () => log,
    cut(seed) {
      fs.writeFileSync(control, seed ? `cut-some ${seed}` : 'cut');
    },
    stats() {
      const out = {};
      for (const line of fs.readFileSync(control, 'utf8').split('\n')) {
        const [k, v] = line.split(' ');
        if (k) out[k] = Number(v);
      }
      return out;
    },
    async unmount() {
      if (!exited) {
        try { execFileSync('fusermount3', ['-u', dir], { stdio: 'ignore' }); } catch (e) { /* busy: below */ }
        const t = setTimeout(() => {
          try { execFileSync('fusermount3', ['-u', '-z', dir], { stdio: 'ignore' }); } catch (e) { /* gone */ }
          try { process.kill(proc.pid, 'SIGKILL'); } catch (e) { /* gone */ }
        }, 5000);
        await exitPromise;
        clearTimeout(t);
      }
      try { watchdog.kill(); } catch (e) { /* gone */ }
      return exited;
    },
    // For exit handlers, which cannot wait: detach the mount and kill by PID.
    unmountNow() {
      if (exited) return;
      try { execFileSync('fusermount3', ['-u', '-z', dir], { stdio: 'ignore' }); } catch (e) { /* gone */ }
      try { process.kill(proc.pid, 'SIGKILL'); } catch (e) { /* gone */ }
    }
  };
}

module.exports = { mount };
