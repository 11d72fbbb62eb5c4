-- Up Migration
-- Round robin between teams (issue 25): when a slot frees and several teams with queued runs have
-- as few runs running, the claim offers it to the team served least recently (a team never served
-- first), and only then to the oldest queued run. With the oldest run alone a long backlog, always
-- the oldest, took every slot while fewer slots were free than teams had work. The claim that takes
-- a run records its team's turn here, in the same statement. A table of its own rather than a
-- column of teams: every update of a teams row notifies toolrun_auth (0009) and locks the row that
-- the ledger and the console update. The claim reads it by primary key, one probe per team.
CREATE TABLE team_claims (
  team_id uuid PRIMARY KEY REFERENCES teams(id) ON DELETE CASCADE,
  last_served_at timestamptz NOT NULL
);

-- Down Migration
DROP TABLE team_claims;
