-- Up Migration
-- An SSH target can be removed once nothing of it is left: no environment names it and each of its
-- inventory rows is `deleted` (the remote clone removed). Such a row stays as history, with its
-- remote path and branch, and no longer names the target (there is none): the identity check allows
-- that for deleted rows only, and removing the target clears it on them. A row still live keeps
-- the check as it was, so a target cannot be removed from under it.
ALTER TABLE environment_repos DROP CONSTRAINT environment_repos_identity_check;
ALTER TABLE environment_repos ADD CONSTRAINT environment_repos_identity_check CHECK (
  (worktree_path IS NULL) = (worktree_branch IS NULL)
  AND (worktree_id IS NULL OR worktree_path IS NOT NULL)
  AND (worktree_id IS NOT NULL OR worktree_path IS NULL OR ssh_target_id IS NOT NULL OR status = 'deleted')
);
ALTER TABLE environment_repos DROP CONSTRAINT environment_repos_ssh_target_id_fkey;
ALTER TABLE environment_repos ADD CONSTRAINT environment_repos_ssh_target_id_fkey
  FOREIGN KEY (ssh_target_id) REFERENCES ssh_targets(id) ON DELETE SET NULL;

-- Down Migration
ALTER TABLE environment_repos DROP CONSTRAINT environment_repos_ssh_target_id_fkey;
ALTER TABLE environment_repos ADD CONSTRAINT environment_repos_ssh_target_id_fkey
  FOREIGN KEY (ssh_target_id) REFERENCES ssh_targets(id);
ALTER TABLE environment_repos DROP CONSTRAINT environment_repos_identity_check;
ALTER TABLE environment_repos ADD CONSTRAINT environment_repos_identity_check CHECK (
  (worktree_path IS NULL) = (worktree_branch IS NULL)
  AND (worktree_id IS NULL OR worktree_path IS NOT NULL)
  AND (worktree_id IS NOT NULL OR worktree_path IS NULL OR ssh_target_id IS NOT NULL)
);
