-- Arena games voided for integrity: their points are taken back, and the
-- void (who, why, the records before and after, the prizes it would
-- change) is kept as staff see it.
CREATE TABLE tournament_voids (
    game_id       uuid PRIMARY KEY REFERENCES games (id),
    tournament_id uuid NOT NULL REFERENCES tournaments (id),
    at            timestamptz NOT NULL,
    data          jsonb NOT NULL
);
CREATE INDEX tournament_voids_tournament_idx ON tournament_voids (tournament_id);
