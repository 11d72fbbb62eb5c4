// The process's open event streams (GET /v1/runs/{id}/events and GET /v1/events): how many there
// are (bounded per key, per team and per process), and who to wake when PostgreSQL says something
// changed.
// Notifications arrive on the app's LISTEN connection (src/service/app.ts), from any process on any
// machine; a stream woken reads what is new itself, so a wake carries nothing but "look again".

import type { HeldRequestBounds } from '../config/config.js';
import { Places, type PlaceHolder, type PlaceLimits } from './places.js';

/** Channels the triggers of migration 0015 notify: a run's status or progress changed (payload: run id); a team has a new event (payload: team id). */
export const RUN_CHANGES_CHANNEL = 'toolrun_run_changes';
export const TEAM_EVENTS_CHANNEL = 'toolrun_team_events';

/** Per key; the process's and each team's bounds are the operator's (TOOLRUN_STREAMS_PER_PROCESS, TOOLRUN_STREAMS_PER_TEAM). */
export const STREAMS_PER_KEY = 10;

/** A stream's registration: woken on its run's or team's changes, ended when the server closes. */
export interface StreamSlot {
  /** Wakes `wake` whenever this run changes (status, progress, final). */
  watchRun(runId: string, wake: () => void): void;
  /** Wakes `wake` whenever the team has a new event. */
  watchTeam(teamId: string, wake: () => void): void;
  /** Called once if the server starts closing while the stream is open. */
  onShutdown(end: () => void): void;
  /**
   * Calls `recheck` whenever the team's keys or members change (a revocation, a removal, new
   * scopes), and when notifications may have been missed: the stream asks whether its key still
   * may read, and ends if not.
   */
  watchAccess(teamId: string, recheck: () => void): void;
  release(): void;
}

export class StreamHub {
  private readonly places: Places;
  private readonly runs = new Map<string, Set<() => void>>();
  private readonly teams = new Map<string, Set<() => void>>();
  private readonly access = new Map<string, Set<() => void>>();
  private readonly enders = new Set<() => void>();
  private closing = false;

  constructor(bounds: HeldRequestBounds) {
    this.places = new Places({ ...bounds, perKey: STREAMS_PER_KEY });
  }

  get limits(): PlaceLimits {
    return this.places.limits;
  }

  runChanged(runId: string): void {
    for (const wake of this.runs.get(runId) ?? []) wake();
  }

  teamEvent(teamId: string): void {
    for (const wake of this.teams.get(teamId) ?? []) wake();
  }

  /** A team's keys or members changed (null: any team's may have). */
  accessChanged(teamId: string | null): void {
    const sets = teamId === null ? [...this.access.values()] : [this.access.get(teamId) ?? new Set<() => void>()];
    for (const set of sets) for (const recheck of [...set]) recheck();
  }

  /** The LISTEN connection came back: notifications may have been missed, so every stream looks again. */
  wakeAll(): void {
    for (const set of [...this.runs.values(), ...this.teams.values()]) for (const wake of set) wake();
    this.accessChanged(null);
  }

  /** Ends every open stream (the server is closing: they would hold its close up) and refuses new ones. */
  shutdown(): void {
    this.closing = true;
    for (const end of [...this.enders]) end();
  }

  /** A place for one stream of this key of this team, or null past any bound (or while closing). */
  enter(holder: PlaceHolder): StreamSlot | null {
    if (this.closing) return null;
    const giveBack = this.places.take(holder);
    if (!giveBack) return null;
    const undo: (() => void)[] = [];
    const add = (map: Map<string, Set<() => void>>, id: string, wake: () => void) => {
      const set = map.get(id) ?? new Set<() => void>();
      set.add(wake);
      map.set(id, set);
      undo.push(() => {
        set.delete(wake);
        if (!set.size && map.get(id) === set) map.delete(id);
      });
    };
    let released = false;
    return {
      watchRun: (runId, wake) => add(this.runs, runId, wake),
      watchTeam: (teamId, wake) => add(this.teams, teamId, wake),
      watchAccess: (teamId, recheck) => add(this.access, teamId, recheck),
      onShutdown: (end) => {
        this.enders.add(end);
        undo.push(() => this.enders.delete(end));
      },
      release: () => {
        if (released) return;
        released = true;
        for (const u of undo) u();
        giveBack();
      },
    };
  }

  get open(): number {
    return this.places.held;
  }
}
