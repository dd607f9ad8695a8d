/**
 * What the diff view shows of each file of a patch: its part, found by the file's real path
 * (patch-files.ts reads the names git quotes), with its hunks as react-diff-view parses them; or,
 * when that parser throws on the part or does not find all its changed lines (a malformed hunk
 * header, a part it misreads), no hunks, so the part is shown as its plain text rather than dropped
 * or shown short. Parsed one part at a time, a part it throws on takes no other file with it.
 */
import { parseDiff, type FileData } from 'react-diff-view';
import { changedLineCount, splitPatch, type PatchSection } from './patch-files';

/** One file's part of the patch: parsed, or (null) to be shown as its text. */
interface ShownPart {
  section: PatchSection;
  parsed: FileData | null;
}

/** A section's hunks as react-diff-view reads them; null when it throws or finds other lines than the section has. */
function parsedSection(section: PatchSection): FileData | null {
  try {
    const files = parseDiff(section.text, { nearbySequences: 'zip' });
    const file = files.length === 1 ? files[0]! : null;
    const changed = file?.hunks.reduce((n, h) => n + h.changes.filter((c) => c.type !== 'normal').length, 0);
    return file && changed === changedLineCount(section.text) ? file : null;
  } catch {
    return null;
  }
}

/** The patch's parts by the path the API names the file with (its new path; a deleted file's old one). */
export function partsByPath(patch: string | undefined): Map<string | null, ShownPart[]> {
  const byPath = new Map<string | null, ShownPart[]>();
  for (const section of splitPatch(patch ?? '')) {
    const part = { section, parsed: section.path === null ? null : parsedSection(section) };
    byPath.set(section.path, [...(byPath.get(section.path) ?? []), part]);
  }
  return byPath;
}
