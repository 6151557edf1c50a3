#!/usr/bin/env node
// npm run ops -- …: the ops CLI. It assembles; functions/cli/cli.ts decides.
import { defaultCredentialChain } from '../functions/platform/credentials.ts';
import { runCli } from '../functions/cli/cli.ts';

process.exitCode = await runCli(
  process.argv.slice(2),
  { stdout: process.stdout, stderr: process.stderr },
  { env: process.env, credentials: defaultCredentialChain(), now: () => new Date() },
);
