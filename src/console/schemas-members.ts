import { Type, type Static } from 'typebox';
import { ROLES } from '../teams/repository.js';

const Uuid = Type.String({ format: 'uuid' });
const DateTime = Type.String({ format: 'date-time' });
const Maker = Type.Union([Type.Object({ id: Uuid, email: Type.String() }, { additionalProperties: false }), Type.Null()], {
  description: 'The member who made the link; null when an operator made it (toolrun admin member invite)',
});

export const PendingInviteSchema = Type.Object(
  {
    id: Uuid,
    member: Type.Object({ id: Uuid, email: Type.String(), role: Type.String({ enum: [...ROLES] }) }, { additionalProperties: false, description: 'Whose password the link sets' }),
    created_by: Maker,
    created_at: DateTime,
    expires_at: DateTime,
    resets_password: Type.Boolean({ description: 'true when the member already had a password: the link resets it' }),
  },
  { additionalProperties: false },
);
export type PendingInviteView = Static<typeof PendingInviteSchema>;

export const PendingInviteListSchema = Type.Object(
  { data: Type.Array(PendingInviteSchema, { description: 'Unused, unrevoked, unexpired links, oldest first' }) },
  { additionalProperties: false, description: "The team's pending invite links (never their tokens)" },
);

export const RevokedInviteSchema = Type.Object(
  { id: Uuid, revoked: Type.Literal(true) },
  { additionalProperties: false, description: 'The link is revoked: it no longer sets a password' },
);

export const ResetNoticeSchema = Type.Object(
  {
    created_by: Maker,
    created_at: DateTime,
    expires_at: DateTime,
    used_at: Type.Union([DateTime, Type.Null()], { description: 'When the link set a new password; null if not (yet)' }),
    revoked_at: Type.Union([DateTime, Type.Null()], { description: 'When it was revoked or replaced; null if not' }),
  },
  { additionalProperties: false },
);
export type ResetNoticeView = Static<typeof ResetNoticeSchema>;

export const ResetNoticeListSchema = Type.Object(
  { data: Type.Array(ResetNoticeSchema, { description: 'Newest first, the last 30 days, at most 20' }) },
  { additionalProperties: false, description: 'Links made to reset your password (you already had one), and whether they were used' },
);
