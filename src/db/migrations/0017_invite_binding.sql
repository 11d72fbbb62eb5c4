-- Up Migration
-- Invite links bound to their maker and to the member's role (issue 25). A link keeps who made it
-- (created_by; NULL: an operator, through `toolrun admin member invite` or the demo seed), the
-- role the member had then (member_role) and whether the member already had a password
-- (resets_password). Accepting checks, in the statement that marks it used, that the member still
-- has that role and that the maker is still an active member whose role may make it. A role change
-- of the member, or the removal or demotion of the maker, voids links (revoked_at); voided and used
-- rows stay, so a member can see the reset links made for them. `id` names a link in the console
-- (the token hash never leaves the database).
ALTER TABLE member_invites
  ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid(),
  ADD COLUMN created_by uuid REFERENCES members(id),
  ADD COLUMN member_role text,
  ADD COLUMN resets_password boolean NOT NULL DEFAULT false,
  ADD COLUMN revoked_at timestamptz;
UPDATE member_invites i SET member_role = m.role FROM members m WHERE m.id = i.member_id;
-- Nobody knows who made the links still open: they could be an admin's (the takeover of issue 25),
-- so they stop working; an owner or the operator makes new ones.
UPDATE member_invites SET revoked_at = now() WHERE used_at IS NULL;
ALTER TABLE member_invites
  ALTER COLUMN member_role SET NOT NULL,
  ADD CONSTRAINT member_invites_member_role CHECK (member_role IN ('owner', 'admin', 'member')),
  ADD CONSTRAINT member_invites_id UNIQUE (id);
CREATE INDEX member_invites_created_by ON member_invites (created_by) WHERE created_by IS NOT NULL;

-- Down Migration
DROP INDEX member_invites_created_by;
-- Without the binding an open link would work again for whoever made it: the older schema cannot
-- tell voided links from live ones, so voided ones go.
DELETE FROM member_invites WHERE revoked_at IS NOT NULL;
ALTER TABLE member_invites
  DROP CONSTRAINT member_invites_id,
  DROP CONSTRAINT member_invites_member_role,
  DROP COLUMN revoked_at,
  DROP COLUMN resets_password,
  DROP COLUMN member_role,
  DROP COLUMN created_by,
  DROP COLUMN id;
