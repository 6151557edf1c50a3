import { runCli } from '../../functions/cli/cli.ts';

/** Runs one CLI command line in-process against a local runtime at `url` (no AWS credentials: none are needed there). */
export async function runCliAt(url: string, argv: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(
    ['--api', url, ...argv],
    { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) } },
    { env: {}, credentials: () => Promise.reject(new Error('the local runtime needs no credentials')), now: () => new Date() },
  );
  return { code, stdout, stderr };
}
