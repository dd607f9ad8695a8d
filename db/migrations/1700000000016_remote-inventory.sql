-- An ssh environment's inventory rows name remote paths: each row says which SSH target it is on,
-- so a cleanup (and an operator) can tell a remote clone from a host worktree, also after the
-- environment moved to another executor and the row was retained.
ALTER TABLE environment_repos ADD COLUMN ssh_target_id uuid REFERENCES ssh_targets(id);

-- A row's identity was "worktree id, path and branch, all or none". A remote clone has no host
-- worktree id: its identity is its remote path and branch on its target. So: path and branch
-- together; a worktree id only with them; a path without a worktree id only on a target.
ALTER TABLE environment_repos DROP CONSTRAINT environment_repos_check;
ALTER TABLE environment_repos ADD CONSTRAINT environment_repos_identity_check CHECK (
  (worktree_path IS NULL) = (worktree_branch IS NULL)
  AND (worktree_id IS NULL OR worktree_path IS NOT NULL)
  AND (worktree_id IS NOT NULL OR worktree_path IS NULL OR ssh_target_id IS NOT NULL)
);
