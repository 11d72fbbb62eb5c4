// Places for requests a process holds open (event streams, `Prefer: wait` waiters), bounded in
// all, per team and per key. The per-team share (issue 25) keeps one team, whatever its number of
// keys, from taking every place of the process from the other teams.

export interface PlaceLimits {
  perProcess: number;
  perTeam: number;
  perKey: number;
}

export interface PlaceHolder {
  keyId: string;
  teamId: string;
}

export class Places {
  private readonly byKey = new Map<string, number>();
  private readonly byTeam = new Map<string, number>();
  private total = 0;

  constructor(readonly limits: PlaceLimits) {}

  /** Takes a place for this key of this team, or null past any bound; the function returned gives it back (once). */
  take(holder: PlaceHolder): (() => void) | null {
    const key = this.byKey.get(holder.keyId) ?? 0;
    const team = this.byTeam.get(holder.teamId) ?? 0;
    if (this.total >= this.limits.perProcess || team >= this.limits.perTeam || key >= this.limits.perKey) return null;
    this.total++;
    this.byKey.set(holder.keyId, key + 1);
    this.byTeam.set(holder.teamId, team + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.total--;
      drop(this.byKey, holder.keyId);
      drop(this.byTeam, holder.teamId);
    };
  }

  get held(): number {
    return this.total;
  }
}

function drop(counts: Map<string, number>, id: string): void {
  const left = (counts.get(id) ?? 1) - 1;
  if (left) counts.set(id, left);
  else counts.delete(id);
}
