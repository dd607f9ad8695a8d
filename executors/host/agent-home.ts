/**
 * An agent's home on this host: one folder per task and agent uid, kept across the task's sessions
 * and resumes (a real agent's own state and sign-in stay there), removed with the task's log
 * folder when the task is deleted (executors/host/cleanup.ts `removeTaskRuns`). And the credential
 * files its profile gives it (domain/agent-prompt.ts): copied for each start into its run folder,
 * shown read-only at their place in the home, never written back to where they came from.
 */
import { chownSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { AgentCredentials } from '../../domain/agent-prompt';
import { isWithinFolder } from '../../domain/task-layout';
import { typedFailure } from '../support/failures';

/** The home of a task's agents of `owner` (their uid; `service` for agents run as the service, TWS_AGENT_SANDBOX=none). */
export const taskHome = (logDir: string, taskId: string, owner: number | 'service'): string =>
  path.join(logDir, taskId, 'homes', String(owner));

/** The homes of the task whose run wrote `logPath` (`<log dir>/<task>/<session>/<execution>.log`): what its agents write besides their workspace. */
export const taskHomesOfRun = (logPath: string): string => path.join(path.dirname(path.dirname(logPath)), 'homes');

/** A credential's content; a file that cannot be read fails the start, naming neither it nor its content. */
async function credentialContent(from: string): Promise<Buffer> {
  try {
    return await readFile(from);
  } catch {
    throw typedFailure('internal', { reason: 'agent_credentials_unreadable' });
  }
}

/**
 * The credential files of a sandboxed start: each copied into the run folder (the service's,
 * hidden from every agent) as the agent's uid's, 0400, to be bound read-only at its place in the
 * home: the agent reads it and can neither change nor replace it, and the file it came from is
 * never in its view.
 */
export async function credentialCopies(
  credentials: AgentCredentials | undefined,
  p: { logPath: string; home: string; uid: number },
): Promise<{ source: string; target: string }[]> {
  const copies: { source: string; target: string }[] = [];
  for (const [i, file] of (credentials?.files ?? []).entries()) {
    const target = path.join(p.home, file.path);
    if (!isWithinFolder(target, p.home)) throw typedFailure('internal', { reason: 'agent_credentials_unreadable' });
    const source = `${p.logPath.replace(/\.log$/, '')}.credential-${i}`;
    await rm(source, { force: true });
    await writeFile(source, await credentialContent(file.from), { mode: 0o400, flag: 'wx' });
    chownSync(source, p.uid, p.uid);
    copies.push({ source, target });
  }
  return copies;
}

/**
 * The home of an agent run as the service (no sandbox): made, with the credential files written
 * into it (0400). Nothing bounds such an agent (the operator's choice): the files are only where it
 * looks for them.
 */
export async function serviceHome(home: string, credentials: AgentCredentials | undefined): Promise<void> {
  await mkdir(home, { recursive: true, mode: 0o700 });
  for (const file of credentials?.files ?? []) {
    const target = path.join(home, file.path);
    if (!isWithinFolder(target, home)) throw typedFailure('internal', { reason: 'agent_credentials_unreadable' });
    await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    await rm(target, { force: true, recursive: true });
    await writeFile(target, await credentialContent(file.from), { mode: 0o400, flag: 'wx' });
  }
}
