// toolrun-cli: the Tool-Run API from a terminal. See `toolrun-cli --help`.
import { Command, CommanderError, Option } from 'commander';
import { Toolrun, ToolrunError } from '@toolrun/sdk';
import { cancelCommand, downloadCommand, estimateCommand, EXIT, getCommand, listCommand, meCommand, runCommand, toolsCommand, type ListArgs, type ToolInputArgs } from './commands.ts';
import { DownloadWatch } from './download.ts';
import { UsageError } from './inputs.ts';
import { listenCommand, type ListenArgs } from './listen.ts';
import { Ui } from './ui.ts';

interface GlobalOptions {
  apiKey?: string;
  baseUrl?: string;
  json?: boolean;
}

const collect = (value: string, previous: string[]) => [...previous, value];

/** Tests only: poll faster than every 2 s (the SDK refuses shorter intervals otherwise). */
function testPollInterval(): number | undefined {
  const raw = process.env.TOOLRUN_CLI_TEST_POLL_MS;
  if (!raw) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 10) throw new UsageError('TOOLRUN_CLI_TEST_POLL_MS takes a whole number of milliseconds, at least 10');
  return n;
}

/** The client; with a watch, one whose output downloads it can count (download.ts). */
function clientFor(opts: GlobalOptions, watch?: DownloadWatch): Toolrun {
  const apiKey = opts.apiKey ?? process.env.TOOLRUN_API_KEY;
  if (!apiKey) throw new UsageError('No API key: set TOOLRUN_API_KEY or pass --api-key');
  const poll = testPollInterval();
  const client = new Toolrun({
    apiKey,
    ...(opts.baseUrl ?? process.env.TOOLRUN_BASE_URL ? { baseUrl: opts.baseUrl ?? process.env.TOOLRUN_BASE_URL } : {}),
    ...(poll !== undefined ? { testing: { minPollIntervalMs: poll } } : {}),
    ...(watch ? { fetch: watch.fetch } : {}),
  });
  return watch ? watch.attach(client) : client;
}

function toolInputOptions(cmd: Command): Command {
  return cmd
    .option('-i, --input <name=value>', 'an input value; JSON when it parses (2, true, ["a"]), else text; repeat for more', collect, [])
    .option('-f, --file <slot=path>', 'a file for a media slot, uploaded first; repeat the slot for a list', collect, [])
    .option('--duration <seconds>', 'length hint for metered video tools');
}

export function buildProgram(run: (action: (ui: Ui, opts: GlobalOptions) => Promise<number>) => Promise<void>): Command {
  const program = new Command('toolrun-cli')
    .description('Upload, estimate, run and download with the Tool-Run API.\nReads TOOLRUN_API_KEY and TOOLRUN_BASE_URL (default http://127.0.0.1:8080).')
    .addOption(new Option('--api-key <key>', 'API key (default: $TOOLRUN_API_KEY)'))
    .addOption(new Option('--base-url <url>', 'service address (default: $TOOLRUN_BASE_URL)'))
    .option('--json', 'print one JSON document on stdout (no bars), for scripts')
    .addHelpText(
      'after',
      `\nExit codes: 0 ok, 2 API error, 3 run failed, 4 run canceled, 64 usage error, 130 interrupted (run left running), 1 anything else.
Ctrl-C while a run is followed: at a terminal, asks whether to cancel it; otherwise a second Ctrl-C cancels it.`,
    )
    .showHelpAfterError()
    .exitOverride();

  program.command('tools').description('list the tools this key can run, with each input: its choices or range, and its default').action(() => run((ui, g) => toolsCommand(clientFor(g), ui)));
  program.command('me').description('the team, the key and the Sparks available').action(() => run((ui, g) => meCommand(clientFor(g), ui)));

  toolInputOptions(program.command('estimate').argument('<tool>', 'tool id, e.g. image_upscale').description('price the exact inputs (uploads the files, starts nothing)')).action(
    (tool: string, opts: ToolInputArgs) => run((ui, g) => estimateCommand(clientFor(g), ui, tool, opts)),
  );

  toolInputOptions(program.command('run').argument('<tool>', 'tool id').description('upload, estimate, start, follow and download the outputs'))
    .option('-o, --out <dir>', 'where outputs are saved', '.')
    .option('--idempotency-key <key>', 'sent with the start; repeating it returns the run already started')
    .option('--cancel-after <duration>', 'the service cancels the run if it is not finished this long after its start (90, 10m, 1h30m; at most 24h)')
    .option('--no-wait', 'start the run and print it, without following it')
    .action((tool: string, opts: ToolInputArgs & { out: string; idempotencyKey?: string; cancelAfter?: string; wait: boolean }) =>
      run((ui, g) => {
        const poll = testPollInterval();
        const watch = new DownloadWatch();
        return runCommand(clientFor(g, watch), watch, ui, tool, { ...opts, ...(poll !== undefined ? { pollIntervalMs: poll } : {}) });
      }),
    );

  program
    .command('runs')
    .description("list the team's API runs, newest first")
    .option('--limit <n>', 'runs per page, 1 to 100 (default 20)')
    .option('--status <status>', 'only runs in this state: queued, running, succeeded, failed or canceled')
    .option('--tool <tool>', 'only runs of this tool')
    .option('--after <run_id>', 'the page after this run (the id printed at the end of the previous page)')
    .action((opts: ListArgs) => run((ui, g) => listCommand(clientFor(g), ui, opts)));
  program.command('get').argument('<run_id>').description('show a run').action((id: string) => run((ui, g) => getCommand(clientFor(g), ui, id)));
  program.command('cancel').argument('<run_id>').description('cancel a queued or running run').action((id: string) => run((ui, g) => cancelCommand(clientFor(g), ui, id)));
  program
    .command('download')
    .argument('<run_id>')
    .option('-o, --out <dir>', 'where outputs are saved', '.')
    .description("download a succeeded run's outputs")
    .action((id: string, opts: { out: string }) =>
      run((ui, g) => {
        const watch = new DownloadWatch();
        return downloadCommand(clientFor(g, watch), watch, ui, id, opts.out);
      }),
    );
  program
    .command('listen')
    .description("forward the team's events to a local URL, signed like webhooks with a secret printed at the start (needs the webhooks scope)")
    .requiredOption('--forward-to <url>', 'where each event is POSTed, e.g. http://localhost:3000/hooks')
    .option('--events <types>', 'only these event types, comma-separated (e.g. run.succeeded,run.failed)')
    .action((opts: ListenArgs) => run((ui, g) => listenCommand(clientFor(g), ui, opts)));
  return program;
}

/** Runs the command line; resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  let code: number = EXIT.ok;
  const program = buildProgram(async (action) => {
    const g = program.opts<GlobalOptions>();
    const ui = new Ui(Boolean(g.json));
    try {
      code = await action(ui, g);
    } catch (err) {
      ui.error(err);
      code = err instanceof UsageError ? EXIT.usage : err instanceof ToolrunError ? EXIT.api : EXIT.failure;
    }
  });
  program.configureOutput({ outputError: (text, write) => write(text) });
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version are fine; help shown because no command was given is a usage error.
      if (err.exitCode === 0) return EXIT.ok;
      return EXIT.usage;
    }
    throw err;
  }
  return code;
}
