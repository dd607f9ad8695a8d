/**
 * The agent sandbox (issue 11, part 3): bubblewrap, as Linux coding-agent sandboxes use it. The
 * system is read-only, the agent's workspace (and the git folders its worktrees commit into) is
 * writable, the service's data, workspace and log folders are hidden behind empty ones, and /proc
 * is the sandbox's own (a private pid namespace): no other process's environment is in reach.
 */
export interface SandboxLayout {
  /** The agent's working directory: writable. */
  workspace: string;
  /** Also writable: the repositories' git folders a worktree writes its commits into. */
  writable: string[];
  /** Hidden behind empty folders: the service's data, every other workspace, every log. */
  hidden: string[];
  /** The agent's own writable home (in its run folder). */
  home: string;
  /** Files shown read-only although under a hidden folder (the prompt). */
  readOnlyFiles: string[];
}

export function bubblewrapArgs(layout: SandboxLayout): string[] {
  const args = ['--die-with-parent', '--unshare-pid', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'];
  // Shortest first: a folder inside another hidden one is mounted over it, not under.
  for (const dir of [...new Set(layout.hidden)].sort((a, b) => a.length - b.length)) args.push('--tmpfs', dir);
  args.push('--bind', layout.workspace, layout.workspace, '--bind', layout.home, layout.home);
  // A git folder that went away between the launch and the sandbox's start is left out, not fatal.
  for (const dir of [...new Set(layout.writable)].filter((d) => d !== layout.workspace)) args.push('--bind-try', dir, dir);
  for (const file of layout.readOnlyFiles) args.push('--ro-bind', file, file);
  args.push('--chdir', layout.workspace);
  return args;
}

export type AgentSandboxMode = 'auto' | 'bwrap' | 'none';
/** What agents run in on this host: bubblewrap, or nothing (the service's user, allow-listed environment). */
export type AgentIsolation = 'bwrap' | 'none';
