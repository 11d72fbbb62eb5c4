// Every logger a test makes also writes, at debug level, to a file under TEST_LOG_DIR (one file per
// process), so `npm test` can scan the logs of the whole suite for credentials (log-scan.ts).
// Without TEST_LOG_DIR (a test file run on its own) loggers are exactly what they asked for.
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import pino, { type DestinationStream, type Level, type Logger, type StreamEntry } from 'pino';
import { createLogger } from '../../src/logger.js';

/** Debug: everything an operator could turn on short of trace, so more code paths are scanned. */
const CAPTURE_LEVEL: Level = 'debug';

// One file per process, opened on first use: a process-wide resource by nature, and every logger
// of the process shares its descriptor instead of leaking one per test app.
let processFile: DestinationStream | null = null;

function captureFile(): DestinationStream | null {
  const dir = process.env.TEST_LOG_DIR;
  if (!dir) return null;
  if (!processFile) {
    const name = `${path.basename(process.argv[1] ?? 'node')}-${process.pid}.log`.replace(/[^A-Za-z0-9._-]/g, '_');
    processFile = pino.destination({ dest: path.join(dir, name), sync: true, append: true, mkdir: true });
  }
  return processFile;
}

function levelValue(level: string): number {
  return pino.levels.values[level] ?? Number.POSITIVE_INFINITY;
}

/**
 * createLogger(level, destination) for tests: the destination (stdout when none) gets what level
 * allows, exactly as before; the capture file gets debug and up ('silent' loggers included).
 */
export function testLogger(level: string, destination?: DestinationStream): Logger {
  const file = captureFile();
  if (!file) return createLogger(level, destination);
  const streams: StreamEntry[] = [{ level: CAPTURE_LEVEL, stream: file }];
  if (level !== 'silent') streams.push({ level: level as Level, stream: destination ?? pino.destination(1) });
  const lowest = levelValue(level) < levelValue(CAPTURE_LEVEL) ? level : CAPTURE_LEVEL;
  return createLogger(lowest, pino.multistream(streams));
}

/** True for a pino JSON line: an object with a numeric level and a time. */
function isLogLine(line: string): boolean {
  if (!line.startsWith('{')) return false;
  try {
    const v = JSON.parse(line) as { level?: unknown; time?: unknown };
    return typeof v.level === 'number' && v.time !== undefined;
  } catch {
    return false;
  }
}

/**
 * Copies the JSON log lines a child process (toolrun serve, worker, admin ...) writes on stdout
 * and stderr to its own file under TEST_LOG_DIR. Other output (a command's JSON result, the demo
 * key banner `serve` prints once on purpose) is the command's answer, not a log, and is skipped.
 */
export function captureChildLogs(label: string, pid: number | undefined, streams: (Readable | null | undefined)[]): void {
  const dir = process.env.TEST_LOG_DIR;
  if (!dir || !pid) return;
  const file = path.join(dir, `${label.replace(/[^A-Za-z0-9._-]/g, '_')}-${pid}.log`);
  for (const stream of streams) {
    if (!stream) continue;
    let partial = '';
    const flush = (text: string) => {
      const lines = text.split('\n').filter(isLogLine);
      if (lines.length) fs.appendFileSync(file, `${lines.join('\n')}\n`);
    };
    stream.on('data', (chunk: Buffer | string) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      flush(lines.join('\n'));
    });
    stream.on('end', () => flush(partial));
  }
}
