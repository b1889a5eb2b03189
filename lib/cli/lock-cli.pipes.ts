import { EXIT } from './lock-cli.errors.js';

/** What `watchClosedPipes` saw. @internal */
export interface ClosedPipes {
  /** True once a reader closed stdout or stderr before the command wrote all it had. */
  readonly closed: boolean;
}

/**
 * Ends the command quietly when the reader of its output goes away (`nestjs-db-locks status | head -1`): a write to a
 * closed pipe fails with EPIPE, which Node emits as an 'error' event of the stream, and which without a listener ends
 * the process with a stack trace. Here the stream is left (what is written to it afterwards goes nowhere), the
 * command finishes what it was doing, and the process exits with `EXIT.closedPipe` (141, 128 + SIGPIPE: what a shell
 * reports for `git log | head`'s git). Any other error of the streams is left as it was.
 * @internal
 */
export function watchClosedPipes(streams: readonly NodeJS.WriteStream[] = [process.stdout, process.stderr]): ClosedPipes {
  const pipes = { closed: false };
  const onError = (error: NodeJS.ErrnoException): void => {
    if (error.code !== 'EPIPE') throw error;
    pipes.closed = true;
    process.exitCode = EXIT.closedPipe;
  };
  for (const stream of streams) stream.on('error', onError);
  return pipes;
}
