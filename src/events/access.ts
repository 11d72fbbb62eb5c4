import { keyStillAllows, type Role, type Scope } from '../auth/repository.js';
import type { Queryable } from '../db/pool.js';
import type { StreamSlot } from './hub.js';
import type { SseStream } from './sse.js';

/**
 * Ends an open stream once its key no longer allows it (revoked, its member removed or moved
 * to a lesser role, the scope taken away): the key was checked when the stream opened, and a
 * stream can stay open for hours. A recheck that cannot reach the database keeps the stream; the next change or
 * reconnection of the LISTEN connection asks again.
 */
export function endWhenAccessEnds(
  slot: StreamSlot,
  db: Queryable,
  auth: { keyId: string; teamId: string },
  need: { scope: Scope; roles?: Role[] },
  sse: SseStream,
): void {
  let checking = false;
  let again = false;
  const recheck = (): void => {
    if (sse.ended) return;
    // One check at a time; a change heard meanwhile gets a check of its own after this one, since
    // this one may have read the database before that change committed.
    if (checking) {
      again = true;
      return;
    }
    checking = true;
    keyStillAllows(db, auth.keyId, need).then(
      (ok) => {
        checking = false;
        if (!ok) sse.end();
        else if (again) {
          again = false;
          recheck();
        }
      },
      () => {
        checking = false;
        again = false;
      },
    );
  };
  slot.watchAccess(auth.teamId, recheck);
}
