/** One git status observation of one repository of an environment [R1.5]. */
export interface GitStatusObservation {
  repositoryId: string;
  /** Where it was taken: only the environment's own workspace path counts. */
  workspacePath: string;
  /** When it was taken (before git ran), ISO-8601. */
  observedAt: string;
  branch: string | null;
  head: string | null;
  ahead: number;
  behind: number;
  files: { path: string; status: string }[];
}

export interface GitStatusTarget {
  environmentId: string;
  hostId: string;
  /** The environment's workspace is on this SSH target: its status is read there. Absent before ssh. */
  sshTargetId?: string | null;
  slots: { repositoryId: string; path: string; baseBranch: string }[];
}
