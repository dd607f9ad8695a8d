/**
 * A choice among a few fixed values (a merge strategy, an executor): a plain `<select>` whose
 * options are shown as the values they are. The select keeps the data-testid the tests and the
 * console contract name it by.
 */
export function Choice({
  label,
  value,
  options,
  onChange,
  testId,
}: {
  /** What the choice is, for a screen reader (there is no visible label beside it). */
  label: string;
  value: string;
  options: readonly string[];
  onChange: (value: string) => void;
  testId?: string;
}) {
  return (
    <select data-testid={testId} aria-label={label} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
      {options.map((option) => (
        <option key={option} value={option}>
          {option}
        </option>
      ))}
    </select>
  );
}
