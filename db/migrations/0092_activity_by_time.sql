-- The activity feed is listed newest first by the time of each entry
-- (ties by id), and an entry's id, drawn when it is stored, can be out of
-- step with its time: the feed's order and its cursor follow the time.
CREATE INDEX activity_by_time ON activity (created_at DESC, id DESC);
