import { ApiError, invalidRequest, type ErrorCode, type Loc } from '../core/errors.js';
import { AdminError, type AdminReason } from '../teams/repository.js';

/** The console's wording for each refusal of the shared rules (the CLI prints the operator's). */
const BY_REASON: Record<AdminReason, { code: ErrorCode; message: string } | null> = {
  invalid: null,
  not_found: null,
  conflict: null,
  team_not_found: { code: 'not_found', message: 'This team no longer exists.' },
  member_not_found: { code: 'member_not_found', message: 'No such member in this team.' },
  member_exists: { code: 'member_exists', message: 'A member of this team already has this email.' },
  last_owner: { code: 'last_owner', message: 'A team keeps at least one owner: make another member owner first.' },
  insufficient_role: { code: 'insufficient_role', message: 'Only owners and admins manage this.' },
  plan_upgrade_required: { code: 'plan_upgrade_required', message: 'API keys need the Plus, Pro or Team plan. Upgrade the team to create keys.' },
  key_limit_reached: { code: 'key_limit_reached', message: 'A team has at most 25 active API keys. Revoke one before creating another.' },
  api_key_not_found: { code: 'api_key_not_found', message: 'No such API key in this team.' },
};

const DETAILS: Partial<Record<AdminReason, Record<string, unknown>>> = {
  insufficient_role: { required_role: 'admin' },
  plan_upgrade_required: { required_plans: ['plus', 'pro', 'team'] },
  key_limit_reached: { limit: 25 },
};

/**
 * Runs a shared rule and answers its refusals as API errors. A not-found or a conflict depends
 * on the route (`codes`), and carries the rule's message; other refusals are 422 at `loc`.
 */
export async function asApiErrors<T>(fn: () => Promise<T>, codes: { not_found?: ErrorCode; conflict?: ErrorCode; loc?: Loc } = {}): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof AdminError)) throw err;
    const known = BY_REASON[err.reason];
    if (known) {
      const details = DETAILS[err.reason];
      throw new ApiError(known.code, known.message, details ? { details } : {});
    }
    const code = err.reason === 'not_found' ? codes.not_found : err.reason === 'conflict' ? codes.conflict : undefined;
    if (code) throw new ApiError(code, `${err.message.charAt(0).toUpperCase()}${err.message.slice(1)}.`);
    throw invalidRequest([{ loc: codes.loc ?? ['body'], message: err.message, code: 'invalid' }]);
  }
}
