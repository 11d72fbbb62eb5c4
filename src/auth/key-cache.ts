import { TeamCache, type Cached } from '../core/team-cache.js';
import type { KeyContext } from './repository.js';

/** Channel on which PostgreSQL names a team whose keys' contexts changed (migrations 0009, 0024). */
export const AUTH_CHANNEL = 'toolrun_auth';

export type CachedKey = Cached<KeyContext>;

/**
 * Contexts of keys that authenticated lately (team, plan, member, role, scopes, rate), by the hex
 * of the key's hash, so that a known key costs no SQL; dropped when toolrun_auth names their team
 * (PostgreSQL sends one for every change but the balance's, see migrations 0009 and 0024).
 */
export class KeyCache extends TeamCache<KeyContext> {}
