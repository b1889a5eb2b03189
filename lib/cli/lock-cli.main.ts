#!/usr/bin/env node
// The `nestjs-db-locks` command (package.json "bin"): `npx nestjs-db-locks --help`.
import 'reflect-metadata';
import { runCli } from './lock-cli.program.js';

process.exitCode = await runCli(process.argv.slice(2));
