/** File paths as a list, each item text (never markup), for a refusal's or a preview's conflicts. */
export function PathList({ paths, testId }: { paths: readonly string[]; testId: string }) {
  return (
    <ul>
      {paths.map((path) => (
        <li key={path} data-testid={testId}>
          {path}
        </li>
      ))}
    </ul>
  );
}
