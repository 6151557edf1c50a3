#!/usr/bin/env node
// npm run ops -- …: the ops CLI (brief §3, §7). It assembles; functions/ops/cli.ts decides.
import { defaultCredentialChain } from '../functions/platform/credentials.ts';
import { runCli } from '../functions/ops/cli.ts';

process.exitCode = await runCli(
  process.argv.slice(2),
  { stdout: process.stdout, stderr: process.stderr },
  { env: process.env, credentials: defaultCredentialChain(), now: () => new Date() },
);
