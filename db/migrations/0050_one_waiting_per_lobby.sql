-- A lobby's queue holds at most one player: whoever joins while someone
-- waits is matched with them (or refused), never queued behind them. The
-- index says so, so that a join that waits is one statement outside any
-- transaction (an insert that conflicts when someone waits already), and
-- a join that raced it learns so from the index. It also serves the
-- queue's reads, which the index it replaces did.
--
-- Any second player waiting in a queue (none should) leaves it, the
-- longest waiting staying.
DELETE FROM user_presence AS p
WHERE p.kind = 'queue' AND EXISTS (SELECT 1 FROM user_presence AS q
    WHERE q.kind = 'queue' AND q.lobby_id = p.lobby_id AND q.queue_pos < p.queue_pos);
CREATE UNIQUE INDEX user_presence_waiting_idx ON user_presence (lobby_id) WHERE kind = 'queue';
DROP INDEX user_presence_queue_idx;
