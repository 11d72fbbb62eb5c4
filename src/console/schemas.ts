import { Type, type Static } from 'typebox';
import { DEFAULT_RATE, RATE_CHOICES } from '../auth/key-admin.js';
import { SCOPES } from '../auth/repository.js';
import { PathUuid } from '../core/schemas.js';
import { EMAIL_PATTERN, MAX_EMAIL_LENGTH, ROLES } from '../teams/repository.js';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from './passwords.js';

const Uuid = Type.String({ format: 'uuid' });
const DateTime = Type.String({ format: 'date-time' });
const RoleSchema = Type.String({ enum: [...ROLES] });

export const SessionSchema = Type.Object(
  {
    member: Type.Object({ id: Uuid, email: Type.String(), role: RoleSchema }, { additionalProperties: false }),
    team: Type.Object({ id: Uuid, name: Type.String(), plan: Type.String() }, { additionalProperties: false }),
    csrf_token: Type.String({ description: 'Send it as the X-CSRF-Token header on every POST, PATCH and DELETE' }),
  },
  { additionalProperties: false, description: 'The signed-in member, their team and the CSRF token of the session' },
);
export type SessionView = Static<typeof SessionSchema>;

export const SignInBodySchema = Type.Object(
  {
    email: Type.String({ minLength: 1, maxLength: MAX_EMAIL_LENGTH }),
    password: Type.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH }),
  },
  { additionalProperties: false },
);

export const AcceptInviteBodySchema = Type.Object(
  {
    token: Type.String({ minLength: 1, maxLength: 200, description: 'The token from the invite link (after #token=)' }),
    password: Type.String({
      minLength: MIN_PASSWORD_LENGTH,
      maxLength: MAX_PASSWORD_LENGTH,
      description: `The new password: ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`,
    }),
  },
  { additionalProperties: false },
);

export const SignedOutSchema = Type.Object({ signed_out: Type.Literal(true) }, { additionalProperties: false, description: 'The session is over; the cookie is cleared' });

const TeamSchema = Type.Object({ id: Uuid, name: Type.String(), plan: Type.String() }, { additionalProperties: false });

export const OverviewSchema = Type.Object(
  {
    team: TeamSchema,
    sparks_available: Type.Integer(),
    runs_this_hour: Type.Integer({ description: 'Runs the team started in this clock hour (UTC), by any key' }),
    runs_per_hour: Type.Integer({ description: "The team's hourly ceiling on new runs" }),
  },
  { additionalProperties: false, description: "The team's plan, Sparks and hourly runs" },
);

export const ApiKeyItemSchema = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    prefix: Type.String({ description: 'The first 8 characters after svc_live_ or svc_test_' }),
    scopes: Type.Array(Type.String({ enum: [...SCOPES] })),
    rate_limit_per_minute: Type.Integer(),
    created_by: Type.Object({ id: Uuid, email: Type.String() }, { additionalProperties: false, description: 'The member the key acts as' }),
    created_at: DateTime,
    last_used_at: Type.Union([DateTime, Type.Null()], { description: 'To the minute; null when never used' }),
  },
  { additionalProperties: false },
);
export type ApiKeyItem = Static<typeof ApiKeyItemSchema>;

export const ApiKeyListSchema = Type.Object(
  {
    data: Type.Array(ApiKeyItemSchema, { description: 'Active keys, oldest first' }),
    active_keys: Type.Integer(),
    max_active_keys: Type.Integer(),
    can_manage: Type.Boolean({ description: 'true for owners and admins' }),
    plan_allows_keys: Type.Boolean({ description: 'false on the Free plan' }),
  },
  { additionalProperties: false, description: "The team's active API keys" },
);

export const CreateKeyBodySchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    scopes: Type.Optional(
      Type.Array(Type.String({ enum: [...SCOPES] }), { uniqueItems: true, description: 'read is always added; default read and run' }),
    ),
    rate_limit_per_minute: Type.Optional(Type.Integer({ enum: RATE_CHOICES, default: DEFAULT_RATE, description: `One of ${RATE_CHOICES.join(', ')}` })),
  },
  { additionalProperties: false },
);

export const CreatedKeySchema = Type.Object(
  { key: Type.String({ description: 'The full key: shown only here' }), api_key: ApiKeyItemSchema },
  { additionalProperties: false, description: 'The key, shown once, and its list entry' },
);

export const RevokedKeySchema = Type.Object({ api_key: ApiKeyItemSchema }, { additionalProperties: false, description: 'The key is revoked' });

export const IdParamsSchema = Type.Object({ id: PathUuid('The id') });
export const DeliveryParamsSchema = Type.Object({ id: PathUuid('The endpoint id'), delivery_id: PathUuid('The delivery id') });

export const WebhookListSchema = Type.Object(
  { data: Type.Array(Type.Ref('WebhookEndpoint')), can_manage: Type.Boolean() },
  { additionalProperties: false, description: "The team's webhook endpoints, oldest first" },
);

export const DeliveryListSchema = Type.Object(
  {
    data: Type.Array(
      Type.Object(
        {
          id: Uuid,
          event_id: Uuid,
          event_type: Type.String(),
          status: Type.String({ enum: ['pending', 'delivered', 'failed', 'dropped'] }),
          created_at: DateTime,
          attempts: Type.Array(
            Type.Object(
              {
                attempted_at: DateTime,
                status_code: Type.Union([Type.Integer(), Type.Null()]),
                duration_ms: Type.Integer(),
                error: Type.Union([Type.String(), Type.Null()]),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false, description: "The endpoint's deliveries, newest first, at most 100" },
);

export const RedeliveredSchema = Type.Object({ delivery_id: Uuid }, { additionalProperties: false, description: 'The delivery is queued again' });

export const MemberSchema = Type.Object(
  { id: Uuid, email: Type.String(), role: RoleSchema, created_at: DateTime, has_password: Type.Boolean() },
  { additionalProperties: false },
);
export type MemberView = Static<typeof MemberSchema>;

export const MemberListSchema = Type.Object(
  { data: Type.Array(MemberSchema), can_manage: Type.Boolean() },
  { additionalProperties: false, description: "The team's members, oldest first" },
);

export const InviteSchema = Type.Object(
  { invite_url: Type.String(), expires_at: DateTime },
  { additionalProperties: false, description: 'A one-time link that sets the password, valid 72 hours; earlier links stop working' },
);

export const AddMemberBodySchema = Type.Object(
  { email: Type.String({ maxLength: MAX_EMAIL_LENGTH, pattern: EMAIL_PATTERN }), role: RoleSchema },
  { additionalProperties: false },
);

export const AddedMemberSchema = Type.Object(
  { member: MemberSchema, invite_url: Type.String(), expires_at: DateTime },
  { additionalProperties: false, description: 'The member and their invite link' },
);

export const ChangeRoleBodySchema = Type.Object({ role: RoleSchema }, { additionalProperties: false });

export const RemovedMemberSchema = Type.Object(
  { id: Uuid, removed: Type.Literal(true) },
  { additionalProperties: false, description: "The member is removed: their keys stop for good, their sessions end" },
);
