/**
 * The stock colours of CSS frameworks (their theme colours as shipped, before any site sets its
 * own): a page that loads the framework declares them in rules named primary, button and link
 * whether it shows them or not, so what its stylesheets say about them is the framework's
 * default, not the site's choice. Where each value comes from: docs/decisions.md, "Framework
 * stock palettes". Tailwind is not here: its utility classes carry no role, so its colours count
 * only where the page uses them, which is right as it is.
 */
const PALETTES: Record<string, string[]> = {
  // Bootstrap 2.3 ($linkColor, btn-primary gradient, success, info, warning, danger).
  bootstrap2: ['#0088cc', '#006dcc', '#0044cc', '#005580', '#5bb75b', '#49afcd', '#faa732', '#da4f49'],
  // Bootstrap 3 (_variables.scss: $brand-primary darken(#428bca, 6.5%) = #337ab7 from 3.3, #428bca before; success, info, warning, danger; hover and border shades).
  bootstrap3: ['#337ab7', '#428bca', '#286090', '#2e6da4', '#23527c', '#204d74', '#122b40', '#5cb85c', '#5bc0de', '#f0ad4e', '#d9534f'],
  // Bootstrap 4 ($blue ... $gray-600 and the primary hover/active shades and link hover).
  bootstrap4: ['#007bff', '#0069d9', '#0062cc', '#005cbf', '#0056b3', '#6610f2', '#6f42c1', '#e83e8c', '#dc3545', '#fd7e14', '#ffc107', '#28a745', '#20c997', '#17a2b8', '#6c757d'],
  // Bootstrap 5 ($blue ... $gray-600, the primary hover/active shades and link hover).
  bootstrap5: ['#0d6efd', '#0b5ed7', '#0a58ca', '#6610f2', '#6f42c1', '#d63384', '#dc3545', '#fd7e14', '#ffc107', '#198754', '#20c997', '#0dcaf0', '#6c757d'],
  // Foundation 4 ($primary-color, $secondary-color, $alert-color, $success-color).
  foundation4: ['#2ba6cb', '#e9e9e9', '#c60f13', '#5da423'],
  // Foundation 5 ($primary-color, $secondary-color, $alert-color, $success-color, $warning-color, $info-color).
  foundation5: ['#008cba', '#e7e7e7', '#f04124', '#43ac6a', '#f08a24', '#a0d3e8'],
  // Foundation 6 ($foundation-palette; 6.0-6.3 primary and alert).
  foundation6: ['#1779ba', '#767676', '#3adb76', '#ffae00', '#cc4b37', '#2199e8', '#ec5840'],
  // Materialize 1.0 ($primary-color materialize-red lighten-2, $secondary-color teal lighten-1, $link-color light-blue darken-1, success, error).
  materialize: ['#ee6e73', '#26a69a', '#039be5', '#4caf50', '#f44336', '#2bbbad'],
  // Bulma ($turquoise primary; $blue link, $cyan info, $green, $yellow, $red in 0.9.3+ and in 0.7-0.9.2).
  bulma: ['#00d1b2', '#485fc7', '#3e8ed0', '#48c78e', '#ffe08a', '#f14668', '#3273dc', '#209cee', '#3298dc', '#23d160', '#48c774', '#ffdd57', '#ff3860'],
};

/** A framework counts as loaded when its stylesheets declare this many of its stock colours. */
const LOADED = 3;

/**
 * The stock colours of every framework the page's stylesheets look like (at least LOADED of a
 * framework's colours declared): their rule-born hints are the framework's, not the site's.
 */
export function stockColors(declared: Set<string>): Set<string> {
  const out = new Set<string>();
  for (const palette of Object.values(PALETTES)) {
    if (palette.filter((hex) => declared.has(hex)).length >= LOADED) for (const hex of palette) out.add(hex);
  }
  return out;
}
