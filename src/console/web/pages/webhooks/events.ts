import { EVENT_TYPES, type EventType } from '../../api.ts';

export const EVENT_OPTIONS: { value: EventType; label: string }[] = EVENT_TYPES.map((e) => ({ value: e, label: e }));
