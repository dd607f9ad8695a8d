/** The API's answers the task page reads (GET /v1/tasks/:id, its sessions), as far as the page uses them. */
export interface TaskView {
  id: string;
  title: string;
  state: 'active' | 'archived';
  boardId: string | null;
  createdAt: string;
  pinned: boolean;
  merged: { at: string; operationId: string } | null;
  disk: { bytes: number; measuredAt: string } | null;
  limits: { diskQuotaBytes: number | null; overDiskQuota: boolean };
  repositories: { repositoryId: string; baseBranch: string; checkoutBranch: string | null }[];
  environment: {
    id: string;
    executorType: string;
    status: string;
    hostId: string;
    ownerTaskId: string;
    borrowed: boolean;
  } | null;
}

export interface SessionView {
  id: string;
  taskId: string;
  state: string;
  executorType: string;
  agentProfile: string;
  name: string | null;
  createdAt?: string;
  execution: {
    id: string;
    startedAt: string;
    endedAt: string | null;
    exitCode: number | null;
    signal: string | null;
    state: string;
    outcome: string | null;
  } | null;
  links: { temporal?: string };
  restore?: 'applied' | 'conflict' | null;
  restoreConflictRefs?: string[];
  error?: { code: string; message: string };
}

const MIB = 1024 * 1024;
export const bytesText = (bytes: number): string =>
  bytes >= 1024 * MIB ? `${(bytes / (1024 * MIB)).toFixed(1)} GiB` : `${(bytes / MIB).toFixed(1)} MiB`;
