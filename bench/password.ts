/**
 * `npm run bench:password`: what the console's password check costs (issue 34, item 9). Not a test.
 *
 * The check (src/console/password-policy.ts) runs zxcvbn-ts on the event loop before an invite
 * link sets a password; the scrypt hash that follows runs on the thread pool. zxcvbn's work grows
 * with the length, so only the first 32 characters are judged. Measured in one process, rounds
 * interleaved: the check on 1024-character passwords built to be slow for zxcvbn (l33t symbols,
 * digits, repeated and concatenated dictionary words, random, astral characters), against the
 * scrypt hash of the same password (the baseline: what every accepted password costs anyway), and
 * a random 1024-character password against its own first 32 characters (what the bound buys).
 * Also the first check of the process, which builds the dictionaries (no baseline).
 *
 * Environment: BENCH_ROUNDS (9).
 */
import { randomBytes, randomInt } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkPassword } from '../src/console/password-policy.js';
import { hashPassword } from '../src/console/passwords.js';
import { writeSection } from './lib/doc-section.js';
import { envInt, figure, finish, loadNote, median, resultHeader, runBench, type BenchResult, type Figure } from './lib/report.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const LENGTH = 1024;
/** At its worst input the check may cost about what the hash that follows every accepted password costs. */
const TARGET_RATIO = 1.5;
/** Past 32 characters, length must cost (almost) nothing. */
const BOUND_RATIO = 1.5;
const settings = { rounds: envInt('BENCH_ROUNDS', 9, 1), length: LENGTH };
const context = { email: 'someone@example.test', teamName: 'Acme Studio' };

const fill = (unit: string, n = LENGTH) => {
  const points = [...unit];
  return Array.from({ length: n }, (_, i) => points[i % points.length]).join('');
};
const randomText = (n: number) => [...randomBytes(n).toString('base64')].slice(0, n).join('');

async function inputs(random: string): Promise<Record<string, string>> {
  const common = (await import('@zxcvbn-ts/language-common')).dictionary['passwords-common'];
  return {
    'l33t symbols': fill('4@3!1|0$5+7'),
    digits: fill('1234567890'),
    'a dated pattern': fill('19871231'),
    'l33t password repeated': fill('Pa$$w0rd'),
    'common passwords run together': fill(common.slice(0, 200).join('')),
    random,
    'astral characters': Array.from({ length: LENGTH }, () => String.fromCodePoint(0x1f300 + randomInt(0x2ff))).join(''),
  };
}

/**
 * CPU milliseconds a call takes (all of the process's threads: the scrypt hash runs on the thread
 * pool). Calls run one at a time, so nothing else is counted; CPU time, unlike the wall clock,
 * does not grow with other processes' load on the machine. The check holds the event loop for
 * all of its time.
 */
async function timed(call: () => Promise<unknown>): Promise<number> {
  const before = process.cpuUsage();
  await call();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

async function main(): Promise<void> {
  const loadBefore = loadNote();
  const random = randomText(LENGTH);
  const cases = await inputs(random);
  // The random password's own first 32 characters: what is judged of it.
  const short = random.slice(0, 32);
  const firstMs = await timed(() => checkPassword(randomText(LENGTH), context));
  const samples: Record<string, { check: number[]; hash: number[] }> = {};
  for (const name of [...Object.keys(cases), 'its first 32 characters']) samples[name] = { check: [], hash: [] };
  for (let round = 0; round < settings.rounds; round++) {
    for (const [name, password] of Object.entries(cases)) {
      samples[name]!.check.push(await timed(() => checkPassword(password, context)));
      samples[name]!.hash.push(await timed(() => hashPassword(password)));
    }
    samples['its first 32 characters']!.check.push(await timed(() => checkPassword(short, context)));
  }
  const loadAfter = loadNote();
  const med = (name: string, k: 'check' | 'hash') => median(samples[name]![k]);
  const figures: Figure[] = [
    ...Object.keys(cases).map((name) =>
      figure({
        name: `check_${name.replace(/\W+/g, '_')}`,
        figure: `check of a ${LENGTH}-character password: ${name} (median)`,
        unit: 'CPU ms',
        value: med(name, 'check'),
        baseline: { label: 'scrypt hash of it', value: med(name, 'hash') },
        target: { on: 'ratio', op: '<=', limit: TARGET_RATIO },
        roundRatios: samples[name]!.check.map((c, i) => c / (samples[name]!.hash[i] ?? Number.NaN)),
        note: `worst round ${Math.max(...samples[name]!.check).toFixed(0)} CPU ms`,
      }),
    ),
    figure({
      name: 'length_bound',
      figure: `check of a random ${LENGTH}-character password (median)`,
      unit: 'CPU ms',
      value: med('random', 'check'),
      baseline: { label: 'its first 32 characters alone', value: med('its first 32 characters', 'check') },
      target: { on: 'ratio', op: '<=', limit: BOUND_RATIO },
    }),
    figure({ name: 'first_check', figure: 'first check of the process (loads and builds the dictionaries)', unit: 'CPU ms', value: firstMs }),
  ];
  const result: BenchResult = {
    ...resultHeader('password', `password check: zxcvbn-ts on ${LENGTH}-character passwords vs their scrypt hash`,
      { before: loadBefore, after: loadAfter }, { server: 'none (in-process)', version: null }, settings),
    figures,
    charts: [],
    notes: [
      'In one process, rounds interleaved, one call at a time, CPU time of all threads (the wall clock of a loaded machine would count other processes). The check runs on the event loop; the scrypt hash (N = 2^15, r = 8, p = 1) on the thread pool, and follows every accepted password.',
      'Only the first 32 characters (separators removed) are judged; the length rule (12 to 1024) and the email check see the whole password.',
    ],
    details: samples,
  };
  writeSection(path.join(ROOT, 'docs', 'benchmarks.md'), 'password', 'password check: zxcvbn-ts vs scrypt (issue 34)', result, 'bench/password.ts');
  finish(result);
}

runBench('password', main);
