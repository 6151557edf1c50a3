import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';

/** `npm start` as a child process: its URL, DynamoDB Local's pid, and its output so far. */
export interface LocalProcess {
  child: ChildProcess;
  url: string;
  dynamoPid: number;
  output: () => string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `node bin/local.ts` with the given flags and environment, and waits until it serves. */
export async function startLocalProcess(args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<LocalProcess> {
  const child = spawn(process.execPath, ['bin/local.ts', ...args], {
    env: { ...process.env, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const started = await new Promise<{ url: string; dynamoPid: number }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`local runtime did not start in time:\n${output}`)), timeoutMs);
    const check = () => {
      const url = /API\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1];
      const pid = /DynamoDB Local\s+\S+\s+pid (\d+)/.exec(output)?.[1];
      if (url && pid) {
        clearTimeout(timer);
        resolve({ url, dynamoPid: Number(pid) });
      }
    };
    child.stdout.on('data', check);
    void exited.then((code) => reject(new Error(`local runtime exited with ${code}:\n${output}`)));
  });
  return {
    child,
    ...started,
    output: () => output,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Whether a process with this pid is alive. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Command lines of live processes that mention `needle`. */
export function processesMatching(needle: string): string[] {
  return execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(needle) && !line.includes('ps -eo'));
}
