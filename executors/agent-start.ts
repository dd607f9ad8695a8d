/** What starting an agent takes and answers, on the host and on an SSH target alike. */
import type { ExecutionStatus } from '../db/executions';
import type { ExecutorType } from '../domain/admission';
import type { AgentLimits } from '../domain/limits';
import type { AgentGitSlot } from './host/git-store-layout';

export interface StartAgentInput {
  executionId: string;
  sessionId: string;
  taskId: string;
  environmentId: string;
  /** The environment's owner: its cleanup barrier also stops this start. */
  environmentTaskId: string;
  cwd: string;
  command: string[];
  /** The profile's and the request's variables (validated names); absent in older inputs. */
  env?: Record<string, string>;
  /** Written into the execution's run folder before the start; its path is TWS_PROMPT_FILE; given as its profile reads it. */
  prompt?: string | null;
  /** The session's profile, read from the configuration at the start (its prompt delivery, its credentials); absent in older inputs: none. */
  agentProfile?: string;
  /** Git folders of the agent's repositories; older inputs (no gitSlots): no task store, no writable ref. */
  gitDirs?: string[];
  /** The repositories of the workspace, with the worktree whose store the agent adds objects to and its ref folder. */
  gitSlots?: AgentGitSlot[];
  /** `ssh`: the agent runs on this target (executors/ssh/agents.ts); absent or null on the host. */
  sshTargetId?: string | null;
  /** What the agent may use; absent in older inputs: the operator's defaults. */
  limits?: AgentLimits;
  /** The executor of its plan: `container` runs it in its task's container; absent in older inputs: where `sshTargetId` says. */
  executorType?: ExecutorType;
  /** `container`: the image its task's container is made from. */
  image?: string;
}

export interface StartedAgent {
  executionId: string;
  pid: number;
  status: ExecutionStatus;
}
