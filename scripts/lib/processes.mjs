// Server processes of a stack: spawned in their own process group, stopped
// when the parent exits, and recognised again by pid (for stale ones).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const liveChildren = new Set();
let exitHandlersInstalled = false;

function killAllNow(signal = 'SIGTERM') {
  for (const child of liveChildren) child.kill(signal);
}

function installExitHandlers() {
  if (exitHandlersInstalled) return;
  exitHandlersInstalled = true;
  // Last resort: whatever way the parent exits, the servers go too.
  process.on('exit', () => killAllNow('SIGTERM'));
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      // A script with its own handler (start.mjs, test.mjs) shuts down in its
      // own order and calls stop(); only act when nobody else listens.
      if (process.listenerCount(signal) > 1) return;
      killAllNow('SIGTERM');
      process.exit(128 + (os.constants.signals[signal] ?? 1));
    });
  }
}

function processAlive(pid) {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if (error.code !== 'EPERM') return false;
  }
  // An exited child whose new parent has not reaped it yet is a zombie.
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return true;
  }
}

function cmdline(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return null;
  }
}

/**
 * Is `pid` still the process that was recorded (and not a recycled pid)?
 * `arg`, when given, must also appear in its command line.
 */
export function sameProcess(pid, bin, arg) {
  if (!Number.isInteger(pid) || pid <= 0 || !processAlive(pid)) return false;
  const argv = cmdline(pid);
  if (argv === null) return !fs.existsSync('/proc'); // no /proc: trust the pid
  if (argv.length === 0) return false;
  // redis-server rewrites its title ("/usr/bin/redis-server 127.0.0.1:6379").
  const argv0 = argv[0].split(' ')[0];
  if (argv0 !== bin && path.basename(argv0) !== path.basename(bin)) return false;
  if (!arg) return true;
  let cwd = null;
  try {
    cwd = fs.readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    // unknown: compare as given
  }
  const wanted = path.isAbsolute(arg) ? arg : null;
  return argv.slice(1).some((a) => a.includes(arg) || (wanted !== null && cwd !== null && path.resolve(cwd, a) === wanted));
}

/** Resolves true once `pid` has exited, false if it still runs after `ms`. */
export async function waitForExit(pid, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!processAlive(pid)) return true;
    await sleep(50);
  }
  return !processAlive(pid);
}

/**
 * Spawns a server process whose output goes to `logFile`. It is put in its
 * own process group (a terminal's Ctrl-C reaches only the parent, which stops
 * the servers in order) and killed when the parent exits.
 */
export function spawnServer(bin, args, { logFile, cwd, env = process.env }) {
  installExitHandlers();
  const fd = fs.openSync(logFile, 'a');
  fs.writeSync(fd, `\n--- ${new Date().toISOString()} ${bin} ${args.join(' ')}\n`);
  let child;
  try {
    child = spawn(bin, args, { cwd, env, stdio: ['ignore', fd, fd], detached: true });
  } finally {
    fs.closeSync(fd);
  }
  liveChildren.add(child);
  const exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      liveChildren.delete(child);
      resolve({ code, signal });
    });
    child.on('error', (error) => {
      liveChildren.delete(child);
      resolve({ code: null, signal: null, error });
    });
  });
  let exitInfo = null;
  exited.then((info) => (exitInfo = info));

  async function stop(timeoutMs = 10_000) {
    if (exitInfo !== null) return exitInfo;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const info = await exited;
    clearTimeout(timer);
    return info;
  }

  return { child, exited, stop, get exitInfo() { return exitInfo; } };
}
