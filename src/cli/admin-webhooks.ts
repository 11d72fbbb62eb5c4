import { Command } from 'commander';
import { listAttempts, redeliverEvent } from '../webhooks/admin.js';
import { uuid, type WithDb } from './options.js';

export function webhooksAdminCommand(withDb: WithDb): Command {
  const webhooks = new Command('webhooks').description('webhook deliveries');
  webhooks
    .command('attempts')
    .description('every attempt made to an endpoint')
    .requiredOption('--endpoint <id>', 'webhook endpoint id', uuid('--endpoint'))
    .action((o: { endpoint: string }) => withDb(async (db) => ({ object: 'list', data: await listAttempts(db.pool, o.endpoint) })));
  webhooks
    .command('redeliver')
    .description('send a given-up delivery of an event again')
    .requiredOption('--event <id>', 'event id', uuid('--event'))
    .action((o: { event: string }) => withDb(async (db) => redeliverEvent(db.pool, o.event)));
  return webhooks;
}
