/** "1 character", "2 characters": a count with its noun in the right number. */
export function count(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}

/**
 * Where in a list a problem is, for an error whose loc ends at the list itself (the spec: loc's
 * last entry names the slot or field): "item 2 (index 1)", both counts, as clients think in either.
 */
export function itemPosition(indexes: number[]): string {
  if (indexes.length === 1) return `item ${indexes[0]! + 1} (index ${indexes[0]})`;
  return `the item at index ${indexes.map((i) => `[${i}]`).join('')}`;
}

/** A list item's problem, said of the list: "item 2 (index 1): must be an id (a UUID)". */
export function atItem(index: number, message: string): string {
  return `${itemPosition([index])}: ${message}`;
}
