-- Up Migration
-- What the step that published a row really made: the branch (created from the base, not found)
-- and the worktree (added, not adopted). The undo of a launch cancelled after it published reads
-- these, never the plan: a kept task branch that a resume checked out again is not its to delete.
-- NULL (a row published before this) is read as "found": such an undo removes nothing of it.
ALTER TABLE environment_repos ADD COLUMN made_branch boolean, ADD COLUMN made_worktree boolean;

-- Down Migration
ALTER TABLE environment_repos DROP COLUMN made_branch, DROP COLUMN made_worktree;
