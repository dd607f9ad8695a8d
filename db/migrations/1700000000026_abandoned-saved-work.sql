-- Up Migration
-- An abandon starts the workspace afresh: work an idle release saved and no launch had taken back
-- yet is not applied onto the new branch. It stays listed on its ref (apply by hand), `abandoned`.
ALTER TABLE saved_work DROP CONSTRAINT saved_work_restore_check;
ALTER TABLE saved_work ADD CONSTRAINT saved_work_restore_check CHECK (restore IN ('applied', 'conflict', 'abandoned'));

-- Down Migration
UPDATE saved_work SET restore = NULL WHERE restore = 'abandoned';
ALTER TABLE saved_work DROP CONSTRAINT saved_work_restore_check;
ALTER TABLE saved_work ADD CONSTRAINT saved_work_restore_check CHECK (restore IN ('applied', 'conflict'));
