/**
 * One workflow thread for the Workers one process starts together. The SDK gives each Worker a
 * workflow thread of its own (a Node worker thread: its own V8 isolate, the SDK's protobuf
 * descriptors and the bundle compiled in it), about 50 MB resident each with our bundle (38 MB
 * with an empty one; measured by creating them one after another in a bare process). The worker
 * process runs two Workers, the shared queue's and its host's, on the same bundle: they now
 * share one thread, which runs every workflow by its run id whichever queue it came from.
 *
 * The thread is the SDK's own (`Worker.createWorkflowCreator`, a protected static that a subclass
 * may override); only its creation is shared, and it is destroyed when the last Worker using it
 * stops. A workflow checks that a local activity it schedules is registered, against the names
 * the thread was made with: the first Worker made must therefore register every activity of
 * the others, and a later one that registers more is refused at creation.
 */
import { Worker, type CompiledWorkerOptions } from '@temporalio/worker';
import type { Logger } from '@temporalio/common';
import type { WorkflowCreator } from '@temporalio/worker/lib/workflow/interface';
import type { WorkflowBundleWithSourceMapAndFilename } from '@temporalio/worker/lib/workflow/workflow-worker-thread/input';

/** A Worker class whose instances share one workflow thread; call its `create` as `Worker.create`. */
export function workersSharingOneWorkflowThread(): typeof Worker {
  let shared: { creator: Promise<WorkflowCreator>; activities: ReadonlySet<string>; users: number } | undefined;

  class SharingWorker extends Worker {
    protected static override async createWorkflowCreator(
      bundle: WorkflowBundleWithSourceMapAndFilename,
      options: CompiledWorkerOptions,
      logger: Logger,
    ): Promise<WorkflowCreator> {
      if (!shared)
        shared = {
          creator: super.createWorkflowCreator(bundle, options, logger),
          activities: new Set(options.activities.keys()),
          users: 0,
        };
      const missing = [...options.activities.keys()].filter((name) => !shared!.activities.has(name));
      if (missing.length > 0)
        throw new Error(`a Worker sharing the workflow thread registers activities the first did not: ${missing}`);
      const own = shared;
      const creator = await own.creator;
      own.users += 1;
      let destroyed = false;
      return {
        createWorkflow: (workflow) => creator.createWorkflow(workflow),
        destroy: async () => {
          if (destroyed) return;
          destroyed = true;
          own.users -= 1;
          if (own.users > 0) return;
          if (shared === own) shared = undefined;
          await creator.destroy();
        },
      };
    }
  }
  return SharingWorker;
}
