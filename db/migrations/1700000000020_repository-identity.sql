-- Up Migration
-- A registered repository's identity beyond its path: the root commit of its default branch when
-- it was registered. A `local` checkout at the registered path that does not hold that commit is
-- another repository (the folder replaced, re-initialised): launching there is refused
-- `repository_mismatch` [R1.2, R3.2]. Repositories registered before read null: their identity
-- was never recorded, and only the git-common-dir check applies to them.
ALTER TABLE repositories ADD COLUMN root_commit text;

-- Down Migration
ALTER TABLE repositories DROP COLUMN root_commit;
