-- A PATCH of the admin API is stored as what it sent, a JSON merge patch (RFC 7396) of the
-- fields it changes, applied over the policy file's element each time the policy is
-- composed, so that the file still governs the fields the PATCH left alone. A row with
-- patch false is a whole element, as every row written before this column was.
ALTER TABLE policy_edit ADD COLUMN patch BOOLEAN NOT NULL DEFAULT FALSE;
