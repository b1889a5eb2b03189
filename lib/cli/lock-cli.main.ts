#!/usr/bin/env node
// The `nestjs-db-locks` command (package.json "bin"): `npx nestjs-db-locks --help`.
import 'reflect-metadata';
import { EXIT } from './lock-cli.errors.js';
import { watchClosedPipes } from './lock-cli.pipes.js';
import { runCli } from './lock-cli.program.js';

// `status | head`: a reader that went away ends the command quietly (exit code 141), never with a stack trace.
const pipes = watchClosedPipes();
const exitCode = await runCli(process.argv.slice(2));
process.exitCode = pipes.closed ? EXIT.closedPipe : exitCode;
