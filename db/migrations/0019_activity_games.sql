-- A wallet history line that belongs to a game (a stake, winnings, a
-- stake or donation refund, a donation) links to it. Lines written before
-- this column named their game only in the counterparty text.
ALTER TABLE wallet_activity ADD COLUMN game_id uuid REFERENCES games (id);
UPDATE wallet_activity SET game_id = substr(counterparty, 6)::uuid
    WHERE counterparty ~ '^game [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
    AND EXISTS (SELECT 1 FROM games WHERE games.id::text = substr(counterparty, 6));
