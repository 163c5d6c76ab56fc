-- Why an admin released or voided a held game, as they typed it (1 to 500
-- characters). Decisions made before reasons were asked have none.
ALTER TABLE integrity_reviews ADD COLUMN decision_reason text
    CHECK (decision_reason IS NULL OR char_length(decision_reason) BETWEEN 1 AND 500);
ALTER TABLE integrity_reviews ADD CONSTRAINT integrity_reviews_reason_once_decided
    CHECK (status <> 'held' OR decision_reason IS NULL);
