/**
 * A `container` agent's start: the host's supervisor (as for every agent: its log, its exit status,
 * its identity for a stop and after a restart) runs it inside the task's container. `nsenter` joins
 * the container's namespaces and root, the image's `setpriv` drops to the environment's uid with no
 * capability, no bounding set and `no_new_privs` (no setuid program of the image can raise it), and
 * the image's shell reads the agent's variables from the supervisor's descriptor, goes to the
 * workspace and runs the agent; the supervisor put it in the container's control groups first, so
 * the container's limits hold it. Nothing of the request is in any argv or environment outside it.
 */
import { mkdirSync, chmodSync } from 'node:fs';
import path from 'node:path';
import type { AgentEntrance } from '../host/agent-spawn';
import type { StartAgentInput } from '../agent-start';
import { environmentAgentUid } from '../host/agent-uid';
import { systemBinary } from '../host/agent-sandbox';
import type { ActivityDeps } from '../support/deps';
import { typedFailure } from '../support/failures';
import { SANDBOX_ARGS_FD } from '../../domain/sandbox';
import { containerBinds, ensureContainer } from './containers';

/** The PATH of a container agent that did not ask for one: the image's, not the host's. */
const CONTAINER_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * Inside the container, as the agent's uid: its variables from the descriptor the supervisor
 * opened (the file is gone from disk), the descriptor closed, then the workspace and the agent.
 */
const ENTRY_SCRIPT = `eval "$(cat <&${SANDBOX_ARGS_FD})" && exec ${SANDBOX_ARGS_FD}<&- && cd -- "$1" && shift && exec "$@"`;

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The variables as shell assignments, each value single-quoted (a quote in it closed, escaped and opened again). */
export function shellExports(env: Record<string, string>): string {
  return Object.entries(env)
    .map(([name, value]) => {
      if (!VARIABLE_NAME.test(name)) throw typedFailure('invalid_request', { reason: 'agent_variable_name' });
      return `export ${name}='${value.replace(/'/g, `'\\''`)}'\n`;
    })
    .join('');
}

/** The command the supervisor runs: into the container, down to the uid, into the workspace. */
function containerCommand(initPid: number, uid: number, cwd: string, command: string[]): string[] {
  const nsenter = systemBinary('nsenter');
  if (!nsenter) throw typedFailure('executor_unavailable', { reason: 'nsenter_missing' });
  return [
    nsenter,
    `--target=${initPid}`,
    '--all',
    '--root',
    '--wd',
    '--',
    '/usr/bin/setpriv',
    `--reuid=${uid}`,
    `--regid=${uid}`,
    '--clear-groups',
    '--no-new-privs',
    '--inh-caps=-all',
    '--bounding-set=-all',
    '--',
    '/usr/bin/env',
    '-i',
    '/bin/sh',
    '-c',
    ENTRY_SCRIPT,
    'tws-agent',
    cwd,
    ...command,
  ];
}

/** The container's run folder on the host (and, bound at the same path, in it): its agents' home and their prompts. */
const containerRunFolder = (logDir: string, environmentTaskId: string): string =>
  path.join(logDir, environmentTaskId, 'container');

/** Where a `container` agent's start runs it: the environment's uid, and the entrance into its container. */
export function containerPlaceOf(
  deps: ActivityDeps,
): (input: StartAgentInput) => Promise<{ uid: number; entrance: AgentEntrance }> {
  const { config } = deps;
  return async (input) => {
    const uid = await environmentAgentUid(deps, input.environmentTaskId);
    const runFolder = containerRunFolder(config.logDir, input.environmentTaskId);
    const prompts = path.join(runFolder, 'prompts');
    // The service's (root's, searchable): the agent reads its prompt there and writes nothing.
    mkdirSync(prompts, { recursive: true, mode: 0o711 });
    chmodSync(runFolder, 0o711);
    chmodSync(prompts, 0o711);
    const entrance: AgentEntrance = {
      home: path.join(runFolder, 'home'),
      promptPath: path.join(prompts, `${input.executionId}.prompt`),
      async enter(prepared, env, command) {
        const limits = config.limits.enabled ? (input.limits ?? config.limits.defaults) : null;
        const running = await ensureContainer(deps, {
          environmentId: input.environmentId,
          image: input.image ?? config.containers.image,
          uid,
          binds: containerBinds({
            workspace: input.cwd,
            pinnedFolders: prepared.worktrees,
            gitBinds: prepared.gitBinds,
            pointers: prepared.pointers,
            runFolder,
          }),
          network: config.agentNetwork,
          limits,
          tmpBytes: limits ? config.limits.tmpBytes : null,
        });
        if (input.env?.PATH === undefined) env.PATH = CONTAINER_PATH;
        return {
          command: containerCommand(running.initPid, uid, input.cwd, command),
          environmentText: shellExports(env),
          cgroupProcs: running.cgroupProcs,
        };
      },
    };
    return { uid, entrance };
  };
}
