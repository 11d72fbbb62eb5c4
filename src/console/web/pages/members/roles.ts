import type { Role } from '../../api.ts';

export const ROLE_OPTIONS: { value: Role; label: string }[] = [
  { value: 'member', label: 'Member: reads keys, webhooks and members' },
  { value: 'admin', label: 'Admin: manages keys, webhooks and members' },
  { value: 'owner', label: 'Owner: everything an admin does' },
];
