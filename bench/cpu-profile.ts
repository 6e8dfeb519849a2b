/**
 * Which process spent the CPU during a timed scenario: the api, the workers,
 * FerretDB, Redis, and the bench itself (autocannon runs in its process). Read from
 * /proc (Linux) with the chaos run's account (bench/chaos/cpu.ts). The store and
 * Redis are found by the ports in their URLs: the bench does not start them itself.
 */
import fs from 'node:fs';
import { CpuAccount, type CpuFigures } from './chaos/cpu.js';

/** The pid of a process whose command line holds every one of `parts`, or null. */
function findProcess(parts: string[]): number | null {
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      if (parts.every((part) => cmdline.includes(part))) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return null;
}

function portOf(url: string): string | null {
  try {
    return new URL(url).port || null;
  } catch {
    return null;
  }
}

/** The store's and Redis's processes on this machine, when they are local. */
export function serverPids(mongoUrl: string, redisUrl: string): Array<{ pid: number; kind: string }> {
  const found: Array<{ pid: number; kind: string }> = [];
  const mongoPort = portOf(mongoUrl);
  const redisPort = portOf(redisUrl);
  const ferret = mongoPort ? findProcess(['ferretdb', `:${mongoPort}`]) : null;
  if (ferret) found.push({ pid: ferret, kind: 'ferretdb' });
  const redis = redisPort ? findProcess(['redis-server', redisPort]) : null;
  if (redis) found.push({ pid: redis, kind: 'redis' });
  return found;
}

/** Starts counting; `stop()` gives the CPU seconds of each kind over the scenario. */
export function profileCpu(processes: Array<{ pid: number; kind: string }>): { stop(): CpuFigures } {
  const account = new CpuAccount(() => [...processes, { pid: process.pid, kind: 'bench (autocannon)' }]);
  return { stop: () => account.finish() };
}

/** "ferretdb 14.2 s, worker 6.1 s, …" over "20 s of 2 cores": the busiest first. */
export function describeCpu(figures: CpuFigures): string {
  const kinds = Object.entries(figures.byKind).sort((a, b) => b[1] - a[1]);
  return `${kinds.map(([kind, s]) => `${kind} ${s} s`).join(', ')}, other processes ${figures.others} s; capacity ${figures.capacity} CPU s over ${figures.wallS} s`;
}
