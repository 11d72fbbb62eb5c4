// The render's memory cgroup (src/tools/brand-kit/render/cgroup.ts, issue 34 item 3): where the
// service's cgroups are found, from /proc texts of the three layouts it meets (cgroup v2 alone,
// the hybrid of v1 and v2, a container's v1 mounts); and, where this process may make one, a real
// cgroup: its limit, a process over it killed by the kernel and counted, every process in it
// killed, the group removed, and a group left by a service process that is gone removed.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { cgroupDirs, MemoryCgroup } from '../src/tools/brand-kit/render/cgroup.js';
import { waitFor } from './helpers/worker.js';

const MB = 1024 * 1024;

describe('where the service cgroups are', () => {
  test('cgroup v2 alone (systemd): the service unit under /sys/fs/cgroup', () => {
    const mountinfo = '25 30 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot';
    assert.deepEqual(cgroupDirs('0::/system.slice/toolrun.service\n', mountinfo), [{ version: 2, dir: '/sys/fs/cgroup/system.slice/toolrun.service' }]);
  });

  test('the hybrid of v1 and v2 (this machine): both, v2 first; the memory controller is in the v1 hierarchy', () => {
    const cgroup = ['9:name=systemd:/', '4:memory:/process_api/86afadee', '1:cpu:/', '0::/'].join('\n');
    const mountinfo = [
      '35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
      '32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu',
      '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
    ].join('\n');
    assert.deepEqual(cgroupDirs(cgroup, mountinfo), [
      { version: 2, dir: '/sys/fs/cgroup/unified' },
      { version: 1, dir: '/sys/fs/cgroup/memory/process_api/86afadee' },
    ]);
  });

  test("a container's v1 mount whose root is its own cgroup: the path is taken from that root", () => {
    const cgroup = '5:memory,hugetlb:/docker/0123abcd\n';
    const mountinfo = '700 690 0:33 /docker/0123abcd /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory,hugetlb';
    assert.deepEqual(cgroupDirs(cgroup, mountinfo), [{ version: 1, dir: '/sys/fs/cgroup/memory' }]);
  });

  test('no memory controller mounted: none', () => {
    assert.deepEqual(cgroupDirs('3:cpu:/a\n', '32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu'), []);
  });
});

const exited = (p: ChildProcess) => new Promise<NodeJS.Signals | number | null>((resolve) => (p.exitCode !== null || p.signalCode !== null ? resolve(p.signalCode ?? p.exitCode) : p.once('exit', (code, signal) => resolve(signal ?? code))));

describe('a render cgroup on this machine', () => {
  test('its limit holds: a process past it is killed by the kernel and counted; killAll and remove leave nothing', async (t) => {
    const group = MemoryCgroup.create(96 * MB);
    if (!group) return t.skip('this process may not make a memory cgroup here: the watchdog is the bound (tools-brand-kit-render-bounds.test.ts)');
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
    const hog = spawn(process.execPath, ['-e', 'const a = []; for (let i = 0; i < 40; i++) a.push(Buffer.alloc(16 * 1024 * 1024, 1)); setTimeout(() => {}, 60_000);'], { stdio: 'ignore', env: {} });
    try {
      group.adopt(sleeper.pid!);
      group.adopt(hog.pid!);
      const limitFile = path.join(group.dir, group.version === 2 ? 'memory.max' : 'memory.limit_in_bytes');
      assert.ok(Math.abs(Number(fs.readFileSync(limitFile, 'utf8')) - 96 * MB) < 4096, 'the limit as asked (to the page)');
      // The hog asks for 640 MB: the kernel kills it inside the group, and the group says so.
      assert.equal(await exited(hog), 'SIGKILL');
      await waitFor('the OOM kill to be counted', async () => (group.oomKills() >= 1 ? true : undefined), 5000);
      assert.ok((group.peak() ?? 96 * MB) <= 96 * MB + 4096, `peak ${group.peak()}`);
      assert.equal(sleeper.exitCode, null, 'the small process is still running');
      await group.killAll();
      assert.equal(await exited(sleeper), 'SIGKILL');
      assert.equal(await group.remove(), true);
      assert.equal(fs.existsSync(group.dir), false);
    } finally {
      sleeper.kill('SIGKILL');
      hog.kill('SIGKILL');
      await group.remove();
    }
  });

  test('an empty render cgroup of a service process that is gone is removed by the next render; a running one is not', async (t) => {
    const probe = MemoryCgroup.create(64 * MB);
    if (!probe) return t.skip('this process may not make a memory cgroup here');
    const parent = path.dirname(probe.dir);
    await probe.remove();
    // Above any pid_max: no such process can exist.
    const stale = path.join(parent, 'toolrun-render-4194305-deadbeef');
    const live = path.join(parent, `toolrun-render-${process.pid}-0badcafe`);
    fs.mkdirSync(stale);
    fs.mkdirSync(live);
    try {
      const next = MemoryCgroup.create(64 * MB);
      await next?.remove();
      assert.equal(fs.existsSync(stale), false, 'the stale cgroup was removed');
      assert.equal(fs.existsSync(live), true, "this process's own is left alone");
    } finally {
      for (const d of [stale, live]) if (fs.existsSync(d)) fs.rmdirSync(d);
    }
  });
});
