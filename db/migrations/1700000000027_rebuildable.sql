-- Up Migration
-- A release saves ignored files too, but those a repository's patterns say are rebuilt (its
-- dependencies, its build output): NULL is the default list (domain/rebuildable.ts). What a save
-- left out, and why, is listed with it.
ALTER TABLE repositories ADD COLUMN rebuildable text[];
ALTER TABLE saved_work ADD COLUMN left_out jsonb NOT NULL DEFAULT '[]'::jsonb;

-- Down Migration
ALTER TABLE saved_work DROP COLUMN left_out;
ALTER TABLE repositories DROP COLUMN rebuildable;
