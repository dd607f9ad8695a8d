/**
 * What each operation of /openapi.json says, by `METHOD /path` as Fastify registers it: the
 * manual of the API, kept as data beside the routes table of docs/api.md. Who may call an operation
 * is not written here: openapi-docs.ts adds it from the route's `config.role`, the field the auth
 * hook checks. A route missing here makes the document fail to build, so none goes undocumented.
 */

interface OperationDoc {
  summary: string;
  description: string;
}

export const OPERATION_DOCS: Record<string, OperationDoc> = {
  'GET /healthz': {
    summary: 'Liveness',
    description:
      'Answers `{ status: "ok" }` while the gateway process serves requests; asks nothing of its dependencies.',
  },
  'GET /readyz': {
    summary: 'Readiness',
    description:
      "Whether PostgreSQL and Temporal both answer (within 3 s), and what agents run in (`agentIsolation`, `agentNetwork`). 503 with `reason` (`database_unreachable`, `temporal_unreachable`, …) when one does not: that 503 is this probe's own body, not the error body.",
  },
  'GET /metrics': {
    summary: 'Prometheus metrics',
    description:
      "The gateway's metrics in the Prometheus text format. Served to loopback callers only (403 `forbidden` otherwise) unless `TWS_METRICS_PUBLIC=1`.",
  },
  'GET /openapi.json': {
    summary: 'This document',
    description: 'The OpenAPI document of the API, built from the route schemas; `/docs` shows it as a page.',
  },
  'POST /v1/repositories': {
    summary: 'Register a repository',
    description:
      'Registers a git repository at `path` on a host (`hostId`, default the only live host) under a unique `name`. The path is checked on that host; the answer never shows it. `rebuildable` names the ignored files a release leaves out of its save as rebuilt (default: dependencies, build output, caches); `copyFiles`, `setup`, `setupFailure` make each new workspace ready: these four are an operator’s (403 to a user token). A taken name or path is 409 `repository_taken` (`clash`).',
  },
  'PATCH /v1/repositories/{id}': {
    summary: "Change a repository's rebuilt ignored files and new-workspace setup",
    description:
      'Changes the fields given; a field left out stays as it is (an empty body changes nothing). `rebuildable`: the patterns of ignored files a release leaves out of its save because they are rebuilt (`name/` a folder at any depth, a name with `*`, a path from the top with `**`); `null` is the default list again. Everything else ignored (a hand-written `.env`) is saved and restored. `copyFiles`, `setup` (`null`: none) and `setupFailure` apply to workspaces made after the change. Every field here is an operator’s (403 to a user token). A bad field is 400, nothing changed. Answers the repository as the list shows it.',
  },
  'GET /v1/repositories': {
    summary: 'List repositories',
    description:
      'The registered repositories, newest first, paged by `limit` and `cursor`: each as registering answers it, never the path.',
  },
  'GET /v1/repositories/{id}/saved-work': {
    summary: 'List saved work of a repository',
    description:
      'The work a delete with `discardChanges=true` or an idle release saved on hidden refs of this repository: `{ taskId, repositoryId, ref, commit, savedAt }`, paged.',
  },
  'GET /v1/boards': { summary: 'List boards', description: 'The boards, newest first, paged: `{ id, name }`.' },
  'POST /v1/boards': { summary: 'Create a board', description: 'A board groups tasks; it has a name only.' },
  'DELETE /v1/boards/{id}': {
    summary: 'Delete a board',
    description:
      'Deletes the board and every task on it, as a task delete would (one cleanup operation per task, listed in the answer); `discardChanges=true` deletes tasks with uncommitted work (saved on a hidden ref first).',
  },
  'POST /v1/tasks': {
    summary: 'Create a task',
    description:
      "A task and the repositories it works on (`baseBranch`, `checkoutBranch`). `checkoutBranch` (work on an existing branch) is only for deployments whose agents run unsandboxed (`TWS_AGENT_SANDBOX=none`): a sandboxed agent can commit only on its task's own branch, so elsewhere it is refused 400 `checkout_branch_unsupported` and nothing is created; name the branch as `baseBranch` instead. `workspace.mode`: `new_workspace` (default), `inherit_parent` (needs `parentTaskId`) or `shared_group` (a `groupId` to join, or none to start a group). Nothing is made on disk until a launch.",
  },
  'GET /v1/tasks': {
    summary: 'List tasks',
    description:
      "The tasks' own fields, newest first, paged; filters `boardId`, `parentTaskId`, `repositoryId` (tasks that work in that repository), `archived=true|false`, `state=active|archived|merged`. Each says what the board shows of it, read in the same query: `activity` (`working` while a session is starting or running, else `idle`) and `attention` (null, or `{ reason, operationId, sessionId }` with `reason` one of `cleanup_needs_operator`, `merge_needs_operator`, `merge_conflict`, `restore_conflict`, `launch_failed`: the first that holds). `GET /v1/tasks/{id}` adds repositories, environment and sessions.",
  },
  'GET /v1/tasks/{id}': {
    summary: 'Show a task',
    description:
      'The task with its repositories, the environment it works in (borrowed ones included), its sessions, its pin and its disk use; `activity` and `attention` as the list says them.',
  },
  'DELETE /v1/tasks/{id}': {
    summary: 'Delete a task',
    description:
      'Starts the cleanup that removes the task, its worktrees and branches (202 with the operation id; watch it at `/v1/cleanup-jobs/{operationId}`). Uncommitted work is 409 `task_delete_dirty_worktree` unless `discardChanges=true` (then saved on a hidden ref first); `cascade=true` deletes child tasks too.',
  },
  'POST /v1/tasks/{id}/sessions': {
    summary: 'Launch an agent',
    description:
      "Starts a session: admits the task's workspace (attach, borrow or materialize one), then starts the agent of `agentProfile` with `executorType`. 201 once the agent runs; 202 once admitted with `Prefer: respond-async`. The same `Idempotency-Key` returns the same session. Refusals are typed 409s (`workspace_preparing`, `workspace_reuse_unsafe`, …), a low disk 507 `host_disk_low`, a task over its disk quota 507 `task_disk_quota`, `limits` above the operator's maximum 400 `limits_exceeded` (under the schema's minimum, what every executor can enforce, 400 `invalid_request`); a task on an existing branch (`checkoutBranch`) with an executor whose agents cannot commit on it 400 `checkout_branch_unsupported`; a profile that reads a prompt (the built-in `claude`, `codex`, `gemini`, `aider`) without one, or one whose credentials the executor cannot take, 400 `invalid_request`; a refused launch leaves no session and nothing on disk.",
  },
  'GET /v1/tasks/{id}/sessions': {
    summary: "List a task's sessions",
    description:
      'Each session of the task as `GET /v1/sessions/{id}` shows it, newest first, paged; 404 for an unknown task.',
  },
  'GET /v1/tasks/{id}/git-status': {
    summary: "Git status of a task's workspace",
    description:
      "One status per repository of the task's canonical workspace, each with its `observedAt`; concurrent readers share one observation.",
  },
  'GET /v1/tasks/{id}/merge-preview': {
    summary: 'What a merge would do',
    description:
      'Per repository, what a merge with `strategy` (default `squash`) would do now: `clean`, `conflicts` (the files), `up_to_date`, or `blocked` with `blockedBy` (`uncommitted_changes`, `session_running`, `base_checkout_dirty`, `not_fast_forward`). Decided by `git merge-tree --write-tree`; no worktree, index or ref changes.',
  },
  'POST /v1/tasks/{id}/merge': {
    summary: "Merge a task's branches into their bases",
    description:
      "One durable operation (`merge/<taskId>/<operationId>` in the Temporal UI), all repositories or none. Each base moves only by compare-and-set from the commit its plan was made on; a base moved meanwhile is planned again; a base checked out in a folder is brought forward there as `merge --ff-only` would. `commitUncommitted` commits the task's uncommitted work first, `stopAgents` stops its agents first; `archive` archives the task once merged. `Idempotency-Key` joins the same operation. 202 `{ operationId, workflowId }`; with `Prefer: wait`, 200 with the merge once it ended (within 60 s). A refusal found at once is its 409 (`merge_conflict` with `conflicts`, `task_uncommitted_changes`, `session_running`, `not_fast_forward`, `base_checkout_dirty`, `nothing_to_merge`, `merge_in_progress`).",
  },
  'GET /v1/merges/{id}': {
    summary: 'A merge',
    description:
      "Its state (`running`, `merged`, `refused`, `undone`, `needs_operator`), per repository the base before and after, and its error when refused (the error body's fields).",
  },
  'GET /v1/tasks/{id}/merges': {
    summary: "A task's merges",
    description: 'Newest first, paged (`limit`, `cursor`).',
  },
  'POST /v1/merges/{id}/undo': {
    summary: 'Undo a merge',
    description:
      'Moves each base back to where the merge found it, by compare-and-set, only where every base is still where the merge left it; else 409 `base_moved_since_merge` and nothing moves (revert instead). Answers the merge, `undone`.',
  },
  'POST /v1/tasks/{id}/rebase': {
    summary: "Rebase a task's branches",
    description:
      "Replays the task's commits on the current base in its worktree (authors kept, the committer the service's). Uncommitted work is 409 `task_uncommitted_changes`; a running agent 409 `session_running` unless `stopAgents`; a conflict 409 `merge_conflict` with the files, and nothing changed. A task on an SSH target is not rebased from the host.",
  },
  'POST /v1/tasks/{id}/push': {
    summary: "Push a task's branches",
    description:
      "Pushes each task branch to its repository's `remote` under the same name (fast-forward only unless `force`). 200 `{ repositories: [{ repositoryId, ref, commit }] }`; a remote that refuses or does not answer is 502 `push_failed` naming no address or credential.",
  },
  'GET /v1/tasks/{id}/diff': {
    summary: "A task's diff",
    description:
      "Per repository: the task branch's changes since its merge base with the base branch, then the uncommitted ones (the worktree against its HEAD, untracked files; a released task's saved work), with `ahead`/`behind`. `patch=1` adds the patch; `Accept: text/x-diff` answers the patch alone as text. `repositoryId` and `path` narrow it. Cut at `TWS_DIFF_MAX_FILES` files and `TWS_DIFF_MAX_BYTES` of patch (`truncated: true`). Reads only: no worktree, index or ref changes.",
  },
  'POST /v1/tasks/{id}/archive': {
    summary: 'Archive a task',
    description:
      'Starts the archive cleanup (202): agents stopped, a clean workspace released, a dirty worktree kept with its branch. `cascade: true` archives child tasks too.',
  },
  'POST /v1/tasks/{id}/unarchive': {
    summary: 'Unarchive a task',
    description:
      'Makes the task active again; a pending archive cleanup is cancelled, one in flight waited for. The next launch materializes the workspace again on the kept branch.',
  },
  'POST /v1/tasks/{id}/environment/reset': {
    summary: "Reset a task's environment",
    description:
      "Starts the cleanup that releases the task's environment so the next launch starts afresh (202); `abandon: true` ends a stuck one at once (200). 409 `session_running` while a session of the task works; 400 for a task that works in its group's or its parent's workspace (the message names the task that owns it: reset that one).",
  },
  'POST /v1/tasks/{id}/pin': {
    summary: 'Pin a task',
    description: 'A pinned task is never released for idleness (its workspace stays on disk). Idempotent.',
  },
  'DELETE /v1/tasks/{id}/pin': {
    summary: 'Unpin a task',
    description: 'The task may be released for idleness again. Idempotent.',
  },
  'GET /v1/sessions': {
    summary: 'List every session',
    description:
      'Every session of the instance, across tasks and hosts, as `GET /v1/sessions/{id}` shows each, newest first, paged; `state` (`starting`, `running`, `stopped`, `exited`, `failed`) keeps one state. `state=running` lists the agents at work: `tws stop --all` stops them one by one with `POST /v1/sessions/{id}/stop`.',
  },
  'GET /v1/sessions/{id}': {
    summary: 'Show a session',
    description:
      'The session and its latest execution (`pid`, `hostId`, `state`, exit code); a first launch that left no row is read from its run: `state: "failed"` or `"cancelled"` with `error`.',
  },
  'POST /v1/sessions/{id}/resume': {
    summary: 'Resume a session',
    description:
      "Starts a new agent in the session's workspace (the same admission as a launch, with the session's executor): `args` appended, `env` over the session's, a `prompt` (needed by a profile that reads one). 200 once it runs; 202 once admitted with `Prefer: respond-async`. The same `Idempotency-Key` joins the same run. A refused resume changes nothing.",
  },
  'POST /v1/sessions/{id}/stop': {
    summary: 'Stop a session',
    description:
      "Stops the session's agent; a session still `starting` has its launch cancelled (what it made is undone).",
  },
  'DELETE /v1/sessions/{id}': {
    summary: 'Delete a session',
    description: 'Stops the agent and forgets the session. Never removes files, worktrees or branches.',
  },
  'GET /v1/sessions/{id}/workspace': {
    summary: "A session's workspace",
    description:
      'Where the session\'s environment is (`source: "environment"`), or that it is `released`, `preparing` or `failed` (`workspacePath: null`); `legacy_fallback` only for a session that never had an environment.',
  },
  'GET /v1/sessions/{id}/logs': {
    summary: "An agent's output",
    description:
      "What the agent of the latest execution (or `executionId`) printed, as `text/plain`; `tail` lines only; `follow=1` streams it (chunked) until the agent ends. Read on the agent's host.",
  },
  'GET /v1/cleanup-jobs': {
    summary: 'List cleanup jobs',
    description:
      'Every cleanup job as `GET /v1/cleanup-jobs/{operationId}` shows it, newest first, paged; filters `state`, `trigger`, `taskId`.',
  },
  'GET /v1/cleanup-jobs/{operationId}': {
    summary: 'Show a cleanup job',
    description:
      'A cleanup (archive, delete, reset, idle release, …): its state, attempts, last error and the Temporal run behind it.',
  },
  'POST /v1/cleanup-jobs/{operationId}/retry': {
    summary: 'Retry a cleanup job',
    description: 'Runs again a job waiting for an operator (202); any other is 409 `cleanup_job_not_retryable`.',
  },
  'POST /v1/cleanup-jobs/{operationId}/cancel': {
    summary: 'Cancel a cleanup job',
    description:
      'Ends the job (an attempt in flight finishes first); a job already ended is 409 `cleanup_job_finished`.',
  },
  'POST /v1/orphan-sweep': {
    summary: 'Sweep orphaned workspaces',
    description:
      "Removes, on a host (`hostId`, default the gateway's), the folders of its workspace root that no environment records; `dryRun: true` only lists them. Unknown host 404, one that is down 503.",
  },
  'POST /v1/idle-release': {
    summary: 'Release idle workspaces now',
    description:
      "Releases the workspace of every task of a host (default this gateway's) idle for `idleForMs` (default TWS_IDLE_RELEASE_AFTER): its uncommitted work saved, its worktrees removed, its branch kept; restored on the next launch. `dryRun` only says what it would release.",
  },
  'GET /v1/hosts': {
    summary: 'List hosts',
    description:
      'The executor hosts: whether each is live, its workspace root, executors, version, and its disk as last measured (`lowDisk`), paged.',
  },
  'GET /v1/hosts/{id}/disk': {
    summary: "A host's disk",
    description: "The host's free disk, whether it is low, and its `limit` largest workspaces (what `tws disk` shows).",
  },
  'POST /v1/ssh-targets': {
    summary: 'Register an SSH target',
    description:
      'A machine the `ssh` executor works on. Stored only after one check over SSH from the host that holds the key (`hostId`): the pinned host key, the key, a usable workspace root. No answer shows the key, its path or the known_hosts lines.',
  },
  'GET /v1/ssh-targets': {
    summary: 'List SSH targets',
    description: 'The registered SSH targets, paged; keys and key paths are never shown.',
  },
  'PATCH /v1/ssh-targets/{id}': {
    summary: 'Change an SSH target',
    description:
      'Changes the fields given (`knownHosts` after a host key changed, `host`, `port`, `user`, `privateKeyPath`, `workspaceRoot`), checked over SSH as a registration is and written only then; connections to the old settings are closed. A new `workspaceRoot` while environments use the target is 409 `ssh_target_in_use`.',
  },
  'DELETE /v1/ssh-targets/{id}': {
    summary: 'Remove an SSH target',
    description:
      '204 once removed. While an environment or a clone not yet removed is on it, 409 `ssh_target_in_use` (delete those tasks first): nothing of theirs is lost.',
  },
  'PATCH /v1/tasks/{id}': {
    summary: "Change a task's disk quota",
    description:
      "Sets the task's own `diskQuotaBytes` (`null`: the operator's default again), what a `task_disk_quota` refusal asks for. Its next launch is judged against it. Answers the task.",
  },
  'GET /v1/events': {
    summary: 'Follow changes (Server-Sent Events)',
    description:
      'A `text/event-stream` of task, session, execution, merge and cleanup job changes: `id: <n>`, `event: change`, `data: { kind, id, taskId, change, state }` (ids, kinds and states only; refetch the resource for the rest). Sends `retry: 2000` first and `: keepalive` every 15 s. With `Last-Event-ID` (header, or `lastEventId`), every retained event after it comes first (24 h, at most 100,000); an id not retained or unknown gets one `event: reset`: refetch everything. A client that does not keep up is disconnected and reconnects.',
  },
};
