/**
 * Where the machine's CPU went during a chaos run, read from /proc (Linux): the
 * seconds used by each kind of process of the run (apis, workers, FerretDB, Redis,
 * the tool itself) and by everything else on the machine. On a shared machine, a
 * run is only as meaningful as the CPU it got; this puts the figure in the report.
 */
import fs from 'node:fs';
import os from 'node:os';

const TICK_S = 1 / 100; // USER_HZ: 100 on Linux

function processTicks(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]); // utime + stime
  } catch {
    return null;
  }
}

/** Busy and total ticks of the whole machine (all cores). */
function machineTicks(): { busy: number; total: number } | null {
  try {
    const cpu = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
    const total = cpu.reduce((a, b) => a + b, 0);
    const idle = (cpu[3] ?? 0) + (cpu[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return null;
  }
}

export interface CpuFigures {
  /** CPU seconds by kind of process. */
  byKind: Record<string, number>;
  /** CPU seconds used by every other process on the machine meanwhile. */
  others: number;
  /** Wall seconds, and the machine's capacity in CPU seconds over them. */
  wallS: number;
  capacity: number;
  /** 1-minute load average at the start and at the end. */
  load: [number, number];
}

/** Samples every second; a process's last sample before it dies is what it is credited with. */
export class CpuAccount {
  private readonly last = new Map<number, { kind: string; ticks: number }>();
  private readonly byKind = new Map<string, number>();
  private readonly startMachine = machineTicks();
  private readonly startMs = Date.now();
  private readonly startLoad = os.loadavg()[0] ?? 0;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly processes: () => Array<{ pid: number; kind: string }>) {
    // What the processes running now used before the run is not the run's.
    for (const { pid, kind } of processes()) {
      const ticks = processTicks(pid);
      if (ticks !== null) this.last.set(pid, { kind, ticks });
    }
    this.timer = setInterval(() => this.sample(), 1000);
    this.timer.unref();
  }

  private sample(): void {
    for (const { pid, kind } of this.processes()) {
      const ticks = processTicks(pid);
      if (ticks === null) continue;
      const before = this.last.get(pid);
      // A process first seen mid-run (a restart) is credited from its start.
      const delta = ticks - (before?.ticks ?? 0);
      this.byKind.set(kind, (this.byKind.get(kind) ?? 0) + delta);
      this.last.set(pid, { kind, ticks });
    }
  }

  finish(): CpuFigures {
    this.sample();
    clearInterval(this.timer);
    const end = machineTicks();
    const byKind = Object.fromEntries([...this.byKind].map(([kind, ticks]) => [kind, Math.round(ticks * TICK_S * 10) / 10]));
    const ours = Object.values(byKind).reduce((a, b) => a + b, 0);
    const busy = end && this.startMachine ? (end.busy - this.startMachine.busy) * TICK_S : 0;
    const wallS = (Date.now() - this.startMs) / 1000;
    return {
      byKind,
      others: Math.max(0, Math.round((busy - ours) * 10) / 10),
      wallS: Math.round(wallS),
      capacity: Math.round(wallS * os.cpus().length),
      load: [Math.round(this.startLoad * 10) / 10, Math.round((os.loadavg()[0] ?? 0) * 10) / 10],
    };
  }
}
