import { Command, InvalidArgumentError } from 'commander';
import { listAttempts, redeliverEvent } from '../webhooks/admin.js';
import type { WithDb } from './admin.js';

const uuid = (name: string) => (raw: string) => {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(raw)) {
    throw new InvalidArgumentError(`${name} must be an id (a UUID), got "${raw}"`);
  }
  return raw.toLowerCase();
};

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
