/**
 * Branch names and folder names that reach git or the filesystem. The rules are git's
 * check-ref-format rules for a branch, plus a refusal of a leading '-' so that no name can
 * ever be read as an option.
 */
const FORBIDDEN_CHARS = /[\x00-\x20\x7f~^:?*[\\]/;

export function branchNameProblem(name: string): string | null {
  if (name.length === 0) return 'is empty';
  if (name.length > 200) return 'is longer than 200 characters';
  if (name.startsWith('-')) return 'starts with "-"';
  if (name === 'HEAD' || name === '@') return 'is reserved';
  if (FORBIDDEN_CHARS.test(name)) return 'contains a character git refuses';
  if (name.includes('..')) return 'contains ".."';
  if (name.includes('@{')) return 'contains "@{"';
  if (name.startsWith('/') || name.endsWith('/') || name.includes('//')) return 'has an empty path component';
  if (name.endsWith('.')) return 'ends with "."';
  for (const component of name.split('/')) {
    if (component.startsWith('.')) return 'has a component starting with "."';
    if (component.endsWith('.lock')) return 'has a component ending with ".lock"';
  }
  return null;
}

/** A repository name becomes a folder name inside the task folder. */
export const REPOSITORY_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$';
const REPOSITORY_NAME = new RegExp(REPOSITORY_NAME_PATTERN);

export function repositoryNameProblem(name: string): string | null {
  if (!REPOSITORY_NAME.test(name))
    return 'must be 1-100 letters, digits, ".", "_" or "-", starting with a letter or digit';
  if (name.endsWith('.lock') || name === '.' || name === '..') return 'is reserved';
  return null;
}

/** The hidden ref a task's uncommitted work of one repository is saved on before a removal (in the host repository). */
export const savedWorkRef = (taskId: string, repositoryId: string): string =>
  `refs/task-workspaces/saved/${taskId}/${repositoryId}`;

/** The hidden ref of one save of an idle release, restored by the task's next launch (one per save: none moves another). */
export const releasedWorkRef = (taskId: string, repositoryId: string, commit: string): string =>
  `refs/task-workspaces/released/${taskId}/${repositoryId}/${commit}`;
